#pragma once
// Where the relative-position terms of one attention row come from, for every backend
// (see RelativeShape in autograd/backend.h). Attention row r (of B·H·Lq rows) is query
// i = r % Lq of head (r / Lq) % H, at position qpos = Lk - Lq + i among the Lk keys (the
// queries are the last Lq positions); key j lies at distance index j + offset of a
// (H, Lq+Lk-1) distance table, offset = Lq - 1 - i. Shaw's bin of key j is
// clip(j - qpos, -k, k) + k, one of 2k+1.
#include <cstdint>

#include "autograd/kernel_math/host_device.h"

namespace relpos::kernel_math {

// Query i's position among the keys, and the distance index of key 0 for it.
RELPOS_HOST_DEVICE inline std::int64_t query_position(std::int64_t i, std::int64_t q_len,
                                                      std::int64_t k_len) {
  return k_len - q_len + i;
}
RELPOS_HOST_DEVICE inline std::int64_t distance_offset(std::int64_t i, std::int64_t q_len) {
  return q_len - 1 - i;
}

struct RelativeRow {
  std::int64_t i, head, offset, qpos;
  std::int64_t limit;  // keys j < limit are visible
};

// `causal`: keys after the query are hidden (a causal mask, or Transformer-XL's shifted
// term, which is valid on the causal part only).
RELPOS_HOST_DEVICE inline RelativeRow relative_row(std::int64_t r, std::int64_t q_len,
                                                   std::int64_t k_len, std::int64_t heads,
                                                   bool causal) {
  RelativeRow g;
  g.i = r % q_len;
  g.head = (r / q_len) % heads;
  g.offset = distance_offset(g.i, q_len);
  g.qpos = query_position(g.i, q_len, k_len);
  g.limit = causal ? g.qpos + 1 : k_len;
  return g;
}

RELPOS_HOST_DEVICE inline std::int64_t clamp_index(std::int64_t v, std::int64_t lo,
                                                   std::int64_t hi) {
  return v < lo ? lo : (v > hi ? hi : v);
}

// Shaw's bin of key j for a query at qpos: clip(j - qpos, -k, k) + k.
RELPOS_HOST_DEVICE inline std::int64_t clipped_bin(std::int64_t j, std::int64_t qpos,
                                                   std::int64_t k) {
  return clamp_index(j - qpos, -k, k) + k;
}

// The keys j in [first, last] (inclusive, empty when first > last) whose bin is c, among
// the keys j < keys: bin 0 takes every j <= qpos - k, bin 2k every j >= qpos + k, any
// other bin the single j = qpos + c - k.
struct KeyRange {
  std::int64_t first, last;
};

RELPOS_HOST_DEVICE inline KeyRange keys_of_bin(std::int64_t c, std::int64_t qpos, std::int64_t k,
                                               std::int64_t keys) {
  const std::int64_t exact = qpos + c - k;
  const std::int64_t first = c == 0 ? 0 : exact;
  const std::int64_t last = c == 2 * k ? keys - 1 : exact;
  return {first < 0 ? 0 : first, last > keys - 1 ? keys - 1 : last};
}

// The same bins as three contiguous ranges of a row of k_len keys: keys j < left_end
// use bin 0 (rel <= -k), keys in [left_end, band_end) bin j + band_offset (|rel| < k),
// keys j >= band_end bin 2k (rel >= k). Loops over the ranges, instead of clamping every
// key, vectorise.
struct ClippedRanges {
  std::int64_t left_end, band_end, band_offset;
};

RELPOS_HOST_DEVICE inline ClippedRanges clipped_ranges(std::int64_t qpos, std::int64_t k,
                                                       std::int64_t k_len) {
  const std::int64_t left_end = clamp_index(qpos - k + 1, 0, k_len);
  const std::int64_t band = clamp_index(qpos + k, 0, k_len);
  return {left_end, band > left_end ? band : left_end, k - qpos};
}

}  // namespace relpos::kernel_math
