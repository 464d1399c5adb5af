#include "optim/adam.h"

#include <cmath>

#include "autograd/error.h"
#include "optim/elementwise_loop.h"

namespace relpos {

namespace {

template <class T>
struct AdamCoefficients {
  T l2;      // added to the gradient: wd (Adam) or 0
  T shrink;  // multiplies the parameter first: 1 - lr * wd (AdamW) or 1
  T beta1, beta2;
  T one_minus_beta1, one_minus_beta2;
  T step_size;              // lr / (1 - beta1^t)
  T bias_correction2_sqrt;  // sqrt(1 - beta2^t)
  T eps;
};

template <class T>
void adam_kernel(T* p, const T* g, T* m, T* v, std::int64_t n, AdamCoefficients<T> c) {
  optim_detail::for_each_index(n, [=](std::int64_t i) {
    T grad = g[i];
    if (c.l2 != T(0)) grad = grad + c.l2 * p[i];
    if (c.shrink != T(1)) p[i] = p[i] * c.shrink;
    m[i] = m[i] * c.beta1 + c.one_minus_beta1 * grad;
    v[i] = v[i] * c.beta2 + c.one_minus_beta2 * grad * grad;
    const T denom = std::sqrt(v[i]) / c.bias_correction2_sqrt + c.eps;
    p[i] = p[i] - c.step_size * (m[i] / denom);
  });
}

void check_beta(double beta, const char* name) {
  require(beta >= 0 && beta < 1, "Adam: {} = {} must be in [0, 1)", name, beta);
}

}  // namespace

Adam::Adam(std::vector<NamedParameter> parameters, AdamOptions options)
    : Adam(std::move(parameters), options, WeightDecay::l2) {}

Adam::Adam(std::vector<NamedParameter> parameters, AdamOptions options, WeightDecay mode)
    : Optimizer(std::move(parameters)), options_(options), mode_(mode) {
  check_beta(options.beta1, "beta1");
  check_beta(options.beta2, "beta2");
  require(std::isfinite(options.eps) && options.eps >= 0, "Adam: eps {} must be finite and >= 0",
          options.eps);
  require(std::isfinite(options.weight_decay) && options.weight_decay >= 0,
          "Adam: weight_decay {} must be finite and >= 0", options.weight_decay);
  for (std::size_t i = 0; i < this->parameters().size(); ++i) {
    const Tensor& p = this->parameters()[i].tensor;
    buffers_.push_back({add_buffer(i, "step", {}, DType::i64),
                        add_buffer(i, "exp_avg", p.shape(), p.dtype()),
                        add_buffer(i, "exp_avg_sq", p.shape(), p.dtype())});
  }
}

void Adam::update(std::size_t index, const Tensor& grad, double lr) {
  const NamedParameter& param = parameters()[index];
  const Buffers& b = buffers_[index];
  const auto t = static_cast<double>(increment(b.step));
  const double weight_decay = param.decay ? options_.weight_decay : 0.0;
  const double l2 = mode_ == WeightDecay::l2 ? weight_decay : 0.0;
  const double shrink = mode_ == WeightDecay::decoupled ? 1.0 - lr * weight_decay : 1.0;
  const double step_size = lr / (1.0 - std::pow(options_.beta1, t));
  const double bias_correction2_sqrt = std::sqrt(1.0 - std::pow(options_.beta2, t));
  dispatch_floating(grad.dtype(), [&](auto zero) {
    using T = decltype(zero);
    const AdamCoefficients<T> c{.l2 = static_cast<T>(l2),
                                .shrink = static_cast<T>(shrink),
                                .beta1 = static_cast<T>(options_.beta1),
                                .beta2 = static_cast<T>(options_.beta2),
                                .one_minus_beta1 = static_cast<T>(1.0 - options_.beta1),
                                .one_minus_beta2 = static_cast<T>(1.0 - options_.beta2),
                                .step_size = static_cast<T>(step_size),
                                .bias_correction2_sqrt = static_cast<T>(bias_correction2_sqrt),
                                .eps = static_cast<T>(options_.eps)};
    adam_kernel<T>(param.tensor.data<T>(), grad.data<T>(), b.exp_avg.data<T>(),
                   b.exp_avg_sq.data<T>(), grad.numel(), c);
  });
}

}  // namespace relpos
