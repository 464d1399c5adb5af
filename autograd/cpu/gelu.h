#pragma once
// GELU with the tanh approximation and its derivative, as inline functions that
// vectorise when called in a loop (libm's tanhf and expf calls do not). With
// u = sqrt(2/π) · (x + 0.044715 x³), 1 + tanh(u) = 2s for s = 1 / (1 + e), e = e^(-2u),
// and 1 - tanh²(u) = 4 s² e, so neither needs a cancelling subtraction:
//   gelu(x)  = x/2 · (1 + tanh(u))                            = x s
//   gelu'(x) = (1 + tanh(u))/2 + x/2 · (1 - tanh²(u)) · du/dx = s + 2 x s² e · du/dx
// f32: e from cpu::exp_approx (fast_exp.h), finite for every u. f64 uses std::exp:
// it serves the gradient checks, not speed.
#include <algorithm>
#include <cmath>
#include <type_traits>

#include "autograd/cpu/fast_exp.h"

namespace relpos::cpu {

inline constexpr double kSqrt2OverPi = 0.7978845608028654;
inline constexpr double kGeluCubic = 0.044715;

// e^(-2u), finite for every u.
template <class T>
T exp_minus_twice(T u) {
  if constexpr (std::is_same_v<T, float>) {
    return exp_approx(-2.0f * u);
  } else {
    return std::exp(std::min(std::max(-2.0 * u, -700.0), 700.0));
  }
}

template <class T>
T gelu_tanh(T x) {
  const T u = T(kSqrt2OverPi) * (x + T(kGeluCubic) * x * x * x);
  return x / (T(1) + exp_minus_twice(u));
}

template <class T>
T gelu_tanh_derivative(T x) {
  const T u = T(kSqrt2OverPi) * (x + T(kGeluCubic) * x * x * x);
  const T du = T(kSqrt2OverPi) * (T(1) + T(3 * kGeluCubic) * x * x);
  const T e = exp_minus_twice(u);
  const T s = T(1) / (T(1) + e);
  return s + T(2) * x * s * s * e * du;
}

}  // namespace relpos::cpu
