#include "autograd/random.h"

#include <cmath>
#include <numbers>

namespace relpos {
namespace {
constexpr std::uint64_t rotl(std::uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
}  // namespace

Rng::Rng(std::uint64_t seed) {
  for (std::size_t i = 0; i < state_.size(); ++i) state_[i] = mix64(seed, i);
}

std::uint64_t Rng::next_u64() {
  const std::uint64_t result = rotl(state_[1] * 5, 7) * 9;
  const std::uint64_t t = state_[1] << 17;
  state_[2] ^= state_[0];
  state_[3] ^= state_[1];
  state_[1] ^= state_[2];
  state_[0] ^= state_[3];
  state_[2] ^= t;
  state_[3] = rotl(state_[3], 45);
  return result;
}

double Rng::uniform() { return static_cast<double>(next_u64() >> 11) * 0x1.0p-53; }

double Rng::normal() {
  const double u1 = 1.0 - uniform();  // (0, 1]
  const double u2 = uniform();
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
}

std::uint64_t Rng::below(std::uint64_t bound) {
  // Rejection sampling keeps the result unbiased.
  const std::uint64_t limit = bound == 0 ? 0 : (~std::uint64_t{0} / bound) * bound;
  std::uint64_t x;
  do x = next_u64();
  while (x >= limit && limit != 0);
  return bound == 0 ? 0 : x % bound;
}

Tensor randn(const Shape& shape, Rng& rng, DType dtype, double stddev) {
  Tensor t = Tensor::empty(shape, DType::f64);
  double* p = t.data<double>();
  for (std::int64_t i = 0; i < t.numel(); ++i) p[i] = rng.normal() * stddev;
  return t.to(dtype);
}

Tensor rand_uniform(const Shape& shape, Rng& rng, double low, double high, DType dtype) {
  Tensor t = Tensor::empty(shape, DType::f64);
  double* p = t.data<double>();
  for (std::int64_t i = 0; i < t.numel(); ++i) p[i] = low + (high - low) * rng.uniform();
  return t.to(dtype);
}

}  // namespace relpos
