#include "layers/linear.h"

#include <cmath>

namespace relpos {

Linear::Linear(std::int64_t in_features, std::int64_t out_features, bool bias, Rng& rng) {
  weight_ = register_parameter("weight", normal_init({out_features, in_features}, rng,
                                                     1.0 / std::sqrt(double(in_features))));
  if (bias) bias_ = register_parameter("bias", Tensor::zeros({out_features}), false);
}

Tensor Linear::forward(const Tensor& x, Activation activation) const {
  return linear(x, weight_, bias_, activation);
}

}  // namespace relpos
