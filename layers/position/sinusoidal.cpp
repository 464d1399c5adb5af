// sinusoidal: fixed interleaved sin/cos positions (Vaswani et al.) times an amplitude
// (model.position.sinusoid_scale) added to the token embeddings; optionally randomized
// positions in training (randomized_positions.h).
#include <cmath>

#include "autograd/error.h"
#include "autograd/ops/elementwise.h"
#include "layers/position/randomized_positions.h"
#include "layers/position/registry.h"
#include "layers/position/sinusoid.h"

namespace relpos {
namespace {

class SinusoidalPosition final : public PositionScheme {
 public:
  SinusoidalPosition(std::int64_t d_model, std::int64_t randomized_max_len, double scale)
      : d_model_(d_model), randomized_max_len_(randomized_max_len), scale_(scale) {}

  Tensor embed(const Tensor& x, std::int64_t start) const override {
    const std::vector<std::int64_t> window =
        window_positions(start, x.size(1), randomized_max_len_, training(), position_seed_);
    const std::vector<double> positions(window.begin(), window.end());
    Tensor table = interleaved_sinusoids(positions, d_model_, x.dtype()).to(x.device());
    return add(x, mul_scalar(table, scale_));  // (B, L, d) + (L, d)
  }

 private:
  std::int64_t d_model_;
  std::int64_t randomized_max_len_;
  double scale_;
};

const bool registered = register_position_scheme({
    .name = "sinusoidal",
    .order = 10,
    .keys = {randomized_max_len_key(),
             {"sinusoid_scale",
              kSinusoidScale,
              "amplitude of the sin/cos table added to the token embeddings; the default, "
              "sqrt(2) x 0.02, gives it the token embeddings' initial scale",
              {}}},
    .validate =
        [](const PositionConfig& c, const SchemeContext& context) {
          require(context.dims.d_model % 2 == 0,
                  "model.position.scheme=sinusoidal needs an even model.d_model, got {}",
                  context.dims.d_model);
          validate_randomized_max_len(c, context, "sinusoidal");
          const auto scale = c.get<double>("sinusoid_scale");
          require(std::isfinite(scale) && scale > 0.0,
                  "model.position.sinusoid_scale must be finite and > 0, got {}", scale);
        },
    .build = [](const PositionConfig& c, const ModelDims& dims,
                Rng&) -> std::unique_ptr<PositionScheme> {
      return std::make_unique<SinusoidalPosition>(
          dims.d_model, c.get<std::int64_t>("randomized_max_len"), c.get<double>("sinusoid_scale"));
    },
    .test_variants = {{}, {{"randomized_max_len", std::int64_t{12}}}, {{"sinusoid_scale", 1.0}}},
    .absolute = true,
});

}  // namespace
}  // namespace relpos
