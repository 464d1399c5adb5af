#include "optim/optimizer.h"

#include <cmath>
#include <set>

#include "autograd/error.h"
#include "autograd/tape.h"

namespace relpos {

namespace {

constexpr const char* kStepKey = "step";

void check_parameter(const NamedParameter& p, std::set<std::string>& seen) {
  require(!p.name.empty(), "Optimizer: a parameter has an empty name");
  require(p.name.find('/') == std::string::npos,
          "Optimizer: parameter name '{}' contains '/'; names use dots", p.name);
  require(seen.insert(p.name).second, "Optimizer: parameter '{}' is listed twice", p.name);
  require(p.tensor.defined(), "Optimizer: parameter '{}' is an undefined tensor", p.name);
  require(is_floating(p.tensor.dtype()) && p.tensor.is_contiguous(),
          "Optimizer: parameter '{}' is {}; expected a contiguous f32 or f64 tensor", p.name,
          p.tensor.describe());
}

}  // namespace

std::int64_t Optimizer::increment(const Tensor& counter) { return ++*counter.data<std::int64_t>(); }

Optimizer::Optimizer(std::vector<NamedParameter> parameters, std::string_view name, Kernel update)
    : parameters_(std::move(parameters)), steps_(Tensor::zeros({}, DType::i64)) {
  std::set<std::string> seen;
  for (const NamedParameter& p : parameters_) {
    check_parameter(p, seen);  // the first one is checked before its device is used
    const Device device = parameters_.front().tensor.device();
    require(p.tensor.device() == device,
            "Optimizer: parameter '{}' is on {} but the first one is on {}; all parameters must "
            "live on one device",
            p.name, name_of(p.tensor.device()), name_of(device));
  }
  if (!parameters_.empty())
    require_kernel(parameters_.front().tensor.device(), update,
                   fmt::format("optimizer '{}'", name));
  state_[kStepKey] = steps_;
}

Tensor Optimizer::add_buffer(std::size_t index, const std::string& buffer, const Shape& shape,
                             DType dtype, Device device) {
  Tensor t = Tensor::zeros(shape, dtype, device);
  state_[parameters_.at(index).name + "/" + buffer] = t;
  return t;
}

std::int64_t Optimizer::step_count() const { return *steps_.data<std::int64_t>(); }

void Optimizer::check_gradient(const NamedParameter& p) const {
  const Tensor grad = p.tensor.grad();
  require(grad.shape() == p.tensor.shape() && grad.dtype() == p.tensor.dtype() &&
              grad.device() == p.tensor.device(),
          "Optimizer::step: gradient of '{}' is {}, expected {}", p.name, grad.describe(),
          p.tensor.describe());
}

void Optimizer::step(double lr) {
  require(std::isfinite(lr) && lr >= 0, "Optimizer::step: learning rate {} must be finite and >= 0",
          lr);
  // Check every gradient first so that an error leaves no parameter half-updated.
  for (const NamedParameter& p : parameters_)
    if (p.tensor.grad().defined()) check_gradient(p);
  NoGradGuard no_grad;
  std::vector<GradientOf> gradients;
  for (std::size_t i = 0; i < parameters_.size(); ++i) {
    const Tensor grad = parameters_[i].tensor.grad();
    if (grad.defined()) gradients.push_back({i, grad.contiguous()});
  }
  update(gradients, lr);
  for (const GradientOf& g : gradients) parameters_[g.index].tensor.bump_version();
  increment(steps_);
}

void Optimizer::zero_grad() {
  for (const NamedParameter& p : parameters_) p.tensor.zero_grad();
}

std::map<std::string, Tensor> Optimizer::state() const {
  std::map<std::string, Tensor> snapshot;
  for (const auto& [key, tensor] : state_) snapshot[key] = tensor.clone();
  return snapshot;
}

void Optimizer::load_state(const std::map<std::string, Tensor>& state) {
  for (const auto& [key, own] : state_) {
    const auto found = state.find(key);
    require(found != state.end(),
            "Optimizer::load_state: state '{}' (expected shape {}) is missing", key,
            to_string(own.shape()));
    const Tensor& given = found->second;
    require(given.defined(), "Optimizer::load_state: state '{}' is an undefined tensor", key);
    require(given.shape() == own.shape(),
            "Optimizer::load_state: state '{}' has shape {}, expected shape {}", key,
            to_string(given.shape()), to_string(own.shape()));
    require(given.dtype() == own.dtype(),
            "Optimizer::load_state: state '{}' has dtype {}, expected dtype {}", key,
            name_of(given.dtype()), name_of(own.dtype()));
  }
  for (const auto& entry : state)
    require(state_.count(entry.first) == 1,
            "Optimizer::load_state: unexpected state '{}' (no such parameter or buffer here)",
            entry.first);
  NoGradGuard no_grad;
  for (auto& [key, own] : state_) own.copy_(state.at(key));
}

}  // namespace relpos
