#pragma once
// The band of keys a query may see beyond the causal mask. Chunked (streaming)
// attention: positions are grouped into chunks of `size` counted from absolute
// position 0, and a query sees the keys of its own chunk and of the `left_chunks`
// chunks before it (every earlier chunk when -1). A sliding window of `window`
// (model.attention_window): the query at key index p sees keys p - window < j (with
// the causal mask, j <= p). The flash kernel applies the band per tile, skipping
// tiles outside it; the fused and composed paths apply it as a mask.
#include <algorithm>
#include <cstdint>
#include <limits>

namespace relpos {

struct AttentionChunk {
  std::int64_t size = 0;          // positions per chunk; 0: no chunking
  std::int64_t left_chunks = -1;  // earlier chunks visible to a query; -1: all
  std::int64_t key_origin = 0;    // absolute position of key 0 (cached or memory keys first)
  std::int64_t window = 0;        // sliding window: keys within this distance; 0: no window

  bool enabled() const { return size > 0; }
  // Whether some keys are hidden beyond the causal mask (a chunk band or a window).
  bool banded() const { return enabled() || window > 0; }
  // For a query at key index p (absolute position key_origin + p): its visible keys
  // are [key_begin(p), key_end(p)), before clamping to the keys present.
  std::int64_t key_begin(std::int64_t p) const {
    const std::int64_t in_window = window > 0 ? std::max<std::int64_t>(0, p - window + 1) : 0;
    if (!enabled() || left_chunks < 0) return in_window;
    const std::int64_t first_chunk = (key_origin + p) / size - left_chunks;
    return std::max({in_window, first_chunk * size - key_origin, std::int64_t{0}});
  }
  std::int64_t key_end(std::int64_t p) const {
    if (!enabled()) return std::numeric_limits<std::int64_t>::max();
    return ((key_origin + p) / size + 1) * size - key_origin;
  }
};

}  // namespace relpos
