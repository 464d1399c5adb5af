#pragma once
// Differentiable, reproducible dropout.
#include <cstdint>

#include "autograd/tensor.h"

namespace relpos {

// Zeroes each element with probability p and scales the rest by 1/(1-p).
// Element i (row-major over x's shape) is kept when the uniform number drawn
// from mix64(seed, offset + i) is >= p, so the same (seed, offset) gives the
// same mask on every device. Returns x itself when !training or p == 0.
// p must be in [0, 1). The backward multiplies by the same mask.
Tensor dropout(const Tensor& x, double p, std::uint64_t seed, std::uint64_t offset, bool training);

}  // namespace relpos
