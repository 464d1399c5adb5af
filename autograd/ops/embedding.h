#pragma once
// Differentiable embedding lookup (row gather).
#include "autograd/tensor.h"

namespace relpos {

// table: (V, D) floating; indices: i64, any shape, each in [0, V).
// Returns indices.shape + [D] with out[..., :] = table[indices[...], :].
// The gradient flows to the table only (a deterministic scatter-add).
// An index outside [0, V) is a UsageError naming the value, its position and
// the table shape.
Tensor embedding(const Tensor& table, const Tensor& indices);

}  // namespace relpos
