#pragma once
// f32 -> bfloat16 by rounding to nearest, ties to even (the rounding of vcvtneps2bf16).
// bfloat16 is the upper half of an f32: 8 exponent bits, 7 stored mantissa bits.
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

}  // namespace relpos::cpu
