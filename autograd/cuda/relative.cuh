#pragma once
// Index arithmetic shared by the relative-position kernels (see backend.h):
// attention row r is query i = r % Lq at position qpos = Lk - Lq + i, and key j
// lies at distance index j + offset, offset = Lq - 1 - i.
#include <cstdint>

namespace relpos::cuda {

__device__ inline std::int64_t clamp_index(std::int64_t v, std::int64_t lo, std::int64_t hi) {
  return v < lo ? lo : (v > hi ? hi : v);
}

// Shaw's bin of key j for a query at qpos: clip(j - qpos, -k, k) + k.
__device__ inline std::int64_t clipped_bin(std::int64_t j, std::int64_t qpos, std::int64_t k) {
  return clamp_index(j - qpos, -k, k) + k;
}

// The keys j in [first, last] (inclusive, empty when first > last) whose bin is
// c, among the keys j < keys: bin 0 takes every j <= qpos - k, bin 2k every
// j >= qpos + k, any other bin the single j = qpos + c - k.
struct KeyRange {
  std::int64_t first, last;
};

__device__ inline KeyRange keys_of_bin(std::int64_t c, std::int64_t qpos, std::int64_t k,
                                       std::int64_t keys) {
  const std::int64_t exact = qpos + c - k;
  const std::int64_t first = c == 0 ? 0 : exact;
  const std::int64_t last = c == 2 * k ? keys - 1 : exact;
  return {first < 0 ? 0 : first, last > keys - 1 ? keys - 1 : last};
}

}  // namespace relpos::cuda
