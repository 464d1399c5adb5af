#include "optim/sgd.h"

#include <cmath>

#include "autograd/backend.h"
#include "autograd/error.h"

namespace relpos {

Sgd::Sgd(std::vector<NamedParameter> parameters, SgdOptions options)
    : Optimizer(std::move(parameters), "sgd", Kernel::sgd_update), options_(options) {
  require(std::isfinite(options.momentum) && options.momentum >= 0,
          "Sgd: momentum {} must be finite and >= 0", options.momentum);
  require(std::isfinite(options.weight_decay) && options.weight_decay >= 0,
          "Sgd: weight_decay {} must be finite and >= 0", options.weight_decay);
  require(!options.nesterov || options.momentum > 0, "Sgd: nesterov needs momentum > 0, got {}",
          options.momentum);
  if (options.momentum == 0) return;
  for (std::size_t i = 0; i < this->parameters().size(); ++i) {
    const Tensor& p = this->parameters()[i].tensor;
    momentum_buffers_.push_back(add_buffer(i, "momentum_buffer", p.shape(), p.dtype(), p.device()));
  }
}

void Sgd::update(const std::vector<GradientOf>& gradients, double lr) {
  if (gradients.empty()) return;
  std::vector<Backend::SgdUpdate> updates;
  updates.reserve(gradients.size());
  for (const GradientOf& g : gradients) {
    const NamedParameter& param = parameters()[g.index];
    updates.push_back(
        {.param = param.tensor,
         .grad = g.grad,
         .momentum_buffer = momentum_buffers_.empty() ? Tensor() : momentum_buffers_[g.index],
         .lr = lr * param.lr_scale,  // exact for a scale of 1
         .weight_decay = param.decay ? options_.weight_decay : 0.0,
         .momentum = options_.momentum,
         .nesterov = options_.nesterov});
  }
  backend_of(updates.front().param).sgd_update(updates);
}

}  // namespace relpos
