// alibi (Press et al. 2022): a fixed bias -m_h |i - j| per head, slopes m_h from
// alibi_slopes.h; no parameters.
#include <cstdlib>

#include "layers/position/alibi_slopes.h"
#include "layers/position/registry.h"

namespace relpos {
namespace {

class AlibiPosition final : public PositionScheme {
 public:
  explicit AlibiPosition(const ModelDims& dims) : slopes_(alibi_slopes(dims.n_heads)) {}

  PositionTerms terms(std::int64_t, std::int64_t q_len, std::int64_t k_len) const override {
    // (H, Lq+Lk-1) f64: -m_h |rel| for rel = n - (Lk-1); on the causal part -m (i - j).
    const auto heads = static_cast<std::int64_t>(slopes_.size());
    const std::int64_t n = q_len + k_len - 1;
    Tensor bias = Tensor::empty({heads, n}, DType::f64);
    double* b = bias.data<double>();
    for (std::int64_t h = 0; h < heads; ++h)
      for (std::int64_t i = 0; i < n; ++i)
        b[h * n + i] = -slopes_[h] * static_cast<double>(std::abs(i - (k_len - 1)));
    PositionTerms t;
    t.distance_bias = bias;
    return t;
  }

 private:
  std::vector<double> slopes_;
};

const bool registered = register_position_scheme({
    .name = "alibi",
    .order = 60,
    .build = [](const PositionConfig&, const ModelDims& dims, Rng&)
        -> std::unique_ptr<PositionScheme> { return std::make_unique<AlibiPosition>(dims); },
    .table_index = [](const PositionConfig&, std::int64_t rel) { return rel < 0 ? -rel : rel; },
    .caption =
        [](const PositionConfig&) {
          return std::string("alibi distance |i - j| (bias = -slope_h * distance)");
        },
});

}  // namespace
}  // namespace relpos
