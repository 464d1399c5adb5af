#pragma once
// Exact top-K selection along the last axis (no approximate index), for retrieval
// from a memory: the scores come from one GEMM of the queries against every key.
#include <cstdint>

#include "autograd/tensor.h"

namespace relpos {

// scores (..., S), f32 or f64 -> u8 (..., S): 1 where the entry is NOT among the k
// largest of its row (ties go to the lower index), 0 for the k selected entries.
// With k >= S nothing is hidden. Not differentiable: it only picks which entries a
// masked softmax sees; gradients flow through the scores themselves.
Tensor outside_top_k(const Tensor& scores, std::int64_t k);

}  // namespace relpos
