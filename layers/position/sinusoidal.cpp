// sinusoidal: fixed interleaved sin/cos positions (Vaswani et al.) added to the token
// embeddings; optionally randomized positions in training (randomized_positions.h).

#include "autograd/error.h"
#include "autograd/ops/elementwise.h"
#include "layers/position/randomized_positions.h"
#include "layers/position/registry.h"
#include "layers/position/sinusoid.h"

namespace relpos {
namespace {

class SinusoidalPosition final : public PositionScheme {
 public:
  SinusoidalPosition(std::int64_t d_model, std::int64_t randomized_max_len)
      : d_model_(d_model), randomized_max_len_(randomized_max_len) {}

  Tensor embed(const Tensor& x, std::int64_t start) const override {
    const std::vector<std::int64_t> window =
        window_positions(start, x.size(1), randomized_max_len_, training(), position_seed_);
    const std::vector<double> positions(window.begin(), window.end());
    Tensor table = interleaved_sinusoids(positions, d_model_, x.dtype()).to(x.device());
    return add(x, mul_scalar(table, kSinusoidScale));  // (B, L, d) + (L, d)
  }

 private:
  std::int64_t d_model_;
  std::int64_t randomized_max_len_;
};

const bool registered = register_position_scheme({
    .name = "sinusoidal",
    .order = 10,
    .keys = {randomized_max_len_key()},
    .validate =
        [](const PositionConfig& c, const SchemeContext& context) {
          require(context.dims.d_model % 2 == 0,
                  "model.position.scheme=sinusoidal needs an even model.d_model, got {}",
                  context.dims.d_model);
          validate_randomized_max_len(c, context, "sinusoidal");
        },
    .build = [](const PositionConfig& c, const ModelDims& dims,
                Rng&) -> std::unique_ptr<PositionScheme> {
      return std::make_unique<SinusoidalPosition>(dims.d_model,
                                                  c.get<std::int64_t>("randomized_max_len"));
    },
    .test_variants = {{}, {{"randomized_max_len", std::int64_t{12}}}},
    .absolute = true,
});

}  // namespace
}  // namespace relpos
