#include "optim/adam.h"

#include <cmath>

#include "autograd/backend.h"
#include "autograd/error.h"

namespace relpos {

namespace {

void check_beta(double beta, const char* name) {
  require(beta >= 0 && beta < 1, "Adam: {} = {} must be in [0, 1)", name, beta);
}

}  // namespace

Adam::Adam(std::vector<NamedParameter> parameters, AdamOptions options)
    : Adam(std::move(parameters), options, WeightDecay::l2) {}

Adam::Adam(std::vector<NamedParameter> parameters, AdamOptions options, WeightDecay mode)
    : Optimizer(std::move(parameters), mode == WeightDecay::l2 ? "adam" : "adamw",
                Kernel::adam_update),
      options_(options),
      mode_(mode) {
  check_beta(options.beta1, "beta1");
  check_beta(options.beta2, "beta2");
  require(std::isfinite(options.eps) && options.eps >= 0, "Adam: eps {} must be finite and >= 0",
          options.eps);
  require(std::isfinite(options.weight_decay) && options.weight_decay >= 0,
          "Adam: weight_decay {} must be finite and >= 0", options.weight_decay);
  for (std::size_t i = 0; i < this->parameters().size(); ++i) {
    const Tensor& p = this->parameters()[i].tensor;
    buffers_.push_back({add_buffer(i, "step", {}, DType::i64, Device::cpu),
                        add_buffer(i, "exp_avg", p.shape(), p.dtype(), p.device()),
                        add_buffer(i, "exp_avg_sq", p.shape(), p.dtype(), p.device())});
  }
}

void Adam::update(const std::vector<GradientOf>& gradients, double lr) {
  if (gradients.empty()) return;
  std::vector<Backend::AdamUpdate> updates;
  updates.reserve(gradients.size());
  for (const GradientOf& g : gradients) {
    const NamedParameter& param = parameters()[g.index];
    const Buffers& b = buffers_[g.index];
    const auto t = static_cast<double>(increment(b.step));
    const double weight_decay = param.decay ? options_.weight_decay : 0.0;
    const double rate = lr * param.lr_scale;  // exact for a scale of 1
    updates.push_back({.param = param.tensor,
                       .grad = g.grad,
                       .exp_avg = b.exp_avg,
                       .exp_avg_sq = b.exp_avg_sq,
                       .l2 = mode_ == WeightDecay::l2 ? weight_decay : 0.0,
                       .shrink = mode_ == WeightDecay::decoupled ? 1.0 - rate * weight_decay : 1.0,
                       .beta1 = options_.beta1,
                       .beta2 = options_.beta2,
                       .step_size = rate / (1.0 - std::pow(options_.beta1, t)),
                       .bias_correction2_sqrt = std::sqrt(1.0 - std::pow(options_.beta2, t)),
                       .eps = options_.eps});
  }
  backend_of(updates.front().param).adam_update(updates);
}

}  // namespace relpos
