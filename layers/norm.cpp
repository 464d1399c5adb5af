#include "layers/norm.h"

namespace relpos {

Norm::Norm(NormKind kind, std::int64_t dim, double eps, bool feeds_linear)
    : kind_(kind), feeds_linear_(feeds_linear), eps_(eps) {
  gamma_ = register_parameter("weight", Tensor::ones({dim}), false);
  if (kind == NormKind::layernorm) beta_ = register_parameter("bias", Tensor::zeros({dim}), false);
}

Tensor Norm::forward(const Tensor& x) const {
  return kind_ == NormKind::layernorm ? layer_norm(x, gamma_, beta_, eps_)
                                      : rms_norm(x, gamma_, eps_);
}

ResidualNorm Norm::forward(const Tensor& x, const Tensor& delta) const {
  return kind_ == NormKind::layernorm ? add_layer_norm(x, delta, gamma_, beta_, eps_, feeds_linear_)
                                      : add_rms_norm(x, delta, gamma_, eps_, feeds_linear_);
}

}  // namespace relpos
