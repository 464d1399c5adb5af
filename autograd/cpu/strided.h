#pragma once
// Iteration over strided views on the CPU. The output is contiguous; inputs are
// arbitrary strided views of the output's shape. Rows (all axes but the last)
// are split across OpenMP threads; the last axis is the inner loop.
#include <array>
#include <cstdint>
#include <vector>

#include "autograd/cpu/parallel.h"
#include "autograd/tensor.h"

namespace relpos::cpu {

// Offset (in elements, relative to the view's first element) of the first
// element of each row of `view`, for rows of the given shape in row-major order.
inline std::int64_t row_offset(const Shape& shape, const Shape& strides, std::int64_t row) {
  std::int64_t offset = 0;
  for (std::size_t axis = shape.size() - 1; axis-- > 0;) {
    const std::int64_t idx = row % shape[axis];
    row /= shape[axis];
    offset += idx * strides[axis];
  }
  return offset;
}

// shape and each operand's strides with the axes of size 1 left out and adjacent axes merged
// wherever every operand steps over them as over one axis (stride[a] == stride[a + 1] *
// shape[a + 1]): the same elements in the same order, in rows as long as the layouts allow
// (e.g. a (B, L, H, D) sum with an (H, D) bias broadcast over B and L: rows of H·D, not D).
template <std::size_t N>
struct MergedAxes {
  Shape shape;
  std::array<Shape, N> strides;
};

template <std::size_t N>
MergedAxes<N> merge_axes(const Shape& shape, const std::array<const Shape*, N>& strides) {
  MergedAxes<N> m;
  for (std::size_t a = 0; a < shape.size(); ++a) {
    if (shape[a] == 1) continue;
    bool merge = !m.shape.empty();
    for (std::size_t k = 0; k < N && merge; ++k)
      merge = m.strides[k].back() == (*strides[k])[a] * shape[a];
    if (merge) {
      m.shape.back() *= shape[a];
      for (std::size_t k = 0; k < N; ++k) m.strides[k].back() = (*strides[k])[a];
    } else {
      m.shape.push_back(shape[a]);
      for (std::size_t k = 0; k < N; ++k) m.strides[k].push_back((*strides[k])[a]);
    }
  }
  if (m.shape.empty()) {  // every axis of size 1: one element
    m.shape.push_back(1);
    for (std::size_t k = 0; k < N; ++k) m.strides[k].push_back(1);
  }
  return m;
}

// Calls body(row, inner_length, offsets...) for every row, where offsets are
// each operand's element offset of that row and the last axis has each operand's
// stride; rows are those of the merged axes (merge_axes). Rank-0 tensors are treated
// as one row of one element.
template <std::size_t N, class Body>
void for_each_row(const Shape& shape, const std::array<const Shape*, N>& strides, Body&& body) {
  if (shape.empty()) {
    std::array<std::int64_t, N> offsets{};
    std::array<std::int64_t, N> inner{};
    body(std::int64_t{0}, std::int64_t{1}, offsets, inner);
    return;
  }
  const MergedAxes<N> m = merge_axes(shape, strides);
  const std::int64_t inner_len = m.shape.back();
  const std::int64_t rows = inner_len == 0 ? 0 : numel_of(m.shape) / inner_len;
  std::array<std::int64_t, N> inner_strides{};
  for (std::size_t k = 0; k < N; ++k) inner_strides[k] = m.strides[k].back();
  parallel_for(rows, rows * inner_len > 32768, [&](std::int64_t row) {
    std::array<std::int64_t, N> offsets{};
    for (std::size_t k = 0; k < N; ++k) offsets[k] = row_offset(m.shape, m.strides[k], row);
    body(row, inner_len, offsets, inner_strides);
  });
}

}  // namespace relpos::cpu
