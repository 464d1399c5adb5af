#pragma once
// Dynamic chunk training (model.attention_chunk.dynamic, docs/streaming.md): each
// training batch attends in chunks of a size drawn uniformly from 1..max_size. The
// draw depends on (train.seed, step, micro-batch) alone, like the dropout masks, so
// a resumed run draws the same sizes and stays bit-exact without saved state.
#include <cstdint>

#include "autograd/counter_hash.h"
#include "autograd/random.h"

namespace relpos {

inline std::int64_t dynamic_chunk_size(std::uint64_t seed, std::int64_t step, std::int64_t micro,
                                       std::int64_t max_size) {
  Rng rng(
      mix64(mix64(seed, static_cast<std::uint64_t>(step) + 5), static_cast<std::uint64_t>(micro)));
  return 1 + static_cast<std::int64_t>(rng.below(static_cast<std::uint64_t>(max_size)));
}

}  // namespace relpos
