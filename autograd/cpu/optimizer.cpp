// Optimizer kernels on the CPU: the Adam/AdamW and SGD updates and global-norm clipping.
// Every element is independent (update, scaling) or summed in fixed chunks
// (norm), so results do not depend on the thread count. The FMAs are written out
// (std::fma) where GCC used to contract them, so these bits are both the CPU's
// historical ones and the ones the CUDA kernels reproduce.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "autograd/cpu/cpu_backend.h"

namespace relpos {
namespace {

// Below this many elements a parallel region costs more than it saves.
constexpr std::int64_t kParallelThreshold = 32768;
// The squares of a gradient are summed in chunks of this many elements.
constexpr std::int64_t kSquaresChunk = 8192;

template <class T>
void adam_one(const Backend::AdamUpdate& u) {
  T* p = u.param.data<T>();
  const T* g = u.grad.data<T>();
  T* m = u.exp_avg.data<T>();
  T* v = u.exp_avg_sq.data<T>();
  const T l2 = static_cast<T>(u.l2), shrink = static_cast<T>(u.shrink);
  const T beta1 = static_cast<T>(u.beta1), beta2 = static_cast<T>(u.beta2);
  const T one_minus_beta1 = static_cast<T>(1.0 - u.beta1);
  const T one_minus_beta2 = static_cast<T>(1.0 - u.beta2);
  const T neg_step_size = -static_cast<T>(u.step_size);
  const T bias_correction2_sqrt = static_cast<T>(u.bias_correction2_sqrt);
  const T eps = static_cast<T>(u.eps);
  const std::int64_t n = u.param.numel();
#pragma omp parallel for schedule(static) if (n > kParallelThreshold)
  for (std::int64_t i = 0; i < n; ++i) {
    T grad = g[i];
    if (l2 != T(0)) grad = std::fma(l2, p[i], grad);
    if (shrink != T(1)) p[i] = p[i] * shrink;
    m[i] = std::fma(m[i], beta1, one_minus_beta1 * grad);
    v[i] = std::fma(v[i], beta2, one_minus_beta2 * grad * grad);
    const T denom = std::sqrt(v[i]) / bias_correction2_sqrt + eps;
    p[i] = std::fma(neg_step_size, m[i] / denom, p[i]);
  }
}

// The SGD update as written in Backend::SgdUpdate; buf is null without momentum.
template <class T>
void sgd_one(const Backend::SgdUpdate& u) {
  T* p = u.param.data<T>();
  const T* g = u.grad.data<T>();
  T* buf = u.momentum_buffer.defined() ? u.momentum_buffer.data<T>() : nullptr;
  const T lr = static_cast<T>(u.lr), weight_decay = static_cast<T>(u.weight_decay);
  const T momentum = static_cast<T>(u.momentum);
  const bool nesterov = u.nesterov;
  const std::int64_t n = u.param.numel();
#pragma omp parallel for schedule(static) if (n > kParallelThreshold)
  for (std::int64_t i = 0; i < n; ++i) {
    T d = g[i];
    if (weight_decay != T(0)) d = d + weight_decay * p[i];
    if (buf != nullptr) {
      buf[i] = buf[i] * momentum + d;
      d = nesterov ? d + momentum * buf[i] : buf[i];
    }
    p[i] = p[i] - lr * d;
  }
}

// Fixed chunks summed in parallel, then the chunk sums in order.
template <class T>
double sum_of_squares(const T* g, std::int64_t n) {
  const std::int64_t chunks = (n + kSquaresChunk - 1) / kSquaresChunk;
  std::vector<double> partial(static_cast<std::size_t>(chunks));
#pragma omp parallel for schedule(static) if (n > kParallelThreshold)
  for (std::int64_t c = 0; c < chunks; ++c) {
    const std::int64_t end = std::min(n, (c + 1) * kSquaresChunk);
    double s = 0.0;
    for (std::int64_t i = c * kSquaresChunk; i < end; ++i) {
      const double x = static_cast<double>(g[i]);
      s = std::fma(x, x, s);
    }
    partial[static_cast<std::size_t>(c)] = s;
  }
  double total = 0.0;
  for (double s : partial) total += s;
  return total;
}

template <class T>
void scale_in_place(T* g, std::int64_t n, T scale) {
#pragma omp parallel for schedule(static) if (n > kParallelThreshold)
  for (std::int64_t i = 0; i < n; ++i) g[i] = g[i] * scale;
}

}  // namespace

void CpuBackend::adam_update(const std::vector<AdamUpdate>& updates) {
  for (const AdamUpdate& u : updates)
    dispatch_floating(u.param.dtype(), [&](auto zero) { adam_one<decltype(zero)>(u); });
}

void CpuBackend::sgd_update(const std::vector<SgdUpdate>& updates) {
  for (const SgdUpdate& u : updates)
    dispatch_floating(u.param.dtype(), [&](auto zero) { sgd_one<decltype(zero)>(u); });
}

double CpuBackend::clip_grad_norm(const std::vector<Tensor>& grads, double max_norm, double eps) {
  double sum = 0.0;
  for (const Tensor& g : grads)
    sum += dispatch_floating(
        g.dtype(), [&](auto zero) { return sum_of_squares(g.data<decltype(zero)>(), g.numel()); });
  const double norm = std::sqrt(sum);
  const double coef = max_norm / (norm + eps);
  if (!std::isfinite(norm) || coef >= 1.0) return norm;
  for (const Tensor& g : grads)
    dispatch_floating(g.dtype(), [&](auto zero) {
      using T = decltype(zero);
      scale_in_place(g.data<T>(), g.numel(), static_cast<T>(coef));
    });
  return norm;
}

}  // namespace relpos
