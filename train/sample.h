#pragma once
// Text generation from a language model: temperature and top-k sampling from a
// seeded generator, with the KV cache or by full recompute (both give the same
// tokens for the same seed).
#include <cstdint>
#include <vector>

#include "layers/transformer.h"

namespace relpos {

struct SampleOptions {
  std::int64_t tokens = 200;
  double temperature = 1.0;  // 0: greedy
  std::int64_t top_k = 0;    // 0: the whole vocabulary
  std::uint64_t seed = 0;
  bool use_cache = true;
};

// Returns the generated tokens (without the prompt). A bidirectional model
// (model.causal: false) cannot generate: UsageError.
std::vector<std::int64_t> generate(TransformerLM& model, const std::vector<std::int64_t>& prompt,
                                   const SampleOptions& options);

}  // namespace relpos
