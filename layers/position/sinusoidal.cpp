// sinusoidal: fixed interleaved sin/cos positions (Vaswani et al.) added to the token
// embeddings.
#include <numeric>

#include "autograd/error.h"
#include "autograd/ops/elementwise.h"
#include "layers/position/registry.h"
#include "layers/position/sinusoid.h"

namespace relpos {
namespace {

class SinusoidalPosition final : public PositionScheme {
 public:
  explicit SinusoidalPosition(std::int64_t d_model) : d_model_(d_model) {}

  Tensor embed(const Tensor& x, std::int64_t start) const override {
    std::vector<double> positions(static_cast<std::size_t>(x.size(1)));
    std::iota(positions.begin(), positions.end(), static_cast<double>(start));
    Tensor table = interleaved_sinusoids(positions, d_model_, x.dtype()).to(x.device());
    return add(x, mul_scalar(table, kSinusoidScale));  // (B, L, d) + (L, d)
  }

 private:
  std::int64_t d_model_;
};

const bool registered = register_position_scheme({
    .name = "sinusoidal",
    .order = 10,
    .validate =
        [](const PositionConfig&, const SchemeContext& context) {
          require(context.dims.d_model % 2 == 0,
                  "model.position.scheme=sinusoidal needs an even model.d_model, got {}",
                  context.dims.d_model);
        },
    .build = [](const PositionConfig&, const ModelDims& dims,
                Rng&) -> std::unique_ptr<PositionScheme> {
      return std::make_unique<SinusoidalPosition>(dims.d_model);
    },
    .absolute = true,
});

}  // namespace
}  // namespace relpos
