// Layer normalisation and RMS normalisation over the last axis of x viewed as
// (rows, n), on the GPU. Row statistics: one warp per row, accumulated in double
// and reduced in a fixed shuffle tree. grad_gamma / grad_beta: rows are cut into
// fixed chunks of kChunkRows; each chunk's column sums are taken in row order,
// then each column adds its chunk sums in chunk order. The order depends only on
// (rows, n), never on the launch, and no atomics are used.
#include <cmath>
#include <cstdint>

#include "autograd/cuda/check.h"
#include "autograd/cuda/cuda_backend.h"
#include "autograd/cuda/launch.cuh"
#include "autograd/cuda/warp.cuh"

namespace relpos {
namespace {

constexpr std::int64_t kChunkRows = 64;

template <class T>
__global__ void norm_kernel(const T* x, const T* gamma, const T* beta, double eps, bool rms,
                            std::int64_t rows, std::int64_t n, T* y, T* mean, T* rstd) {
  const double inv_n = 1.0 / static_cast<double>(n);
  for (std::int64_t r = cuda::warp_row_index(); r < rows; r += cuda::warp_row_count()) {
    const T* row = x + r * n;  // (n)
    double mu = 0.0;
    if (!rms) {
      for (std::int64_t j = cuda::lane_index(); j < n; j += cuda::kWarp)
        mu += static_cast<double>(row[j]);
      mu = cuda::warp_sum(mu) * inv_n;
    }
    double sq = 0.0;  // sum of (x - mu)^2, mu = 0 for rms
    for (std::int64_t j = cuda::lane_index(); j < n; j += cuda::kWarp) {
      const double d = static_cast<double>(row[j]) - mu;
      sq += d * d;
    }
    const double inv = 1.0 / ::sqrt(cuda::warp_sum(sq) * inv_n + eps);
    if (cuda::lane_index() == 0) {
      if (mean) mean[r] = static_cast<T>(mu);
      rstd[r] = static_cast<T>(inv);
    }
    const T m = static_cast<T>(mu), s = static_cast<T>(inv);
    T* out = y + r * n;  // (n)
    for (std::int64_t j = cuda::lane_index(); j < n; j += cuda::kWarp) {
      T v = (row[j] - m) * s;
      if (gamma) v *= gamma[j];
      if (beta) v += beta[j];
      out[j] = v;
    }
  }
}

// With xhat = (x - mean) * rstd and dxhat = dy * gamma,
//   layernorm: dx = rstd * (dxhat - mean(dxhat) - xhat * mean(dxhat * xhat))
//   rmsnorm:   dx = rstd * (dxhat - xhat * mean(dxhat * xhat))
template <class T>
__global__ void norm_grad_x_kernel(const T* x, const T* gamma, const T* mean, const T* rstd,
                                   const T* grad_y, bool rms, std::int64_t rows, std::int64_t n,
                                   T* grad_x) {
  const double inv_n = 1.0 / static_cast<double>(n);
  for (std::int64_t r = cuda::warp_row_index(); r < rows; r += cuda::warp_row_count()) {
    const T* row = x + r * n;      // (n)
    const T* gy = grad_y + r * n;  // (n)
    const T m = rms ? T(0) : mean[r], s = rstd[r];
    double sum_d = 0.0, sum_dx = 0.0;
    for (std::int64_t j = cuda::lane_index(); j < n; j += cuda::kWarp) {
      const T d = gamma ? gy[j] * gamma[j] : gy[j];
      sum_d += static_cast<double>(d);
      sum_dx += static_cast<double>(d) * static_cast<double>((row[j] - m) * s);
    }
    sum_d = cuda::warp_sum(sum_d);
    sum_dx = cuda::warp_sum(sum_dx);
    const T mean_d = rms ? T(0) : static_cast<T>(sum_d * inv_n);
    const T mean_dx = static_cast<T>(sum_dx * inv_n);
    T* out = grad_x + r * n;  // (n)
    for (std::int64_t j = cuda::lane_index(); j < n; j += cuda::kWarp) {
      const T d = gamma ? gy[j] * gamma[j] : gy[j];
      out[j] = s * (d - mean_d - (row[j] - m) * s * mean_dx);
    }
  }
}

// partial_gamma / partial_beta (chunks, n): chunk c's sums over its rows, in row
// order, of dy * xhat and dy. One thread per (chunk, column).
template <class T>
__global__ void norm_param_partials_kernel(const T* x, const T* mean, const T* rstd,
                                           const T* grad_y, bool rms, std::int64_t rows,
                                           std::int64_t n, std::int64_t chunks,
                                           double* partial_gamma, double* partial_beta) {
  for (std::int64_t e = cuda::thread_index(); e < chunks * n; e += cuda::thread_count()) {
    const std::int64_t c = e / n, j = e % n;
    const std::int64_t r0 = c * kChunkRows, r1 = r0 + kChunkRows < rows ? r0 + kChunkRows : rows;
    double acc_g = 0.0, acc_b = 0.0;
    for (std::int64_t r = r0; r < r1; ++r) {
      const T m = rms ? T(0) : mean[r], s = rstd[r];
      const T dy = grad_y[r * n + j];
      acc_g += static_cast<double>(dy) * static_cast<double>((x[r * n + j] - m) * s);
      acc_b += static_cast<double>(dy);
    }
    partial_gamma[e] = acc_g;
    partial_beta[e] = acc_b;
  }
}

// grad_gamma[j] / grad_beta[j] = the chunk sums of column j added in chunk order.
template <class T>
__global__ void norm_param_totals_kernel(const double* partial_gamma, const double* partial_beta,
                                         std::int64_t chunks, std::int64_t n, T* grad_gamma,
                                         T* grad_beta) {
  for (std::int64_t j = cuda::thread_index(); j < n; j += cuda::thread_count()) {
    double acc_g = 0.0, acc_b = 0.0;
    for (std::int64_t c = 0; c < chunks; ++c) {
      acc_g += partial_gamma[c * n + j];
      acc_b += partial_beta[c * n + j];
    }
    if (grad_gamma) grad_gamma[j] = static_cast<T>(acc_g);
    if (grad_beta) grad_beta[j] = static_cast<T>(acc_b);
  }
}

template <class T>
T* data_or_null(const Tensor& t) {
  return t.defined() ? t.data<T>() : nullptr;
}

}  // namespace

void CudaBackend::norm(const Tensor& x, const Tensor& gamma, const Tensor& beta, double eps,
                       bool rms, std::int64_t rows, std::int64_t n, const Tensor& y,
                       const Tensor& mean, const Tensor& rstd) {
  if (rows == 0) return;
  dispatch_floating(x.dtype(), [&](auto zero) {
    using T = decltype(zero);
    norm_kernel<T><<<cuda::blocks_for_rows(rows), cuda::kThreads>>>(
        x.data<T>(), data_or_null<T>(gamma), data_or_null<T>(beta), eps, rms, rows, n, y.data<T>(),
        data_or_null<T>(mean), rstd.data<T>());
    RELPOS_CUDA_CHECK_LAUNCH("norm_kernel");
  });
}

void CudaBackend::norm_backward(const Tensor& x, const Tensor& gamma, const Tensor& mean,
                                const Tensor& rstd, const Tensor& grad_y, bool rms,
                                std::int64_t rows, std::int64_t n, const Tensor& grad_x,
                                const Tensor& grad_gamma, const Tensor& grad_beta) {
  if (rows == 0) return;
  dispatch_floating(x.dtype(), [&](auto zero) {
    using T = decltype(zero);
    const T* pmean = rms ? nullptr : mean.data<T>();  // (rows)
    if (grad_x.defined()) {
      norm_grad_x_kernel<T><<<cuda::blocks_for_rows(rows), cuda::kThreads>>>(
          x.data<T>(), data_or_null<T>(gamma), pmean, rstd.data<T>(), grad_y.data<T>(), rms, rows,
          n, grad_x.data<T>());
      RELPOS_CUDA_CHECK_LAUNCH("norm_grad_x_kernel");
    }
    if (!grad_gamma.defined() && !grad_beta.defined()) return;
    const std::int64_t chunks = (rows + kChunkRows - 1) / kChunkRows;
    Tensor partials = Tensor::empty({2, chunks, n}, DType::f64, Device::cuda);  // (2, chunks, n)
    double* partial_gamma = partials.data<double>();
    double* partial_beta = partial_gamma + chunks * n;
    norm_param_partials_kernel<T><<<cuda::blocks_for(chunks * n), cuda::kThreads>>>(
        x.data<T>(), pmean, rstd.data<T>(), grad_y.data<T>(), rms, rows, n, chunks, partial_gamma,
        partial_beta);
    RELPOS_CUDA_CHECK_LAUNCH("norm_param_partials_kernel");
    norm_param_totals_kernel<T><<<cuda::blocks_for(n), cuda::kThreads>>>(
        partial_gamma, partial_beta, chunks, n, data_or_null<T>(grad_gamma),
        data_or_null<T>(grad_beta));
    RELPOS_CUDA_CHECK_LAUNCH("norm_param_totals_kernel");
  });
}

}  // namespace relpos
