#pragma once
// A fully connected layer as one differentiable op: y = f(x Wᵀ + b).
#include <cstdint>

#include "autograd/tensor.h"

namespace relpos {

enum class Activation : std::uint8_t { none, gelu_tanh };

// x: (..., in), weight: (out, in), bias: (out) or an undefined Tensor -> (..., out).
// Forward: the GEMM's output starts as the bias rows and the GEMM adds x Wᵀ to
// them, then one pass applies f. Backward: one pass for f' and the bias gradient
// (Backend::activation_backward), then one GEMM for each of dx and dW.
Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias,
              Activation activation = Activation::none);

}  // namespace relpos
