// Relative-position gathers, their adjoints and the bucket gather on the GPU.
// Every output element is computed by one thread that adds its terms in the
// same order as the CPU (autograd/cpu/relative.cpp), with the same accumulator
// type, so the adjoints are deterministic and match the CPU bit for bit.
#include <cstdint>

#include "autograd/cuda/check.h"
#include "autograd/cuda/cuda_backend.h"
#include "autograd/cuda/launch.cuh"
#include "autograd/kernel_math/relative_geometry.h"

namespace relpos {
namespace {

// out (rows, Lk) from src: (H, Lq+Lk-1) for distance, (rows, 2k+1) for clipped,
// (rows, Lk) for shifted.
template <class T>
__global__ void gather_kernel(RelativeGather kind, const T* src, T* out, RelativeShape s) {
  const std::int64_t lq = s.q_len, lk = s.k_len, k = s.clip;
  const std::int64_t n_dist = lq + lk - 1, width = 2 * k + 1;
  for (std::int64_t e = cuda::thread_index(); e < s.rows * lk; e += cuda::thread_count()) {
    const std::int64_t r = e / lk, j = e % lk;
    const kernel_math::RelativeRow row = kernel_math::relative_row(r, lq, lk, 1, false);
    const std::int64_t offset = row.offset;
    switch (kind) {
      case RelativeGather::distance:
        out[e] = src[(r / lq) * n_dist + offset + j];
        break;
      case RelativeGather::clipped:
        out[e] = src[r * width + kernel_math::clipped_bin(j, row.qpos, k)];
        break;
      default:
        out[e] = j < lk - offset ? src[r * lk + offset + j] : T(0);
        break;
    }
  }
}

// grad_src (H, Lq+Lk-1)[h, n] = sum over queries i (in order, in double) of
// grad_out[h*Lq + i, n - offset(i)] where that key exists.
template <class T>
__global__ void scatter_distance_kernel(const T* grad, T* out, RelativeShape s) {
  const std::int64_t lq = s.q_len, lk = s.k_len, n_dist = lq + lk - 1, heads = s.rows / lq;
  for (std::int64_t e = cuda::thread_index(); e < heads * n_dist; e += cuda::thread_count()) {
    const std::int64_t h = e / n_dist, n = e % n_dist;
    double acc = 0.0;
    for (std::int64_t i = 0; i < lq; ++i) {
      const std::int64_t j = n - kernel_math::distance_offset(i, lq);
      if (j >= 0 && j < lk) acc += grad[(h * lq + i) * lk + j];
    }
    out[e] = static_cast<T>(acc);
  }
}

// grad_src (rows, 2k+1)[r, c] = sum of grad_out[r, j] over the keys j of bin c, in order.
template <class T>
__global__ void scatter_clipped_kernel(const T* grad, T* out, RelativeShape s) {
  const std::int64_t lq = s.q_len, lk = s.k_len, k = s.clip, width = 2 * k + 1;
  for (std::int64_t e = cuda::thread_index(); e < s.rows * width; e += cuda::thread_count()) {
    const std::int64_t r = e / width, c = e % width;
    const kernel_math::KeyRange keys =
        kernel_math::keys_of_bin(c, kernel_math::query_position(r % lq, lq, lk), k, lk);
    T acc = T(0);
    for (std::int64_t j = keys.first; j <= keys.last; ++j) acc += grad[r * lk + j];
    out[e] = acc;
  }
}

// grad_src (rows, Lk)[r, c] = grad_out[r, c - offset], 0 for c < offset.
template <class T>
__global__ void scatter_shifted_kernel(const T* grad, T* out, RelativeShape s) {
  const std::int64_t lq = s.q_len, lk = s.k_len;
  for (std::int64_t e = cuda::thread_index(); e < s.rows * lk; e += cuda::thread_count()) {
    const std::int64_t r = e / lk, c = e % lk;
    const std::int64_t offset = kernel_math::distance_offset(r % lq, lq);
    out[e] = c < offset ? T(0) : grad[r * lk + c - offset];
  }
}

// out (H, n)[h, d] = table (buckets, H)[buckets[d], h].
template <class T>
__global__ void bucket_gather_kernel(const T* table, const std::int64_t* buckets, T* out,
                                     std::int64_t heads, std::int64_t n) {
  for (std::int64_t e = cuda::thread_index(); e < heads * n; e += cuda::thread_count()) {
    const std::int64_t h = e / n, d = e % n;
    out[e] = table[buckets[d] * heads + h];
  }
}

// grad_table (buckets, H)[b, h] = sum over d with buckets[d] == b, in increasing
// d and in double, of grad_out (H, n)[h, d]. Each thread scans all n distances.
template <class T>
__global__ void bucket_gather_backward_kernel(const T* grad, const std::int64_t* buckets, T* out,
                                              std::int64_t n_buckets, std::int64_t heads,
                                              std::int64_t n) {
  for (std::int64_t e = cuda::thread_index(); e < n_buckets * heads; e += cuda::thread_count()) {
    const std::int64_t b = e / heads, h = e % heads;
    double acc = 0.0;
    for (std::int64_t d = 0; d < n; ++d)
      if (buckets[d] == b) acc += grad[h * n + d];
    out[e] = static_cast<T>(acc);
  }
}

}  // namespace

void CudaBackend::relative_gather(RelativeGather kind, const Tensor& src, const Tensor& out,
                                  const RelativeShape& shape) {
  const std::int64_t total = shape.rows * shape.k_len;
  if (total == 0) return;
  dispatch_floating(out.dtype(), [&](auto zero) {
    using T = decltype(zero);
    gather_kernel<T>
        <<<cuda::blocks_for(total), cuda::kThreads>>>(kind, src.data<T>(), out.data<T>(), shape);
    RELPOS_CUDA_CHECK_LAUNCH("gather_kernel");
  });
}

void CudaBackend::relative_scatter(RelativeGather kind, const Tensor& grad_out,
                                   const Tensor& grad_src, const RelativeShape& shape) {
  const std::int64_t total = grad_src.numel();
  if (total == 0 || shape.q_len == 0) return;
  dispatch_floating(grad_src.dtype(), [&](auto zero) {
    using T = decltype(zero);
    const T* grad = grad_out.data<T>();
    T* out = grad_src.data<T>();
    switch (kind) {
      case RelativeGather::distance:
        scatter_distance_kernel<T><<<cuda::blocks_for(total), cuda::kThreads>>>(grad, out, shape);
        RELPOS_CUDA_CHECK_LAUNCH("scatter_distance_kernel");
        break;
      case RelativeGather::clipped:
        scatter_clipped_kernel<T><<<cuda::blocks_for(total), cuda::kThreads>>>(grad, out, shape);
        RELPOS_CUDA_CHECK_LAUNCH("scatter_clipped_kernel");
        break;
      default:
        scatter_shifted_kernel<T><<<cuda::blocks_for(total), cuda::kThreads>>>(grad, out, shape);
        RELPOS_CUDA_CHECK_LAUNCH("scatter_shifted_kernel");
        break;
    }
  });
}

void CudaBackend::bucket_gather(const Tensor& table, const Tensor& buckets, const Tensor& out) {
  const std::int64_t heads = table.size(1), n = buckets.numel();
  if (heads * n == 0) return;
  dispatch_floating(out.dtype(), [&](auto zero) {
    using T = decltype(zero);
    bucket_gather_kernel<T><<<cuda::blocks_for(heads * n), cuda::kThreads>>>(
        table.data<T>(), buckets.data<std::int64_t>(), out.data<T>(), heads, n);
    RELPOS_CUDA_CHECK_LAUNCH("bucket_gather_kernel");
  });
}

void CudaBackend::bucket_gather_backward(const Tensor& grad_out, const Tensor& buckets,
                                         const Tensor& grad_table) {
  const std::int64_t n_buckets = grad_table.size(0), heads = grad_table.size(1);
  if (n_buckets * heads == 0) return;
  dispatch_floating(grad_table.dtype(), [&](auto zero) {
    using T = decltype(zero);
    bucket_gather_backward_kernel<T><<<cuda::blocks_for(n_buckets * heads), cuda::kThreads>>>(
        grad_out.data<T>(), buckets.data<std::int64_t>(), grad_table.data<T>(), n_buckets, heads,
        buckets.numel());
    RELPOS_CUDA_CHECK_LAUNCH("bucket_gather_backward_kernel");
  });
}

}  // namespace relpos
