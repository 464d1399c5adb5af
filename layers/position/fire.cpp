// fire (Li et al. 2023, arXiv:2310.04418): a learned logit bias per head and layer,
// b_h(i, j) = f_h(psi(i - j) / psi(max(i, L_thr))), psi(x) = log(1 + c x), f a ReLU MLP
// 1 -> fire_hidden -> H without output bias (autograd/fire_terms.h). c and L_thr are learned per
// layer and kept positive: c = exp(log_c), log_c initialised at log(fire_c); L_thr = fire_threshold
// · exp(log_threshold_scale), initialised at 0 (the paper's code learns a multiplier of its initial
// L). Causal only. The flash kernel evaluates the MLP piece by piece (it is piecewise linear in its
// input); gradients reach the MLP, c and L_thr through it (docs/relative-kernels.md, "FIRE").
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "autograd/error.h"
#include "autograd/ops/elementwise.h"
#include "layers/position/registry.h"

namespace relpos {
namespace {

struct FireLayer {
  Tensor w1, b1, w2, log_c, log_threshold_scale;
};

class FirePosition final : public PositionScheme {
 public:
  FirePosition(const PositionConfig& c, const ModelDims& dims, Rng& rng)
      : threshold_(c.get<double>("fire_threshold")) {
    const std::int64_t hidden = c.get<std::int64_t>("fire_hidden");
    // Spreads of PyTorch's nn.Linear initialisation (uniform, bound 1/sqrt(fan_in)), drawn
    // as normals of the same variance.
    const double first = 1.0 / std::sqrt(3.0), second = 1.0 / std::sqrt(3.0 * hidden);
    const auto constant = [](double value) {
      return Tensor::from_data(std::vector<float>{static_cast<float>(value)}, {1});
    };
    for (std::int64_t l = 0; l < dims.n_layers; ++l) {
      const auto name = [&](const char* what) { return fmt::format("layers.{}.{}", l, what); };
      FireLayer& layer = layers_.emplace_back();
      layer.w1 = register_parameter(name("w1"), normal_init({hidden}, rng, first), false);
      layer.b1 = register_parameter(name("b1"), normal_init({hidden}, rng, first), false);
      layer.w2 =
          register_parameter(name("w2"), normal_init({dims.n_heads, hidden}, rng, second), false);
      layer.log_c =
          register_parameter(name("log_c"), constant(std::log(c.get<double>("fire_c"))), false);
      layer.log_threshold_scale =
          register_parameter(name("log_threshold_scale"), constant(0.0), false);
    }
  }

  PositionTerms terms(std::int64_t layer, std::int64_t, std::int64_t) const override {
    const FireLayer& f = layers_[layer];
    PositionTerms t;
    t.fire = {f.w1, f.b1, f.w2, exp(f.log_c), mul_scalar(exp(f.log_threshold_scale), threshold_)};
    return t;
  }

 private:
  double threshold_;  // fire_threshold
  std::vector<FireLayer> layers_;
};

void validate_fire(const PositionConfig& c, const SchemeContext& context) {
  require(context.dims.causal,
          "model.position.scheme=fire needs model.causal=true (FIRE is causal)");
  const auto hidden = c.get<std::int64_t>("fire_hidden");
  require(hidden >= 1 && hidden <= 4096, "model.position.fire_hidden must be in [1, 4096], got {}",
          hidden);
  for (const char* key : {"fire_c", "fire_threshold"}) {
    const double value = c.get<double>(key);
    require(std::isfinite(value) && value > 0,
            "model.position.{} must be a finite number > 0, got {}", key, value);
  }
}

// The MLP's input for a query at position qpos and a past key at qpos + rel, with c and
// L_thr at their initial values.
double fire_input(const PositionConfig& config, std::int64_t qpos, std::int64_t rel) {
  const double c = config.get<double>("fire_c"), threshold = config.get<double>("fire_threshold");
  const double norm = std::log1p(c * std::max(static_cast<double>(qpos), threshold));
  return std::log1p(c * static_cast<double>(-rel)) / norm;
}

const bool registered = register_position_scheme({
    .name = "fire",
    .order = 90,
    .keys = {{"fire_hidden", std::int64_t{32}, "width of the MLP's hidden layer", {}},
             {"fire_c", 0.1, "initial c of psi(x) = log(1 + c x) (learned, kept > 0)", {}},
             {"fire_threshold",
              512.0,
              "initial L_thr of the normaliser psi(max(i, L_thr)) (learned, kept > 0)",
              {}}},
    .validate = validate_fire,
    .build = [](const PositionConfig& c, const ModelDims& dims, Rng& rng)
        -> std::unique_ptr<PositionScheme> { return std::make_unique<FirePosition>(c, dims, rng); },
    // Rows at positions below and above the threshold. 16 hidden units: with the tests'
    // N(0, 0.5²) parameters, some unit then almost surely switches inside x in [0, 1] (a
    // unit that is on or off for every x gives b1 a gradient of exactly 0, as a constant
    // per head cancels in the softmax, and relative comparisons of zeros fail).
    .test_variants = {{{"fire_hidden", std::int64_t{16}}, {"fire_threshold", 3.0}}},
    .table_value = fire_input,
    .caption =
        [](const PositionConfig& c) {
          return fmt::format(
              "fire MLP input psi(i - j) / psi(max(i, L_thr)), psi(x) = log(1 + c x), at "
              "c = {}, L_thr = {} (bias = f_h(input))",
              c.get<double>("fire_c"), c.get<double>("fire_threshold"));
        },
    .index_keys = {"fire_c", "fire_threshold"},
    .causal_only = true,
});

}  // namespace
}  // namespace relpos
