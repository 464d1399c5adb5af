#pragma once
// Sinusoid tables shared by the absolute, Transformer-XL and RoPE schemes:
// inv_freq[m] = 1 / 10000^(2m/d), angle = p * inv_freq[m] (docs/position-schemes.md).
#include <vector>

#include "autograd/tensor.h"
#include "layers/module.h"

namespace relpos {

// The sinusoidal scheme scales the table (RMS 1/sqrt(2)) to the token embeddings' initial
// scale, so that neither drowns the other at the start of training (Vaswani et al. reach
// the same balance by multiplying the embeddings by sqrt(d_model)).
inline constexpr double kSinusoidScale = kEmbeddingInitStd * 1.4142135623730951;

std::vector<double> inverse_frequencies(std::int64_t dim, double base = 10000.0);

// (positions.size(), dim): interleaved sin/cos (Vaswani et al.): [sin, cos, sin, cos, ...].
Tensor interleaved_sinusoids(const std::vector<double>& positions, std::int64_t dim, DType dtype);
// (positions.size(), dim): all sines, then all cosines (Transformer-XL).
Tensor concatenated_sinusoids(const std::vector<double>& positions, std::int64_t dim, DType dtype);

}  // namespace relpos
