#pragma once
// Differentiable normalisation over the last axis.
#include "autograd/tensor.h"

namespace relpos {

// x: (..., n). gamma, beta: (n), or undefined Tensors for no affine part.
// y = (x - mean) / sqrt(var + eps) * gamma + beta, with the biased variance.
Tensor layer_norm(const Tensor& x, const Tensor& gamma, const Tensor& beta, double eps = 1e-5);
// x: (..., n). gamma: (n) or undefined. y = x / sqrt(mean(x^2) + eps) * gamma.
Tensor rms_norm(const Tensor& x, const Tensor& gamma, double eps = 1e-6);

}  // namespace relpos
