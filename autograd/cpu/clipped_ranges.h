#pragma once
// Shaw's clipped distance splits a row of keys into three contiguous ranges:
// keys j < left_end all use bin 0 (rel <= -k), keys in [left_end, band_end) use
// bin j + band_offset (|rel| < k), and keys j >= band_end use bin 2k (rel >= k).
// Looping over the ranges instead of clamping every element lets the compiler
// vectorise the gathers and bin sums.
#include <algorithm>
#include <cstdint>

namespace relpos::cpu {

struct ClippedRanges {
  std::int64_t left_end, band_end, band_offset;
};

// qpos: the query's position; k: the clipping distance; k_len: keys in the row.
inline ClippedRanges clipped_ranges(std::int64_t qpos, std::int64_t k, std::int64_t k_len) {
  const std::int64_t left_end = std::clamp(qpos - k + 1, std::int64_t{0}, k_len);
  const std::int64_t band_end = std::max(left_end, std::clamp(qpos + k, std::int64_t{0}, k_len));
  return {left_end, band_end, k - qpos};
}

}  // namespace relpos::cpu
