#pragma once
// Element offsets of N strided views of one shape, for elementwise kernels.
// On the host, axes of size 1 are dropped and neighbouring axes that every
// operand walks contiguously are merged, so a contiguous tensor becomes one
// axis; the kernel then maps a row-major linear index to N element offsets.
#include <array>
#include <cstdint>
#include <string>

#include "autograd/error.h"
#include "autograd/tensor.h"

namespace relpos::cuda {

constexpr int kMaxAxes = 8;

template <int N>
struct StridedIndexer {
  int axes = 0;  // merged axes, innermost first
  std::int64_t sizes[kMaxAxes] = {};
  std::int64_t strides[N][kMaxAxes] = {};

#ifdef __CUDACC__
  __device__ void offsets(std::int64_t linear, std::int64_t (&offset)[N]) const {
    for (int k = 0; k < N; ++k) offset[k] = 0;
    for (int axis = 0; axis < axes; ++axis) {
      const std::int64_t index = linear % sizes[axis];
      linear /= sizes[axis];
      for (int k = 0; k < N; ++k) offset[k] += index * strides[k][axis];
    }
  }
#endif
};

// `strides` holds each operand's strides over `shape` (the same rank).
template <int N>
StridedIndexer<N> make_indexer(const Shape& shape, const std::array<const Shape*, N>& strides) {
  StridedIndexer<N> indexer;
  for (std::size_t axis = shape.size(); axis-- > 0;) {
    if (shape[axis] == 1) continue;
    const int last = indexer.axes - 1;
    bool mergeable = last >= 0;
    for (int k = 0; k < N && mergeable; ++k)
      mergeable = (*strides[k])[axis] == indexer.strides[k][last] * indexer.sizes[last];
    if (mergeable) {
      indexer.sizes[last] *= shape[axis];
      continue;
    }
    require(indexer.axes < kMaxAxes,
            "CUDA elementwise kernel: shape {} needs more than {} strided axes", to_string(shape),
            kMaxAxes);
    indexer.sizes[indexer.axes] = shape[axis];
    for (int k = 0; k < N; ++k) indexer.strides[k][indexer.axes] = (*strides[k])[axis];
    ++indexer.axes;
  }
  return indexer;
}

}  // namespace relpos::cuda
