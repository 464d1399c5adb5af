#include "optim/sgd.h"

#include <cmath>

#include "autograd/error.h"
#include "optim/elementwise_loop.h"

namespace relpos {

namespace {

template <class T>
struct SgdCoefficients {
  T lr, weight_decay, momentum;
  bool nesterov;
};

// buf is null when momentum is 0.
template <class T>
void sgd_kernel(T* p, const T* g, T* buf, std::int64_t n, SgdCoefficients<T> c) {
  optim_detail::for_each_index(n, [=](std::int64_t i) {
    T d = g[i];
    if (c.weight_decay != T(0)) d = d + c.weight_decay * p[i];
    if (buf != nullptr) {
      buf[i] = buf[i] * c.momentum + d;
      d = c.nesterov ? d + c.momentum * buf[i] : buf[i];
    }
    p[i] = p[i] - c.lr * d;
  });
}

}  // namespace

Sgd::Sgd(std::vector<NamedParameter> parameters, SgdOptions options)
    : Optimizer(std::move(parameters)), options_(options) {
  require(std::isfinite(options.momentum) && options.momentum >= 0,
          "Sgd: momentum {} must be finite and >= 0", options.momentum);
  require(std::isfinite(options.weight_decay) && options.weight_decay >= 0,
          "Sgd: weight_decay {} must be finite and >= 0", options.weight_decay);
  require(!options.nesterov || options.momentum > 0, "Sgd: nesterov needs momentum > 0, got {}",
          options.momentum);
  for (const NamedParameter& p : this->parameters())
    require(p.tensor.device() == Device::cpu,
            "Sgd: parameter '{}' is on {}; SGD runs on the CPU only (use adam or adamw)", p.name,
            name_of(p.tensor.device()));
  if (options.momentum == 0) return;
  for (std::size_t i = 0; i < this->parameters().size(); ++i) {
    const Tensor& p = this->parameters()[i].tensor;
    momentum_buffers_.push_back(
        add_buffer(i, "momentum_buffer", p.shape(), p.dtype(), Device::cpu));
  }
}

void Sgd::update(const std::vector<GradientOf>& gradients, double lr) {
  for (const GradientOf& g : gradients) update_one(g.index, g.grad, lr);
}

void Sgd::update_one(std::size_t index, const Tensor& grad, double lr) {
  const NamedParameter& param = parameters()[index];
  const double weight_decay = param.decay ? options_.weight_decay : 0.0;
  dispatch_floating(grad.dtype(), [&](auto zero) {
    using T = decltype(zero);
    const SgdCoefficients<T> c{static_cast<T>(lr), static_cast<T>(weight_decay),
                               static_cast<T>(options_.momentum), options_.nesterov};
    T* buf = momentum_buffers_.empty() ? nullptr : momentum_buffers_[index].data<T>();
    sgd_kernel<T>(param.tensor.data<T>(), grad.data<T>(), buf, grad.numel(), c);
  });
}

}  // namespace relpos
