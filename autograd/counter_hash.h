#pragma once
// A counter-based hash shared by the host and CUDA code: the same (seed, counter)
// gives the same bits on every device (dropout masks, RNG seeding).
#include <cstdint>

#ifdef __CUDACC__
#define RELPOS_HOST_DEVICE __host__ __device__
#else
#define RELPOS_HOST_DEVICE
#endif

namespace relpos {

// splitmix64's finaliser applied to seed + golden-ratio * (counter + 1).
RELPOS_HOST_DEVICE constexpr std::uint64_t mix64(std::uint64_t seed, std::uint64_t counter) {
  std::uint64_t z = seed + 0x9E3779B97F4A7C15ULL * (counter + 1);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

// The uniform double in [0, 1) made from the top 53 bits of a hash.
RELPOS_HOST_DEVICE constexpr double uniform_of(std::uint64_t bits) {
  return static_cast<double>(bits >> 11) * 0x1.0p-53;
}

}  // namespace relpos
