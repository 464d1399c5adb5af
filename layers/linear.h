#pragma once
// y = x Wᵀ + b, W (out, in), b (out).
#include "layers/module.h"

namespace relpos {

class Linear : public Module {
 public:
  Linear(std::int64_t in_features, std::int64_t out_features, bool bias, Rng& rng);
  Tensor forward(const Tensor& x) const;  // (..., in) -> (..., out)
  const Tensor& weight() const { return weight_; }

 private:
  Tensor weight_, bias_;
};

}  // namespace relpos
