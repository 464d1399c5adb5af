#pragma once
// Text generation from a language model: temperature and top-k sampling from a
// seeded generator, with the KV cache or by full recompute (both give the same
// tokens for the same seed).
#include <cstdint>
#include <functional>
#include <vector>

#include "layers/transformer.h"

namespace relpos {

// The most tokens one sample may generate: the KV cache (or, without it, the context
// recomputed every token) grows with each one.
inline constexpr std::int64_t kMaxSampleTokens = std::int64_t{1} << 20;

struct SampleOptions {
  std::int64_t tokens = 200;  // in [0, kMaxSampleTokens]
  double temperature = 1.0;   // 0: greedy
  std::int64_t top_k = 0;     // 0: the whole vocabulary
  std::uint64_t seed = 0;
  bool use_cache = true;
};

// Without the KV cache, each token recomputes the whole context, padded (with its last
// token) to a multiple of kRecomputeBucket, so that sampling N tokens multiplies about
// N / kRecomputeBucket shapes of matrices (each a cached oneDNN primitive), not N. Causal
// attention keeps the padding out of every real position; the padded length stays
// within the model's max_positions(), and a rotation that depends on the length (dynamic
// NTK) is never padded.
inline constexpr std::int64_t kRecomputeBucket = 64;
std::int64_t recompute_length(const TransformerLM& model, std::int64_t length);

// Returns the generated tokens (without the prompt), handing each to `on_token` as it
// is drawn (when given). A bidirectional model (model.causal: false) cannot generate,
// and logits that are not finite (weights that overflow) stop it: UsageError.
std::vector<std::int64_t> generate(TransformerLM& model, const std::vector<std::int64_t>& prompt,
                                   const SampleOptions& options,
                                   const std::function<void(std::int64_t)>& on_token = {});

}  // namespace relpos
