// Reductions over the middle axis of (outer, n, inner) on the GPU, in a fixed
// order with no atomics. inner == 1: one warp per output, lanes stride the row,
// then a fixed shuffle tree. inner > 1: the columns are summed in chunks of
// kChunkRows rows, one thread per (outer, chunk, column) adding its rows in
// order, then one thread per output adding the chunk sums in order; max walks n
// in index order with one thread per output, as the CPU does.
#include <cmath>
#include <cstdint>

#include "autograd/cuda/check.h"
#include "autograd/cuda/cuda_backend.h"
#include "autograd/cuda/launch.cuh"
#include "autograd/cuda/warp.cuh"

namespace relpos {
namespace {

template <class T>
__global__ void sum_rows_kernel(const T* x, T* out, std::int64_t rows, std::int64_t n) {
  for (std::int64_t r = cuda::warp_row_index(); r < rows; r += cuda::warp_row_count()) {
    const T* row = x + r * n;  // (n)
    T acc = T(0);
    for (std::int64_t j = cuda::lane_index(); j < n; j += cuda::kWarp) acc += row[j];
    acc = cuda::warp_sum(acc);
    if (cuda::lane_index() == 0) out[r] = acc;
  }
}

constexpr std::int64_t kChunkRows = 64;

// out (outer, chunks, inner)[o, c, i] = the sum of x (outer, n, inner)[o, r, i]
// over the rows r of chunk c, [c * chunk_rows, min(n, (c + 1) * chunk_rows)), in
// row order.
template <class T>
__global__ void sum_column_chunks_kernel(const T* x, T* out, std::int64_t outer, std::int64_t n,
                                         std::int64_t inner, std::int64_t chunks,
                                         std::int64_t chunk_rows) {
  for (std::int64_t e = cuda::thread_index(); e < outer * chunks * inner;
       e += cuda::thread_count()) {
    const std::int64_t i = e % inner, c = (e / inner) % chunks, o = e / (inner * chunks);
    const std::int64_t first = c * chunk_rows;
    const std::int64_t last = first + chunk_rows < n ? first + chunk_rows : n;
    const T* src = x + o * n * inner + i;  // (n) with stride inner
    T acc = T(0);
    for (std::int64_t r = first; r < last; ++r) acc += src[r * inner];
    out[e] = acc;
  }
}

// The CPU's rule: the first NaN wins; otherwise the first index of the largest
// value. Lanes keep their best candidate (value, index), index n meaning none
// yet; the tree keeps NaN over numbers, then the larger value, then the smaller
// index. A row of -inf only finds nothing above -inf and reports element 0.
template <class T>
__device__ bool better_max(T value, std::int64_t index, T best, std::int64_t best_index) {
  const bool nan = value != value, best_nan = best != best;
  if (nan || best_nan) return nan && (!best_nan || index < best_index);
  return value > best || (value == best && index < best_index);
}

template <class T>
__global__ void max_rows_kernel(const T* x, T* out, std::int64_t* argmax, std::int64_t rows,
                                std::int64_t n) {
  for (std::int64_t r = cuda::warp_row_index(); r < rows; r += cuda::warp_row_count()) {
    const T* row = x + r * n;  // (n)
    T best = T(-INFINITY);
    std::int64_t where = n;
    for (std::int64_t j = cuda::lane_index(); j < n; j += cuda::kWarp) {
      if (better_max(row[j], j, best, where)) {
        best = row[j];
        where = j;
      }
    }
    for (int delta = cuda::kWarp / 2; delta > 0; delta /= 2) {
      const T other = __shfl_xor_sync(cuda::kFullMask, best, delta);
      const std::int64_t other_where = __shfl_xor_sync(cuda::kFullMask, where, delta);
      if (better_max(other, other_where, best, where)) {
        best = other;
        where = other_where;
      }
    }
    if (cuda::lane_index() == 0) {
      out[r] = where == n ? row[0] : best;
      argmax[r] = where == n ? 0 : where;
    }
  }
}

template <class T>
__global__ void max_columns_kernel(const T* x, T* out, std::int64_t* argmax, std::int64_t outer,
                                   std::int64_t n, std::int64_t inner) {
  for (std::int64_t e = cuda::thread_index(); e < outer * inner; e += cuda::thread_count()) {
    const std::int64_t o = e / inner, i = e % inner;
    const T* src = x + o * n * inner + i;  // (n) with stride inner
    T best = src[0];
    std::int64_t where = 0;
    for (std::int64_t r = 1; r < n && best == best; ++r) {  // NaN wins, as on the CPU
      if (src[r * inner] > best || src[r * inner] != src[r * inner]) {
        best = src[r * inner];
        where = r;
      }
    }
    out[e] = best;
    argmax[e] = where;
  }
}

// One thread per element of grad_x (outer, n, inner): every element is written.
template <class T>
__global__ void max_backward_kernel(const T* grad_out, const std::int64_t* argmax, T* grad_x,
                                    std::int64_t n, std::int64_t inner, std::int64_t total) {
  for (std::int64_t e = cuda::thread_index(); e < total; e += cuda::thread_count()) {
    const std::int64_t i = e % inner, r = (e / inner) % n, o = e / (inner * n);
    const std::int64_t source = o * inner + i;
    grad_x[e] = argmax[source] == r ? grad_out[source] : T(0);
  }
}

}  // namespace

void CudaBackend::sum_axis(const Tensor& x, std::int64_t outer, std::int64_t n, std::int64_t inner,
                           const Tensor& out) {
  if (outer * inner == 0) return;
  dispatch_floating(x.dtype(), [&](auto zero) {
    using T = decltype(zero);
    if (inner == 1) {
      sum_rows_kernel<T>
          <<<cuda::blocks_for_rows(outer), cuda::kThreads>>>(x.data<T>(), out.data<T>(), outer, n);
      RELPOS_CUDA_CHECK_LAUNCH("sum_rows_kernel");
    } else {
      // Chunk sums, then, when there is more than one chunk, the sum of the chunks.
      const std::int64_t chunks = n <= kChunkRows ? 1 : (n + kChunkRows - 1) / kChunkRows;
      const Tensor partial =
          chunks == 1 ? out : Tensor::empty({outer, chunks, inner}, x.dtype(), Device::cuda);
      sum_column_chunks_kernel<T><<<cuda::blocks_for(outer * chunks * inner), cuda::kThreads>>>(
          x.data<T>(), partial.data<T>(), outer, n, inner, chunks, kChunkRows);
      RELPOS_CUDA_CHECK_LAUNCH("sum_column_chunks_kernel");
      if (chunks == 1) return;
      sum_column_chunks_kernel<T><<<cuda::blocks_for(outer * inner), cuda::kThreads>>>(
          partial.data<T>(), out.data<T>(), outer, chunks, inner, 1, chunks);
      RELPOS_CUDA_CHECK_LAUNCH("sum_column_chunks_kernel");
    }
  });
}

void CudaBackend::max_axis(const Tensor& x, std::int64_t outer, std::int64_t n, std::int64_t inner,
                           const Tensor& out, const Tensor& argmax) {
  if (outer * inner == 0) return;
  dispatch_floating(x.dtype(), [&](auto zero) {
    using T = decltype(zero);
    if (inner == 1) {
      max_rows_kernel<T><<<cuda::blocks_for_rows(outer), cuda::kThreads>>>(
          x.data<T>(), out.data<T>(), argmax.data<std::int64_t>(), outer, n);
      RELPOS_CUDA_CHECK_LAUNCH("max_rows_kernel");
    } else {
      max_columns_kernel<T><<<cuda::blocks_for(outer * inner), cuda::kThreads>>>(
          x.data<T>(), out.data<T>(), argmax.data<std::int64_t>(), outer, n, inner);
      RELPOS_CUDA_CHECK_LAUNCH("max_columns_kernel");
    }
  });
}

void CudaBackend::max_axis_backward(const Tensor& grad_out, const Tensor& argmax,
                                    std::int64_t outer, std::int64_t n, std::int64_t inner,
                                    const Tensor& grad_x) {
  const std::int64_t total = outer * n * inner;
  if (total == 0) return;
  dispatch_floating(grad_x.dtype(), [&](auto zero) {
    using T = decltype(zero);
    max_backward_kernel<T><<<cuda::blocks_for(total), cuda::kThreads>>>(
        grad_out.data<T>(), argmax.data<std::int64_t>(), grad_x.data<T>(), n, inner, total);
    RELPOS_CUDA_CHECK_LAUNCH("max_backward_kernel");
  });
}

}  // namespace relpos
