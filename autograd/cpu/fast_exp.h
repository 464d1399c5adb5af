#pragma once
// The one vectorised exp() of the CPU kernels (flash attention, GELU); std::exp
// does not vectorise without -ffast-math. float: Cody-Waite range reduction
// x = n·ln2 + r with n rounded to nearest by adding and subtracting 1.5·2^23
// (GCC 12 keeps std::floor scalar, which stops the loop from vectorising), a
// degree-6 polynomial for e^r on |r| <= ln2/2 (the classic Cephes coefficients),
// and 2^n built in the exponent bits; relative error below 1e-7 (at most 8.2e-8
// over [-87, 87]). Inputs below log(FLT_MIN) give exactly 0, so results are never
// denormal; -inf gives 0; inputs above 88 give e^88; NaN gives NaN (a diverging run
// must show it), and never reaches the float-to-int conversion, where it would be
// undefined. double keeps std::exp: it serves the fp64 gradient checks, not speed.
#include <bit>
#include <cmath>
#include <cstdint>

namespace relpos::cpu {

inline float exp_approx(float x) {
  constexpr float kLog2e = 1.44269504088896341f;
  constexpr float kLn2Hi = 0.693359375f, kLn2Lo = -2.12194440e-4f;
  constexpr float kMin = -87.3365447f;   // log(FLT_MIN): smaller inputs underflow to 0
  constexpr float kMax = 88.0f;          // below log(FLT_MAX), so 2^n stays finite
  constexpr float kRound = 12582912.0f;  // 1.5·2^23: adding it rounds to an integer
  const float clamped = x > kMin ? (x < kMax ? x : kMax) : kMin;  // NaN: kMin
  const float n = (clamped * kLog2e + kRound) - kRound;
  const float r = (clamped - n * kLn2Hi) - n * kLn2Lo;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  const float e_r = p * r * r + r + 1.0f;
  const float two_n = std::bit_cast<float>((static_cast<std::int32_t>(n) + 127) << 23);
  return x < kMin ? 0.0f : (std::isnan(x) ? x : e_r * two_n);
}

inline double exp_approx(double x) { return std::exp(x); }

// y[j] = exp(x[j] - shift) for j < n.
template <class T>
void exp_shifted(const T* x, T shift, T* y, std::int64_t n) {
#pragma omp simd
  for (std::int64_t j = 0; j < n; ++j) y[j] = exp_approx(x[j] - shift);
}

}  // namespace relpos::cpu
