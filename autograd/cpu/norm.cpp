// Layer normalisation and RMS normalisation over the last axis of x viewed as
// (rows, n), on the CPU, alone or fused with the residual add before it (h = x + delta is
// written and normalised in the same pass over the row; the backward adds the residual
// stream's other gradient in the pass that writes grad_x). Row statistics are accumulated in
// double, one thread per row, as SIMD reductions: partial sums per vector lane in a fixed order
// (one chain of dependent adds made the (8192, 256) forward 3.3x slower).
// grad_gamma / grad_beta are reduced over rows by column blocks: each column is
// summed by a single thread in row order, so the result does not depend on the
// number of threads.
#include <algorithm>
#include <cmath>
#include <type_traits>
#include <vector>

#include "autograd/cpu/bf16_round.h"
#include "autograd/cpu/cpu_backend.h"
#include "autograd/cpu/parallel.h"

namespace relpos {
namespace {

constexpr std::int64_t kColumnBlock = 64;

// delta, h: undefined for a plain norm of x; else h = x + delta is written and normalised.
// y16: null, or (rows, n) that receives y rounded to bf16 (f32 only), row by row as a product
// rounds its operand.
template <class T>
void norm_forward_typed(const Tensor& x, const Tensor& delta, const Tensor& h, const Tensor& gamma,
                        const Tensor& beta, double eps, bool rms, std::int64_t rows, std::int64_t n,
                        const Tensor& y, const Tensor& mean, const Tensor& rstd,
                        std::uint16_t* y16) {
  const T* px = x.data<T>();                                      // (rows, n)
  const T* pdelta = delta.defined() ? delta.data<T>() : nullptr;  // (rows, n) or none
  T* ph = h.defined() ? h.data<T>() : nullptr;                    // (rows, n) or none
  const T* pgamma = gamma.defined() ? gamma.data<T>() : nullptr;  // (n) or none
  const T* pbeta = beta.defined() ? beta.data<T>() : nullptr;     // (n) or none
  T* py = y.data<T>();                                            // (rows, n)
  T* pmean = mean.defined() ? mean.data<T>() : nullptr;           // (rows)
  T* prstd = rstd.data<T>();                                      // (rows)
  const double inv_n = 1.0 / static_cast<double>(n);
  cpu::parallel_for(rows, rows * n > 32768, [&](std::int64_t r) {
    const T* row = px + r * n;
    if (pdelta) {  // the residual add: h's row, then normalise it
      T* sum = ph + r * n;
      const T* d = pdelta + r * n;
      for (std::int64_t j = 0; j < n; ++j) sum[j] = row[j] + d[j];
      row = sum;
    }
    double mu = 0.0;
    if (!rms) {
#pragma omp simd reduction(+ : mu)
      for (std::int64_t j = 0; j < n; ++j) mu += static_cast<double>(row[j]);
      mu *= inv_n;
    }
    double sq = 0.0;  // sum of (x - mu)^2, mu = 0 for rms
#pragma omp simd reduction(+ : sq)
    for (std::int64_t j = 0; j < n; ++j) {
      const double d = static_cast<double>(row[j]) - mu;
      sq += d * d;
    }
    const double inv = 1.0 / std::sqrt(sq * inv_n + eps);
    if (pmean) pmean[r] = static_cast<T>(mu);
    prstd[r] = static_cast<T>(inv);
    const T m = static_cast<T>(mu), s = static_cast<T>(inv);
    T* out = py + r * n;
    for (std::int64_t j = 0; j < n; ++j) {
      T v = (row[j] - m) * s;
      if (pgamma) v *= pgamma[j];
      if (pbeta) v += pbeta[j];
      out[j] = v;
    }
    if constexpr (std::is_same_v<T, float>)
      if (y16) cpu::round_row_to_bf16(out, n, y16 + r * n);
  });
}

// grad_residual: undefined, or (rows, n) added to grad_x (grad_residual + the norm's part).
// dx16: null, or (rows, n) that receives grad_x rounded to bf16 (f32 only), row by row as a
// product rounds its operand.
template <class T>
void norm_backward_typed(const Tensor& x, const Tensor& gamma, const Tensor& mean,
                         const Tensor& rstd, const Tensor& grad_y, const Tensor& grad_residual,
                         bool rms, std::int64_t rows, std::int64_t n, const Tensor& grad_x,
                         const Tensor& grad_gamma, const Tensor& grad_beta, std::uint16_t* dx16) {
  const T* px = x.data<T>();                                      // (rows, n)
  const T* pgamma = gamma.defined() ? gamma.data<T>() : nullptr;  // (n) or none
  const T* pmean = rms ? nullptr : mean.data<T>();                // (rows)
  const T* prstd = rstd.data<T>();                                // (rows)
  const T* pgy = grad_y.data<T>();                                // (rows, n)
  const double inv_n = 1.0 / static_cast<double>(n);

  // grad_x: with xhat = (x - mean) * rstd and dxhat = dy * gamma,
  //   layernorm: dx = rstd * (dxhat - mean(dxhat) - xhat * mean(dxhat * xhat))
  //   rmsnorm:   dx = rstd * (dxhat - xhat * mean(dxhat * xhat))
  if (grad_x.defined()) {
    T* pdx = grad_x.data<T>();                                                    // (rows, n)
    const T* pres = grad_residual.defined() ? grad_residual.data<T>() : nullptr;  // (rows, n)
    cpu::parallel_for(rows, rows * n > 32768, [&](std::int64_t r) {
      const T* row = px + r * n;
      const T* gy = pgy + r * n;
      const T m = pmean ? pmean[r] : T(0), s = prstd[r];
      double sum_d = 0.0, sum_dx = 0.0;
#pragma omp simd reduction(+ : sum_d, sum_dx)
      for (std::int64_t j = 0; j < n; ++j) {
        const T d = pgamma ? gy[j] * pgamma[j] : gy[j];
        sum_d += static_cast<double>(d);
        sum_dx += static_cast<double>(d) * static_cast<double>((row[j] - m) * s);
      }
      const T mean_d = rms ? T(0) : static_cast<T>(sum_d * inv_n);
      const T mean_dx = static_cast<T>(sum_dx * inv_n);
      T* out = pdx + r * n;
      for (std::int64_t j = 0; j < n; ++j) {
        const T d = pgamma ? gy[j] * pgamma[j] : gy[j];
        out[j] = s * (d - mean_d - (row[j] - m) * s * mean_dx);
      }
      // The residual's gradient, added to the row while it is in cache. A loop of its own:
      // in the loop above the compiler may contract this add with the product into an FMA,
      // whose rounding the composed ops (norm, then the tape's add) do not have.
      if (pres) {
        const T* res = pres + r * n;
        for (std::int64_t j = 0; j < n; ++j) out[j] = res[j] + out[j];
      }
      if constexpr (std::is_same_v<T, float>)
        if (dx16) cpu::round_row_to_bf16(out, n, dx16 + r * n);
    });
  }

  // grad_gamma[j] = sum_r dy[r, j] * xhat[r, j]; grad_beta[j] = sum_r dy[r, j].
  T* pgg = grad_gamma.defined() ? grad_gamma.data<T>() : nullptr;  // (n)
  T* pgb = grad_beta.defined() ? grad_beta.data<T>() : nullptr;    // (n)
  if (!pgg && !pgb) return;
  const std::int64_t blocks = (n + kColumnBlock - 1) / kColumnBlock;
  cpu::parallel_for(blocks, rows * n > 32768, [&](std::int64_t b) {
    const std::int64_t j0 = b * kColumnBlock, j1 = std::min(n, j0 + kColumnBlock);
    double acc_g[kColumnBlock] = {}, acc_b[kColumnBlock] = {};
    for (std::int64_t r = 0; r < rows; ++r) {
      const T* row = px + r * n;
      const T* gy = pgy + r * n;
      const T m = pmean ? pmean[r] : T(0), s = prstd[r];
      for (std::int64_t j = j0; j < j1; ++j) {
        acc_g[j - j0] += static_cast<double>(gy[j]) * static_cast<double>((row[j] - m) * s);
        acc_b[j - j0] += static_cast<double>(gy[j]);
      }
    }
    for (std::int64_t j = j0; j < j1; ++j) {
      if (pgg) pgg[j] = static_cast<T>(acc_g[j - j0]);
      if (pgb) pgb[j] = static_cast<T>(acc_b[j - j0]);
    }
  });
}

}  // namespace

void CpuBackend::norm(const Tensor& x, const Tensor& gamma, const Tensor& beta, double eps,
                      bool rms, std::int64_t rows, std::int64_t n, const Tensor& y,
                      const Tensor& mean, const Tensor& rstd) {
  dispatch_floating(x.dtype(), [&](auto zero) {
    norm_forward_typed<decltype(zero)>(x, Tensor(), Tensor(), gamma, beta, eps, rms, rows, n, y,
                                       mean, rstd, nullptr);
  });
}

void CpuBackend::add_norm(const Tensor& x, const Tensor& delta, const Tensor& gamma,
                          const Tensor& beta, double eps, bool rms, std::int64_t rows,
                          std::int64_t n, const Tensor& h, const Tensor& y, const Tensor& mean,
                          const Tensor& rstd, std::uint16_t* y_bf16) {
  if (y_bf16 != nullptr && x.dtype() != DType::f32) {  // bf16 copies are of f32 values only
    Backend::add_norm(x, delta, gamma, beta, eps, rms, rows, n, h, y, mean, rstd, y_bf16);
    return;
  }
  dispatch_floating(x.dtype(), [&](auto zero) {
    norm_forward_typed<decltype(zero)>(x, delta, h, gamma, beta, eps, rms, rows, n, y, mean, rstd,
                                       y_bf16);
  });
}

void CpuBackend::norm_backward(const Tensor& x, const Tensor& gamma, const Tensor& mean,
                               const Tensor& rstd, const Tensor& grad_y, bool rms,
                               std::int64_t rows, std::int64_t n, const Tensor& grad_x,
                               const Tensor& grad_gamma, const Tensor& grad_beta) {
  dispatch_floating(x.dtype(), [&](auto zero) {
    norm_backward_typed<decltype(zero)>(x, gamma, mean, rstd, grad_y, Tensor(), rms, rows, n,
                                        grad_x, grad_gamma, grad_beta, nullptr);
  });
}

void CpuBackend::norm_backward_add(const Tensor& x, const Tensor& gamma, const Tensor& mean,
                                   const Tensor& rstd, const Tensor& grad_y,
                                   const Tensor& grad_residual, bool rms, std::int64_t rows,
                                   std::int64_t n, const Tensor& grad_x, const Tensor& grad_gamma,
                                   const Tensor& grad_beta, std::uint16_t* grad_x_bf16) {
  if (grad_x_bf16 != nullptr && x.dtype() != DType::f32) {  // bf16 copies are of f32 values only
    Backend::norm_backward_add(x, gamma, mean, rstd, grad_y, grad_residual, rms, rows, n, grad_x,
                               grad_gamma, grad_beta, grad_x_bf16);
    return;
  }
  dispatch_floating(x.dtype(), [&](auto zero) {
    norm_backward_typed<decltype(zero)>(x, gamma, mean, rstd, grad_y, grad_residual, rms, rows, n,
                                        grad_x, grad_gamma, grad_beta, grad_x_bf16);
  });
}

}  // namespace relpos
