#pragma once
// Randomized positions (Ruoss et al. 2023) for the absolute and rotary schemes
// (sinusoidal, learned, rope): in training, a window of L positions is given a sorted
// random subset of [0, randomized_max_len) instead of 0..L-1, so that the model meets
// large positions without long sequences; out of training the positions are 0..L-1.
// One draw per optimizer step: the model passes its dropout seed to the scheme
// (TransformerLM::set_dropout_seed), so every sequence of the step's batch shares the
// subset and a resumed run draws the same ones.
#include <cstdint>
#include <string_view>
#include <vector>

#include "autograd/random.h"
#include "layers/position/registry.h"

namespace relpos {

// The largest randomized_max_len accepted: a draw walks the whole range.
inline constexpr std::int64_t kMaxRandomizedLen = std::int64_t{1} << 24;

// model.position.randomized_max_len, registered by each scheme that offers the option.
SchemeKey randomized_max_len_key();

// Throws a UsageError unless the key is 0 (off) or in [data.seq_len, kMaxRandomizedLen].
void validate_randomized_max_len(const PositionConfig& config, const SchemeContext& context,
                                 std::string_view scheme);

// `count` distinct positions of [0, max_len) in increasing order, every such subset
// equally likely (selection sampling: each position is taken with probability
// still needed / still left).
std::vector<std::int64_t> sorted_random_positions(std::int64_t count, std::int64_t max_len,
                                                  Rng& rng);

// The positions of the window start..start+len-1. Ordinary (start, start+1, ...) unless
// `randomized` and max_len > 0; then entries start.. of one draw of start+len positions
// made from `seed` alone, so that q, k and every layer of a forward pass agree. A window
// end beyond max_len is a UsageError.
std::vector<std::int64_t> window_positions(std::int64_t start, std::int64_t len,
                                           std::int64_t max_len, bool randomized,
                                           std::uint64_t seed);

}  // namespace relpos
