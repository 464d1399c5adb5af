#pragma once
// Differentiable normalisation over the last axis, alone or fused with the residual add
// before it.
#include "autograd/tensor.h"

namespace relpos {

// x: (..., n). gamma, beta: (n), or undefined Tensors for no affine part.
// y = (x - mean) / sqrt(var + eps) * gamma + beta, with the biased variance.
Tensor layer_norm(const Tensor& x, const Tensor& gamma, const Tensor& beta, double eps = 1e-5);
// x: (..., n). gamma: (n) or undefined. y = x / sqrt(mean(x^2) + eps) * gamma.
Tensor rms_norm(const Tensor& x, const Tensor& gamma, double eps = 1e-6);

// A pre-norm block's residual add and the norm that reads it, as one op with two outputs:
// sum = x + delta (x, delta of one shape (..., n)), normed = layer_norm(sum) or
// rms_norm(sum). The same values as add and then the norm, bit for bit, in one pass over the
// rows; the backward adds sum's own gradient to the norm's in the pass that writes it
// (autograd/cpu/norm.cpp).
struct ResidualNorm {
  Tensor sum;     // (..., n)
  Tensor normed;  // (..., n)
};
// Which bf16 roundings the op writes, while recording under train.precision bf16 on the CPU,
// for the linear layers around it (autograd/ops/linear.h), whose products would otherwise read
// those tensors again to round them: the same bits, one pass fewer (autograd/ops/bf16_input.h).
struct NormBf16 {
  bool normed_feeds_linear = false;  // normed is a linear layer's input: the forward pass
                                     // writes normed's rounding for that layer's products
  bool delta_from_linear = false;    // delta is a linear layer's output: the backward pass
                                     // writes the rounding of delta's gradient (the residual
                                     // stream's) for that layer's backward products
};
ResidualNorm add_layer_norm(const Tensor& x, const Tensor& delta, const Tensor& gamma,
                            const Tensor& beta, double eps = 1e-5, NormBf16 bf16 = {});
ResidualNorm add_rms_norm(const Tensor& x, const Tensor& delta, const Tensor& gamma,
                          double eps = 1e-6, NormBf16 bf16 = {});

}  // namespace relpos
