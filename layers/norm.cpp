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

ResidualNorm Norm::forward(const Tensor& x, const Tensor& delta, bool delta_from_linear) const {
  const NormBf16 bf16{feeds_linear_, delta_from_linear};
  return kind_ == NormKind::layernorm ? add_layer_norm(x, delta, gamma_, beta_, eps_, bf16)
                                      : add_rms_norm(x, delta, gamma_, eps_, bf16);
}

}  // namespace relpos
