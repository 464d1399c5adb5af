#include "optim/clip.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "autograd/error.h"
#include "optim/elementwise_loop.h"

namespace relpos {

namespace {

constexpr double kClipEps = 1e-6;  // as torch.nn.utils.clip_grad_norm_
constexpr std::int64_t kChunk = 8192;

// Sum of squares in double: fixed chunks summed in parallel, then the chunk
// sums in order, so the bits are the same for any thread count.
template <class T>
double sum_of_squares(const T* g, std::int64_t n) {
  const std::int64_t chunks = (n + kChunk - 1) / kChunk;
  std::vector<double> partial(static_cast<std::size_t>(chunks));
#pragma omp parallel for schedule(static) if (n > optim_detail::kParallelThreshold)
  for (std::int64_t c = 0; c < chunks; ++c) {
    const std::int64_t end = std::min(n, (c + 1) * kChunk);
    double s = 0.0;
    for (std::int64_t i = c * kChunk; i < end; ++i) s += static_cast<double>(g[i]) * g[i];
    partial[static_cast<std::size_t>(c)] = s;
  }
  double total = 0.0;
  for (double s : partial) total += s;
  return total;
}

void check_gradient(const NamedParameter& p) {
  const Tensor grad = p.tensor.grad();
  require(is_floating(grad.dtype()) && grad.device() == Device::cpu && grad.is_contiguous(),
          "clip_grad_norm: gradient of '{}' is {}; expected a contiguous f32 or f64 CPU tensor",
          p.name, grad.describe());
}

}  // namespace

double clip_grad_norm(const std::vector<NamedParameter>& parameters, double max_norm) {
  require(std::isfinite(max_norm) && max_norm > 0,
          "clip_grad_norm: max_norm {} must be finite and > 0", max_norm);
  double sum = 0.0;
  for (const NamedParameter& p : parameters) {
    if (!p.tensor.grad().defined()) continue;
    check_gradient(p);
    const Tensor grad = p.tensor.grad();
    sum += dispatch_floating(grad.dtype(), [&](auto zero) {
      return sum_of_squares(grad.data<decltype(zero)>(), grad.numel());
    });
  }
  const double norm = std::sqrt(sum);
  const double coef = max_norm / (norm + kClipEps);
  if (!std::isfinite(norm) || coef >= 1.0) return norm;
  for (const NamedParameter& p : parameters) {
    const Tensor grad = p.tensor.grad();
    if (!grad.defined()) continue;
    dispatch_floating(grad.dtype(), [&](auto zero) {
      using T = decltype(zero);
      T* g = grad.data<T>();
      const T scale = static_cast<T>(coef);
      optim_detail::for_each_index(grad.numel(), [=](std::int64_t i) { g[i] = g[i] * scale; });
    });
    grad.bump_version();
  }
  return norm;
}

}  // namespace relpos
