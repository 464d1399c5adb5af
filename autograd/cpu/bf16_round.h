#pragma once
// f32 -> bfloat16 by rounding to nearest, ties to even (the rounding of vcvtneps2bf16).
// bfloat16 is the upper half of an f32: 8 exponent bits, 7 stored mantissa bits.
#include <immintrin.h>

#include <cstdint>
#include <cstring>

namespace relpos::cpu {

inline std::uint16_t to_bf16(float x) {
  std::uint32_t bits = 0;
  std::memcpy(&bits, &x, sizeof bits);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return static_cast<std::uint16_t>((bits >> 16) | 0x40u);
  bits += 0x7fffu + ((bits >> 16) & 1u);  // NaN kept quiet above; Inf stays Inf
  return static_cast<std::uint16_t>(bits >> 16);
}

inline float from_bf16(std::uint16_t h) {
  const std::uint32_t bits = std::uint32_t{h} << 16;
  float x = 0;
  std::memcpy(&x, &bits, sizeof x);
  return x;
}

// One row of n values, as every bf16 product rounds its f32 operands: vcvtneps2bf16 where
// the compiler targets AVX-512-BF16, 16 values at a time (to_bf16's rounding, except that
// f32 subnormals, below 2^-126, become zero), to_bf16 for the rest.
inline void round_row_to_bf16(const float* in, std::int64_t n, std::uint16_t* out) {
  std::int64_t c = 0;
#if defined(__AVX512BF16__)
  for (; c + 16 <= n; c += 16) {
    const __m256bh packed = _mm512_cvtneps_pbh(_mm512_loadu_ps(in + c));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + c),
                        reinterpret_cast<const __m256i&>(packed));
  }
#endif
  for (; c < n; ++c) out[c] = to_bf16(in[c]);
}

}  // namespace relpos::cpu
