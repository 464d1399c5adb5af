#include "layers/module.h"

namespace relpos {

Tensor Module::register_parameter(const std::string& name, Tensor tensor, bool decay) {
  tensor.set_requires_grad(true);
  own_.push_back({name, tensor, decay});
  return tensor;
}

void Module::collect(const std::string& prefix, std::vector<NamedParameter>& out) const {
  for (const NamedParameter& p : own_) out.push_back({prefix + p.name, p.tensor, p.decay});
  for (const auto& [name, child] : children_) child->collect(prefix + name + ".", out);
}

std::vector<NamedParameter> Module::parameters() const {
  std::vector<NamedParameter> out;
  collect("", out);
  return out;
}

std::int64_t Module::parameter_count() const {
  std::int64_t n = 0;
  for (const NamedParameter& p : parameters()) n += p.tensor.numel();
  return n;
}

void Module::set_training(bool training) {
  training_ = training;
  for (auto& [name, child] : children_) child->set_training(training);
}

Tensor normal_init(const Shape& shape, Rng& rng, double stddev) {
  return randn(shape, rng, DType::f32, stddev);
}

}  // namespace relpos
