// rope (Su et al.): q and k rotated by their absolute positions, rotate-half convention:
// dimension m is paired with m + D/2 and rotated by the angle p * inv_freq[m]. Optionally
// randomized positions in training (randomized_positions.h).
#include <algorithm>
#include <cmath>
#include <numeric>
#include <tuple>
#include <utility>

#include "autograd/error.h"
#include "autograd/ops/rotary.h"
#include "autograd/ops/shape.h"
#include "layers/position/randomized_positions.h"
#include "layers/position/registry.h"
#include "layers/position/sinusoid.h"

namespace relpos {
namespace {

class RotaryPosition final : public PositionScheme {
 public:
  RotaryPosition(std::int64_t head_dim, double base, std::int64_t randomized_max_len)
      : head_dim_(head_dim), base_(base), randomized_max_len_(randomized_max_len) {}

  Tensor rotate(const Tensor& x, std::int64_t start) const override {
    const std::int64_t len = x.size(2);
    const auto [cos_t, sin_t] =  // (L, D/2), on the host
        randomized_max_len_ > 0 && training()
            ? tables(window_positions(start, len, randomized_max_len_, true, position_seed_),
                     x.dtype())
            : angles(start, len, x.dtype());
    return rotary(x, cos_t.to(x.device()), sin_t.to(x.device()));
  }

 private:
  // cos and sin (P, D/2) of the given positions, in `dtype`.
  std::pair<Tensor, Tensor> tables(const std::vector<std::int64_t>& positions, DType dtype) const {
    const std::int64_t half = head_dim_ / 2, count = std::ssize(positions);
    const std::vector<double> inv = inverse_frequencies(head_dim_, base_);
    Tensor c = Tensor::empty({count, half}, DType::f64);
    Tensor s = Tensor::empty({count, half}, DType::f64);
    double* cd = c.data<double>();
    double* sd = s.data<double>();
    for (std::int64_t p = 0; p < count; ++p)
      for (std::int64_t m = 0; m < half; ++m) {
        const double angle = static_cast<double>(positions[p]) * inv[m];
        cd[p * half + m] = std::cos(angle);
        sd[p * half + m] = std::sin(angle);
      }
    return {c.to(dtype), s.to(dtype)};
  }

  // cos and sin (L, D/2) of positions start.. in `dtype`, from tables grown on demand.
  std::pair<Tensor, Tensor> angles(std::int64_t start, std::int64_t len, DType dtype) const {
    const std::int64_t end = start + len;
    if (!cos_cache_.defined() || cos_cache_.size(0) < end || cos_cache_.dtype() != dtype) {
      std::vector<std::int64_t> positions(static_cast<std::size_t>(
          std::max<std::int64_t>(end, 2 * (cos_cache_.defined() ? cos_cache_.size(0) : 0))));
      std::iota(positions.begin(), positions.end(), 0);
      std::tie(cos_cache_, sin_cache_) = tables(positions, dtype);
    }
    return {slice(cos_cache_, 0, start, end), slice(sin_cache_, 0, start, end)};
  }

  std::int64_t head_dim_;
  double base_;
  std::int64_t randomized_max_len_;
  mutable Tensor cos_cache_, sin_cache_;  // (P, D/2) for positions 0..P-1
};

void validate_rope(const PositionConfig& c, const SchemeContext& context) {
  const ModelDims& dims = context.dims;
  require(dims.head_dim() % 2 == 0,
          "model.position.scheme=rope needs an even head dimension, got model.d_model={} / "
          "model.n_heads={} = {}",
          dims.d_model, dims.n_heads, dims.head_dim());
  const auto base = c.get<double>("rope_base");
  require(base > 1.0, "model.position.rope_base must be > 1, got {}", base);
  validate_randomized_max_len(c, context, "rope");
}

const bool registered = register_position_scheme({
    .name = "rope",
    .order = 70,
    .keys = {{"rope_base", 10000.0, "base of the rotation frequencies", {}},
             randomized_max_len_key()},
    .validate = validate_rope,
    .build = [](const PositionConfig& c, const ModelDims& dims,
                Rng&) -> std::unique_ptr<PositionScheme> {
      return std::make_unique<RotaryPosition>(dims.head_dim(), c.get<double>("rope_base"),
                                              c.get<std::int64_t>("randomized_max_len"));
    },
    .test_variants = {{}, {{"rope_base", 100.0}}, {{"randomized_max_len", std::int64_t{1024}}}},
    .reference_names = {{"base", "rope_base"}},
});

}  // namespace
}  // namespace relpos
