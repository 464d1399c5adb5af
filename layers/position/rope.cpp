// rope (Su et al.): q and k rotated by their absolute positions, rotate-half convention:
// dimension m is paired with m + D/2 and rotated by the angle p * inv_freq[m]. Optionally
// randomized positions in training (randomized_positions.h), or a context extension at
// evaluation and fine-tuning (rope_scaling.h).
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
#include "layers/position/rope_scaling.h"

namespace relpos {
namespace {

class RotaryPosition final : public PositionScheme {
 public:
  RotaryPosition(std::int64_t head_dim, double base, std::int64_t randomized_max_len,
                 RopeScaling scaling)
      : head_dim_(head_dim),
        base_(base),
        randomized_max_len_(randomized_max_len),
        scaling_(std::move(scaling)) {}

  Tensor rotate(const Tensor& x, std::int64_t start) const override {
    const std::int64_t len = x.size(2);
    const auto [cos_t, sin_t] =  // (L, D/2), on the host
        randomized_max_len_ > 0 && training()
            ? tables(window_positions(start, len, randomized_max_len_, true, position_seed_),
                     rope_frequencies(scaling_, head_dim_, base_, 0), x.dtype())
            : angles(start, len, x.dtype());
    return rotary(x, cos_t.to(x.device()), sin_t.to(x.device()));
  }

  bool rotation_depends_on_length() const override { return scaling_.depends_on_length(); }

 private:
  // cos and sin (P, D/2) of the given positions, times the frequencies' magnitude, in `dtype`.
  std::pair<Tensor, Tensor> tables(const std::vector<std::int64_t>& positions,
                                   const RopeFrequencies& frequencies, DType dtype) const {
    const std::int64_t half = head_dim_ / 2, count = std::ssize(positions);
    const std::vector<double>& inv = frequencies.inverse;
    Tensor c = Tensor::empty({count, half}, DType::f64);
    Tensor s = Tensor::empty({count, half}, DType::f64);
    double* cd = c.data<double>();
    double* sd = s.data<double>();
    for (std::int64_t p = 0; p < count; ++p)
      for (std::int64_t m = 0; m < half; ++m) {
        const double angle = static_cast<double>(positions[p]) * inv[m];
        cd[p * half + m] = frequencies.magnitude * std::cos(angle);
        sd[p * half + m] = frequencies.magnitude * std::sin(angle);
      }
    return {c.to(dtype), s.to(dtype)};
  }

  // cos and sin (L, D/2) of positions start.. in `dtype`, from tables grown on demand; under
  // dynamic scaling, computed for the sequence length start + L each time.
  std::pair<Tensor, Tensor> angles(std::int64_t start, std::int64_t len, DType dtype) const {
    const std::int64_t end = start + len;
    if (scaling_.depends_on_length()) {
      std::vector<std::int64_t> positions(static_cast<std::size_t>(len));
      std::iota(positions.begin(), positions.end(), start);
      return tables(positions, rope_frequencies(scaling_, head_dim_, base_, end), dtype);
    }
    if (!cos_cache_.defined() || cos_cache_.size(0) < end || cos_cache_.dtype() != dtype) {
      std::vector<std::int64_t> positions(static_cast<std::size_t>(
          std::max<std::int64_t>(end, 2 * (cos_cache_.defined() ? cos_cache_.size(0) : 0))));
      std::iota(positions.begin(), positions.end(), 0);
      std::tie(cos_cache_, sin_cache_) =
          tables(positions, rope_frequencies(scaling_, head_dim_, base_, 0), dtype);
    }
    return {slice(cos_cache_, 0, start, end), slice(sin_cache_, 0, start, end)};
  }

  std::int64_t head_dim_;
  double base_;
  std::int64_t randomized_max_len_;
  RopeScaling scaling_;
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
  const RopeScaling scaling = rope_scaling_of(c);
  validate_rope_scaling(scaling);
  require(scaling.kind == "none" || c.get<std::int64_t>("randomized_max_len") == 0,
          "model.position.rope_scaling.kind={} cannot be combined with "
          "model.position.randomized_max_len={} (both change the positions RoPE sees)",
          scaling.kind, c.get<std::int64_t>("randomized_max_len"));
  require((scaling.kind != "ntk" && scaling.kind != "dynamic_ntk") || dims.head_dim() > 2,
          "model.position.rope_scaling.kind={} needs a head dimension > 2, got {}", scaling.kind,
          dims.head_dim());
}

const bool registered = register_position_scheme({
    .name = "rope",
    .order = 70,
    .keys =
        {{"rope_base", 10000.0, "base of the rotation frequencies", {}},
         randomized_max_len_key(),
         {"rope_scaling.kind",
          std::string("none"),
          "context extension (docs/position-schemes.md): none, linear (position "
          "interpolation), ntk, dynamic_ntk or yarn; changeable on resume, at eval "
          "(--set) and with --init-from",
          {},
          rope_scaling_kinds()},
         {"rope_scaling.factor", 1.0, "s: the extension ratio (target length / original_len)", {}},
         {"rope_scaling.original_len",
          std::int64_t{0},
          "the length the model was trained at (needed by every kind but none)",
          {}},
         {"rope_scaling.beta_fast",
          32.0,
          "yarn: frequencies turning more often than this over original_len are kept",
          {}},
         {"rope_scaling.beta_slow",
          1.0,
          "yarn: frequencies turning less often than this over original_len are interpolated",
          {}}},
    .validate = validate_rope,
    .build = [](const PositionConfig& c, const ModelDims& dims,
                Rng&) -> std::unique_ptr<PositionScheme> {
      return std::make_unique<RotaryPosition>(dims.head_dim(), c.get<double>("rope_base"),
                                              c.get<std::int64_t>("randomized_max_len"),
                                              rope_scaling_of(c));
    },
    // The scaled variants extend from original_len 4 so that the tests' lengths (about 10)
    // lie beyond it; yarn with base 100 so that its ramp spans pairs at head dimension 4-8.
    .test_variants = {{},
                      {{"rope_base", 100.0}},
                      {{"randomized_max_len", std::int64_t{1024}}},
                      {{"rope_scaling.kind", std::string("linear")},
                       {"rope_scaling.factor", 3.0},
                       {"rope_scaling.original_len", std::int64_t{4}}},
                      {{"rope_scaling.kind", std::string("ntk")},
                       {"rope_scaling.factor", 3.0},
                       {"rope_scaling.original_len", std::int64_t{4}}},
                      {{"rope_scaling.kind", std::string("dynamic_ntk")},
                       {"rope_scaling.factor", 2.0},
                       {"rope_scaling.original_len", std::int64_t{4}}},
                      {{"rope_base", 100.0},
                       {"rope_scaling.kind", std::string("yarn")},
                       {"rope_scaling.factor", 3.0},
                       {"rope_scaling.original_len", std::int64_t{40}}}},
    .reference_names = {{"base", "rope_base"},
                        {"scaling", "rope_scaling.kind"},
                        {"factor", "rope_scaling.factor"},
                        {"original_len", "rope_scaling.original_len"}},
});

}  // namespace
}  // namespace relpos
