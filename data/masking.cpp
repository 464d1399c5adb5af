#include "data/masking.h"

#include "autograd/error.h"

namespace relpos {
namespace {

// Hides one input position: its target becomes the original token.
void choose(std::int64_t& input, std::int64_t& target, Rng& rng) {
  target = input;
  const double corruption = rng.uniform();
  if (corruption < kMaskTokenShare) {
    input = kMaskToken;
  } else if (corruption < kMaskTokenShare + kRandomByteShare) {
    input = static_cast<std::int64_t>(rng.below(kByteVocabSize));
  }
}

}  // namespace

void mask_tokens(Batch& batch, double mask_prob, Rng& rng) {
  require(mask_prob > 0.0 && mask_prob < 1.0, "mask_tokens: mask_prob must be in (0, 1), got {}",
          mask_prob);
  require(batch.inputs.dim() == 2 && batch.inputs.shape() == batch.targets.shape(),
          "mask_tokens: inputs {} and targets {} must both be (B, L)",
          to_string(batch.inputs.shape()), to_string(batch.targets.shape()));
  const std::int64_t rows = batch.inputs.size(0);
  const std::int64_t seq_len = batch.inputs.size(1);
  require(seq_len >= 1, "mask_tokens: rows need at least one position, got (B, L) = {}",
          to_string(batch.inputs.shape()));
  for (std::int64_t row = 0; row < rows; ++row) {
    std::int64_t* inputs = batch.inputs.data<std::int64_t>() + row * seq_len;
    std::int64_t* targets = batch.targets.data<std::int64_t>() + row * seq_len;
    bool any_chosen = false;
    for (std::int64_t t = 0; t < seq_len; ++t) {
      targets[t] = kIgnoreTarget;
      if (rng.uniform() < mask_prob) {
        choose(inputs[t], targets[t], rng);
        any_chosen = true;
      }
    }
    if (!any_chosen) {
      const auto t = static_cast<std::int64_t>(rng.below(static_cast<std::uint64_t>(seq_len)));
      choose(inputs[t], targets[t], rng);
    }
  }
}

}  // namespace relpos
