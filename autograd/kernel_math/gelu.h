#pragma once
// GELU, both forms, and their derivatives, for every backend.
//
// tanh form, with u = sqrt(2/π) · (x + 0.044715 x³) and e = e^(-2u): 1 + tanh(u) = 2s for
// s = 1 / (1 + e), and 1 - tanh²(u) = 4 s² e, so neither needs a cancelling subtraction:
//   gelu(x)  = x/2 · (1 + tanh(u))                            = x s
//   gelu'(x) = (1 + tanh(u))/2 + x/2 · (1 - tanh²(u)) · du/dx = s + 2 x s² e · du/dx
// e must stay finite for every u: the caller's Math::exp_finite (kernel_math/host_device.h).
// erf form: gelu(x) = x/2 · (1 + erf(x/√2)), gelu'(x) = (1 + erf(x/√2))/2 + x φ(x).
#include "autograd/kernel_math/host_device.h"

namespace relpos::kernel_math {

inline constexpr double kSqrt2OverPi = 0.7978845608028654;
inline constexpr double kGeluCubic = 0.044715;
inline constexpr double kInvSqrt2 = 0.7071067811865476;
inline constexpr double kInvSqrt2Pi = 0.3989422804014327;

template <class Math, class T>
RELPOS_HOST_DEVICE inline T gelu_tanh(T x) {
  const T u = T(kSqrt2OverPi) * (x + T(kGeluCubic) * x * x * x);
  return x / (T(1) + Math::exp_finite(T(-2) * u));
}

template <class Math, class T>
RELPOS_HOST_DEVICE inline T gelu_tanh_derivative(T x) {
  const T u = T(kSqrt2OverPi) * (x + T(kGeluCubic) * x * x * x);
  const T du = T(kSqrt2OverPi) * (T(1) + T(3 * kGeluCubic) * x * x);
  const T e = Math::exp_finite(T(-2) * u);
  const T s = T(1) / (T(1) + e);
  return s + T(2) * x * s * s * e * du;
}

template <class Math, class T>
RELPOS_HOST_DEVICE inline T gelu_erf(T x) {
  return T(0.5) * x * (T(1) + Math::erf(x * T(kInvSqrt2)));
}

template <class Math, class T>
RELPOS_HOST_DEVICE inline T gelu_erf_derivative(T x) {
  return T(0.5) * (T(1) + Math::erf(x * T(kInvSqrt2))) +
         x * T(kInvSqrt2Pi) * Math::exp(T(-0.5) * x * x);
}

}  // namespace relpos::kernel_math
