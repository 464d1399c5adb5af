#pragma once
// FIRE's bias (autograd/fire_terms.h) as an (H, Lq, Lk) tensor built from differentiable
// ops: the fused and composed attention paths add it to their (Lq, Lk) logits; the flash
// path never forms it.
#include <cstdint>

#include "autograd/fire_terms.h"

namespace relpos {

// Queries are the last q_len of k_len positions; future keys (j > i) get the value at
// distance 0 (they are masked by the caller).
Tensor fire_bias(const FireTerms& fire, std::int64_t q_len, std::int64_t k_len);

}  // namespace relpos
