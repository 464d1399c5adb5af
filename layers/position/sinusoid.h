#pragma once
// Sinusoid tables shared by the absolute, Transformer-XL and RoPE schemes:
// inv_freq[m] = 1 / 10000^(2m/d), angle = p * inv_freq[m] (docs/position-schemes.md).
#include <vector>

#include "autograd/tensor.h"

namespace relpos {

std::vector<double> inverse_frequencies(std::int64_t dim, double base = 10000.0);

// (positions.size(), dim): interleaved sin/cos (Vaswani et al.): [sin, cos, sin, cos, ...].
Tensor interleaved_sinusoids(const std::vector<double>& positions, std::int64_t dim, DType dtype);
// (positions.size(), dim): all sines, then all cosines (Transformer-XL).
Tensor concatenated_sinusoids(const std::vector<double>& positions, std::int64_t dim, DType dtype);

}  // namespace relpos
