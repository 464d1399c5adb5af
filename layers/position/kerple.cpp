// kerple (Chi et al. 2022, KERPLE-log): a learned logit bias -r1 log(1 + r2 |i - j|) per
// head and layer, r1, r2 > 0 kept positive as exp of the parameters log_r1, log_r2
// (initialised near 0, so r1 and r2 start near 1). The bias goes through the same
// per-distance kernel as T5 and ALiBi; its gradient reaches r1 and r2 through the ops.
#include <fmt/format.h>

#include <cstdlib>

#include "autograd/ops/elementwise.h"
#include "autograd/ops/shape.h"
#include "layers/position/registry.h"

namespace relpos {
namespace {

class KerplePosition final : public PositionScheme {
 public:
  KerplePosition(const ModelDims& dims, Rng& rng) {
    for (std::int64_t l = 0; l < dims.n_layers; ++l) {
      log_r1_.push_back(register_parameter(fmt::format("layers.{}.log_r1", l),
                                           normal_init({dims.n_heads}, rng, kEmbeddingInitStd),
                                           false));
      log_r2_.push_back(register_parameter(fmt::format("layers.{}.log_r2", l),
                                           normal_init({dims.n_heads}, rng, kEmbeddingInitStd),
                                           false));
    }
  }

  PositionTerms terms(std::int64_t layer, std::int64_t q_len, std::int64_t k_len) const override {
    const Tensor& log_r1 = log_r1_[layer];
    const std::int64_t heads = log_r1.size(0), n = q_len + k_len - 1;
    std::vector<double> distance(static_cast<std::size_t>(n));  // |rel| for rel = c - (Lk-1)
    for (std::int64_t c = 0; c < n; ++c)
      distance[c] = static_cast<double>(std::abs(c - (k_len - 1)));
    const Tensor d = Tensor::from_data(distance, {1, n}, log_r1.dtype()).to(log_r1.device());
    const Tensor r1 = reshape(exp(log_r1), {heads, 1});          // (H, 1)
    const Tensor r2 = reshape(exp(log_r2_[layer]), {heads, 1});  // (H, 1)
    PositionTerms t;
    t.distance_bias = neg(mul(r1, log(add_scalar(mul(r2, d), 1.0))));  // (H, Lq+Lk-1)
    return t;
  }

 private:
  std::vector<Tensor> log_r1_, log_r2_;  // per layer (H)
};

const bool registered = register_position_scheme({
    .name = "kerple",
    .order = 80,
    .build = [](const PositionConfig&, const ModelDims& dims, Rng& rng)
        -> std::unique_ptr<PositionScheme> { return std::make_unique<KerplePosition>(dims, rng); },
    .table_index = [](const PositionConfig&, std::int64_t rel) { return rel < 0 ? -rel : rel; },
    .caption =
        [](const PositionConfig&) {
          return std::string("kerple distance |i - j| (bias = -r1_h log(1 + r2_h * distance))");
        },
});

}  // namespace
}  // namespace relpos
