#include "layers/position/sinusoid.h"

#include <cmath>

#include "autograd/error.h"

namespace relpos {

std::vector<double> inverse_frequencies(std::int64_t dim, double base) {
  require(dim > 0 && dim % 2 == 0, "sinusoids need an even dimension, got {}", dim);
  std::vector<double> inv(static_cast<std::size_t>(dim / 2));
  for (std::size_t m = 0; m < inv.size(); ++m)
    inv[m] = 1.0 / std::pow(base, (2.0 * static_cast<double>(m)) / static_cast<double>(dim));
  return inv;
}

namespace {
Tensor sinusoids(const std::vector<double>& positions, std::int64_t dim, DType dtype,
                 bool interleaved) {
  const std::vector<double> inv = inverse_frequencies(dim);
  const auto half = static_cast<std::int64_t>(inv.size());
  Tensor table = Tensor::empty({static_cast<std::int64_t>(positions.size()), dim}, DType::f64);
  double* t = table.data<double>();
  for (std::size_t p = 0; p < positions.size(); ++p) {
    double* row = t + static_cast<std::int64_t>(p) * dim;
    for (std::int64_t m = 0; m < half; ++m) {
      const double angle = positions[p] * inv[m];
      row[interleaved ? 2 * m : m] = std::sin(angle);
      row[interleaved ? 2 * m + 1 : half + m] = std::cos(angle);
    }
  }
  return table.to(dtype);
}
}  // namespace

Tensor interleaved_sinusoids(const std::vector<double>& positions, std::int64_t dim, DType dtype) {
  return sinusoids(positions, dim, dtype, true);
}

Tensor concatenated_sinusoids(const std::vector<double>& positions, std::int64_t dim, DType dtype) {
  return sinusoids(positions, dim, dtype, false);
}

}  // namespace relpos
