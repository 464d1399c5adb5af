#pragma once
// LayerNorm and RMSNorm over the last axis, with affine parameters.
#include "autograd/ops/norm.h"
#include "layers/module.h"

namespace relpos {

enum class NormKind { layernorm, rmsnorm };

class Norm : public Module {
 public:
  // feeds_linear: the output is a linear layer's input (under bf16 the fused residual pass
  // then writes its bf16 rounding for that layer: add_layer_norm).
  Norm(NormKind kind, std::int64_t dim, double eps = 1e-5, bool feeds_linear = false);
  Tensor forward(const Tensor& x) const;
  // The residual add before the norm, fused with it: {x + delta, forward(x + delta)}.
  // delta_from_linear: delta is a linear layer's output (under bf16 the backward pass then
  // writes the rounding of delta's gradient for that layer's products: add_layer_norm).
  ResidualNorm forward(const Tensor& x, const Tensor& delta, bool delta_from_linear = false) const;

 private:
  NormKind kind_;
  bool feeds_linear_;
  double eps_;
  Tensor gamma_, beta_;
};

}  // namespace relpos
