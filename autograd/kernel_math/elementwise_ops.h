#pragma once
// The elementwise operations a backend implements (Backend::unary, binary and their
// backwards); their values and derivatives are in kernel_math/elementwise.h.
#include <cstdint>

namespace relpos {

enum class UnaryOp : std::uint8_t {
  neg,
  exp,
  log,
  sqrt,
  tanh,
  relu,
  gelu_tanh,
  gelu_erf,
  add_scalar,  // x + p
  mul_scalar,  // x * p
  pow_scalar,  // x ^ p
};

enum class BinaryOp : std::uint8_t { add, sub, mul, div };

}  // namespace relpos
