#pragma once
// Differentiable losses.
#include <cstdint>

#include "autograd/tensor.h"

namespace relpos {

enum class Reduction { mean, sum, none };

// Softmax cross-entropy over the last axis of logits.
//   logits:  (..., C) floating
//   targets: (...) i64, each in [0, C) or equal to ignore_index
// Per position: loss = logsumexp(logits) - logits[target], 0 where ignored.
// Reduction::none returns the per-position losses (targets' shape); sum adds
// them; mean divides the sum by the number of non-ignored targets. When every
// target is ignored, mean returns 0 (PyTorch returns NaN) so that a batch made
// only of padding does not poison training; its gradient is 0 as well.
// A target outside [0, C) that is not ignore_index is a UsageError naming the
// value and its position. Targets are not differentiable.
Tensor cross_entropy(const Tensor& logits, const Tensor& targets, std::int64_t ignore_index = -100,
                     Reduction reduction = Reduction::mean);

}  // namespace relpos
