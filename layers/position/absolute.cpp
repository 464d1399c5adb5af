#include "layers/position/absolute.h"

#include <numeric>

#include "autograd/error.h"
#include "autograd/ops/elementwise.h"
#include "autograd/ops/shape.h"
#include "layers/position/sinusoid.h"

namespace relpos {

Tensor SinusoidalPosition::embed(const Tensor& x, std::int64_t start) const {
  std::vector<double> positions(static_cast<std::size_t>(x.size(1)));
  std::iota(positions.begin(), positions.end(), static_cast<double>(start));
  Tensor table = interleaved_sinusoids(positions, d_model_, x.dtype()).to(x.device());
  return add(x, mul_scalar(table, kSinusoidScale));  // (B, L, d) + (L, d)
}

LearnedPosition::LearnedPosition(std::int64_t max_len, std::int64_t d_model, Rng& rng) {
  table_ = register_parameter("table", normal_init({max_len, d_model}, rng, kEmbeddingInitStd), false);
}

Tensor LearnedPosition::embed(const Tensor& x, std::int64_t start) const {
  const std::int64_t len = x.size(1), max_len = table_.size(0);
  require(start + len <= max_len,
          "learned positions: position {} is beyond model.position.max_len={} (learned "
          "absolute positions cannot extrapolate)",
          start + len - 1, max_len);
  return add(x, slice(table_, 0, start, start + len));  // (B, L, d) + (L, d)
}

}  // namespace relpos
