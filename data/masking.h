#pragma once
// The masked-token objective (BERT-style) for bidirectional models
// (model.causal: false). Such a model sees every input position, including the
// next token, so it is trained to recover hidden tokens instead: inputs and
// targets are the same window, some inputs are hidden and only those are scored.
// docs/data.md describes the objective.
#include <cstdint>

#include "autograd/random.h"
#include "data/batch.h"
#include "data/tokenizer.h"

namespace relpos {

// The token a hidden input is replaced by: one past the byte values, so a
// bidirectional model needs model.vocab >= kMaskedVocabSize.
inline constexpr std::int64_t kMaskToken = kByteVocabSize;
inline constexpr std::int64_t kMaskedVocabSize = kByteVocabSize + 1;

// How a chosen position's input is corrupted (BERT's split).
inline constexpr double kMaskTokenShare = 0.8;   // replaced by kMaskToken
inline constexpr double kRandomByteShare = 0.1;  // replaced by a uniform byte in [0, 256)
                                                 // the remaining 0.1: left unchanged

// Turns `batch` into a masked-token batch over its input window, in place.
// Each position is chosen independently with probability mask_prob, in (0, 1);
// a row where none was chosen gets one uniformly chosen position, so every row
// is scored. A chosen position's target is its original input token, every
// other target is kIgnoreTarget (the incoming targets are discarded); its input
// is corrupted with the shares above. All draws come from `rng`, row by row.
void mask_tokens(Batch& batch, double mask_prob, Rng& rng);

}  // namespace relpos
