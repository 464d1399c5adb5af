#pragma once
// y = f(x Wᵀ + b), W (out, in), b (out), f an optional activation.
#include "autograd/ops/linear.h"
#include "layers/module.h"

namespace relpos {

class Linear : public Module {
 public:
  Linear(std::int64_t in_features, std::int64_t out_features, bool bias, Rng& rng);
  // (..., in) -> (..., out)
  Tensor forward(const Tensor& x, Activation activation = Activation::none) const;
  const Tensor& weight() const { return weight_; }

 private:
  Tensor weight_, bias_;
};

}  // namespace relpos
