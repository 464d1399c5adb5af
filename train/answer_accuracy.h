#pragma once
// Next-token accuracy and sequence-level exact match on the scored (answer) positions of
// a batch: the metrics of the synthetic tasks (docs/data.md, "Accuracy").
#include <cstdint>

#include "autograd/tensor.h"

namespace relpos {

struct AnswerCounts {
  std::int64_t correct = 0;  // scored positions whose arg-max logit is the target
  std::int64_t scored = 0;   // positions whose target is not kIgnoreTarget
  std::int64_t exact = 0;    // rows with at least one scored position, all of them correct
  std::int64_t rows = 0;     // rows with at least one scored position

  void add(const AnswerCounts& other);
  double accuracy() const;     // correct / scored; NaN when nothing is scored
  double exact_match() const;  // exact / rows; NaN when no row is scored
};

// Counts one batch. logits: (B, L, V) floating, any device; targets: i64 (B, L) on the CPU.
// The prediction is the first index of the largest logit.
AnswerCounts count_answers(const Tensor& logits, const Tensor& targets);

}  // namespace relpos
