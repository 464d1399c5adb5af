// Cross-entropy of logits (rows, classes) against i64 targets (rows), on the
// GPU: one warp per row, logsumexp accumulated in double and reduced in a fixed
// shuffle tree. Targets are validated by the op (ops/loss.cpp).
#include <cmath>
#include <cstdint>

#include "autograd/cuda/check.h"
#include "autograd/cuda/cuda_backend.h"
#include "autograd/cuda/launch.cuh"
#include "autograd/cuda/warp.cuh"

namespace relpos {
namespace {

// Called by a whole warp; every lane returns the row's logsumexp.
template <class T>
__device__ T row_logsumexp(const T* x, std::int64_t n) {
  if (n == 0) return T(0);
  T m = T(-INFINITY);
  for (std::int64_t j = cuda::lane_index(); j < n; j += cuda::kWarp) m = x[j] > m ? x[j] : m;
  m = cuda::warp_max(m);
  double s = 0.0;
  for (std::int64_t j = cuda::lane_index(); j < n; j += cuda::kWarp)
    s += static_cast<double>(::exp(x[j] - m));
  return m + static_cast<T>(::log(cuda::warp_sum(s)));
}

template <class T>
__global__ void cross_entropy_kernel(const T* logits, const std::int64_t* targets,
                                     std::int64_t ignore_index, T* loss, T* lse, std::int64_t rows,
                                     std::int64_t classes) {
  for (std::int64_t r = cuda::warp_row_index(); r < rows; r += cuda::warp_row_count()) {
    const T* row = logits + r * classes;  // (classes)
    const std::int64_t t = targets[r];
    const bool ignored = t == ignore_index;
    const T value = ignored ? T(0) : row_logsumexp(row, classes);
    if (cuda::lane_index() == 0) {
      lse[r] = value;
      loss[r] = ignored ? T(0) : value - row[t];
    }
  }
}

template <class T>
__global__ void cross_entropy_backward_kernel(const T* logits, const std::int64_t* targets,
                                              std::int64_t ignore_index, const T* lse,
                                              const T* grad_loss, T* grad_logits, std::int64_t rows,
                                              std::int64_t classes) {
  for (std::int64_t r = cuda::warp_row_index(); r < rows; r += cuda::warp_row_count()) {
    const T* row = logits + r * classes;  // (classes)
    T* out = grad_logits + r * classes;   // (classes)
    const std::int64_t t = targets[r];
    if (t == ignore_index) {
      for (std::int64_t j = cuda::lane_index(); j < classes; j += cuda::kWarp) out[j] = T(0);
      continue;
    }
    const T g = grad_loss[r];
    for (std::int64_t j = cuda::lane_index(); j < classes; j += cuda::kWarp) {
      const T p = g * ::exp(row[j] - lse[r]);
      out[j] = j == t ? p - g : p;
    }
  }
}

}  // namespace

void CudaBackend::cross_entropy(const Tensor& logits, const Tensor& targets,
                                std::int64_t ignore_index, const Tensor& loss, const Tensor& lse) {
  const std::int64_t rows = targets.numel();
  if (rows == 0) return;
  const std::int64_t classes = logits.numel() / rows;
  dispatch_floating(logits.dtype(), [&](auto zero) {
    using T = decltype(zero);
    cross_entropy_kernel<T><<<cuda::blocks_for_rows(rows), cuda::kThreads>>>(
        logits.data<T>(), targets.data<std::int64_t>(), ignore_index, loss.data<T>(), lse.data<T>(),
        rows, classes);
    RELPOS_CUDA_CHECK_LAUNCH("cross_entropy_kernel");
  });
}

void CudaBackend::cross_entropy_backward(const Tensor& logits, const Tensor& targets,
                                         std::int64_t ignore_index, const Tensor& lse,
                                         const Tensor& grad_loss, const Tensor& grad_logits) {
  const std::int64_t rows = targets.numel();
  if (rows == 0) return;
  const std::int64_t classes = logits.numel() / rows;
  dispatch_floating(logits.dtype(), [&](auto zero) {
    using T = decltype(zero);
    cross_entropy_backward_kernel<T><<<cuda::blocks_for_rows(rows), cuda::kThreads>>>(
        logits.data<T>(), targets.data<std::int64_t>(), ignore_index, lse.data<T>(),
        grad_loss.data<T>(), grad_logits.data<T>(), rows, classes);
    RELPOS_CUDA_CHECK_LAUNCH("cross_entropy_backward_kernel");
  });
}

}  // namespace relpos
