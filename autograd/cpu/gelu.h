#pragma once
// GELU with the tanh approximation and its derivative, as inline functions that
// vectorise when called in a loop (libm's tanhf and expf calls do not). With
// u = sqrt(2/π) · (x + 0.044715 x³), 1 + tanh(u) = 2s for s = 1 / (1 + e), e = e^(-2u),
// and 1 - tanh²(u) = 4 s² e, so neither needs a cancelling subtraction:
//   gelu(x)  = x/2 · (1 + tanh(u))                            = x s
//   gelu'(x) = (1 + tanh(u))/2 + x/2 · (1 - tanh²(u)) · du/dx = s + 2 x s² e · du/dx
// f32: e = 2^v, v = -2u·log2(e), as 2^n · 2^f for the nearest integer n and
// |f| <= 1/2, with 2^f from its degree-7 Taylor polynomial (relative error below
// 1e-8). f64 uses std::exp: it serves the gradient checks, not speed.
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <type_traits>

namespace relpos::cpu {

inline constexpr double kSqrt2OverPi = 0.7978845608028654;
inline constexpr double kGeluCubic = 0.044715;

// 2^v for v clamped to [-126, 126], where 2^n stays a normal float.
inline float exp2_clamped(float v) {
  constexpr float kRound = 12582912.0f;  // 1.5 · 2^23: adding it rounds to an integer
  constexpr float kLn2 = 0.6931471805599453f;
  const float clamped = std::min(std::max(v, -126.0f), 126.0f);
  const float n = (clamped + kRound) - kRound;
  const float y = (clamped - n) * kLn2;  // 2^f = e^y, |y| <= ln(2)/2
  float p = 1.0f / 5040.0f;
  p = p * y + 1.0f / 720.0f;
  p = p * y + 1.0f / 120.0f;
  p = p * y + 1.0f / 24.0f;
  p = p * y + 1.0f / 6.0f;
  p = p * y + 0.5f;
  p = p * y + 1.0f;
  p = p * y + 1.0f;
  const float two_n = std::bit_cast<float>((static_cast<std::int32_t>(n) + 127) << 23);
  return p * two_n;
}

// e^(-2u), finite for every u.
template <class T>
T exp_minus_twice(T u) {
  if constexpr (std::is_same_v<T, float>) {
    constexpr float kMinusTwoLog2e = -2.8853900817779268f;
    return exp2_clamped(kMinusTwoLog2e * u);
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
