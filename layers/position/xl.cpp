// xl (Dai et al. 2019, Transformer-XL): relative sinusoids R for distances Lk-1 .. 0
// projected by a per-layer W_r, with learned global biases u (content) and v (position):
// score = ((q+u)·k + rel_shift((q+v)·(W_r R))) / sqrt(D). Causal only.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "autograd/error.h"
#include "autograd/ops/matmul.h"
#include "autograd/ops/shape.h"
#include "layers/position/registry.h"
#include "layers/position/sinusoid.h"

namespace relpos {
namespace {

// R: the sinusoids of distances k_len-1 .. 0 (clamped to clamp_len when > 0), (Lk, d_model).
Tensor xl_sinusoids(std::int64_t k_len, std::int64_t d_model, std::int64_t clamp_len, DType dtype,
                    Device device) {
  std::vector<double> distances(static_cast<std::size_t>(k_len));
  for (std::int64_t c = 0; c < k_len; ++c) {
    const std::int64_t t = k_len - 1 - c;
    distances[c] = static_cast<double>(clamp_len > 0 ? std::min(t, clamp_len) : t);
  }
  return concatenated_sinusoids(distances, d_model, dtype).to(device);
}

// W_r R: w_r (H*D, d_model), r_sin (Lk, d_model) -> (H, Lk, D).
Tensor xl_relative_encodings(const Tensor& w_r, const Tensor& r_sin, std::int64_t heads) {
  const std::int64_t k_len = r_sin.size(0), head_dim = w_r.size(0) / heads;
  Tensor r = matmul(r_sin, transpose(w_r, 0, 1));                   // (Lk, H*D)
  return permute(reshape(r, {k_len, heads, head_dim}), {1, 0, 2});  // (H, Lk, D)
}

class XlPosition final : public PositionScheme {
 public:
  XlPosition(const PositionConfig& c, const ModelDims& dims, Rng& rng)
      : heads_(dims.n_heads), clamp_len_(c.get<std::int64_t>("clamp_len")) {
    const std::int64_t h = dims.n_heads, d = dims.head_dim();
    for (std::int64_t l = 0; l < dims.n_layers; ++l)
      w_r_.push_back(register_parameter(
          fmt::format("layers.{}.w_r", l),
          normal_init({h * d, dims.d_model}, rng, 1.0 / std::sqrt(double(dims.d_model))), false));
    const bool per_layer = c.get<bool>("per_layer_uv");
    for (std::int64_t l = 0; l < (per_layer ? dims.n_layers : 1); ++l) {
      const auto name = [&](const char* what) {
        return per_layer ? fmt::format("layers.{}.{}", l, what) : std::string(what);
      };
      u_.push_back(register_parameter(name("u"), Tensor::zeros({h, d}), false));
      v_.push_back(register_parameter(name("v"), Tensor::zeros({h, d}), false));
    }
  }

  PositionTerms terms(std::int64_t layer, std::int64_t, std::int64_t k_len) const override {
    PositionTerms t;
    t.xl_r = xl_relative_encodings(w_r_[layer], sinusoids(k_len, w_r_[layer]), heads_);
    const std::size_t pair = u_.size() == 1 ? 0 : static_cast<std::size_t>(layer);
    t.xl_u = u_[pair];
    t.xl_v = v_[pair];
    return t;
  }

 private:
  // R for k_len keys in w_r's dtype and device, kept from the last call: every layer and
  // step reads the same constant table (no gradient).
  const Tensor& sinusoids(std::int64_t k_len, const Tensor& w_r) const {
    if (!r_sin_.defined() || r_sin_.size(0) != k_len || r_sin_.dtype() != w_r.dtype() ||
        r_sin_.device() != w_r.device())
      r_sin_ = xl_sinusoids(k_len, w_r.size(1), clamp_len_, w_r.dtype(), w_r.device());
    return r_sin_;
  }

  std::int64_t heads_;
  std::int64_t clamp_len_;
  std::vector<Tensor> w_r_;    // per layer (H*D, d_model)
  std::vector<Tensor> u_, v_;  // one shared (H, D) pair, or one per layer
  mutable Tensor r_sin_;       // (Lk, d_model), see sinusoids()
};

void validate_xl(const PositionConfig& c, const SchemeContext& context) {
  require(context.dims.d_model % 2 == 0,
          "model.position.scheme=xl needs an even model.d_model, got {}", context.dims.d_model);
  require(context.dims.causal, "model.position.scheme=xl needs model.causal=true");
  const auto clamp_len = c.get<std::int64_t>("clamp_len");
  require(clamp_len >= 0, "model.position.clamp_len must be >= 0, got {}", clamp_len);
}

const bool registered = register_position_scheme({
    .name = "xl",
    .order = 50,
    .keys = {{"clamp_len", std::int64_t{0}, "clamp relative distances to this; 0: no clamp", {}},
             {"per_layer_uv", false, "u and v per layer instead of shared by all layers", {}}},
    .validate = validate_xl,
    .build = [](const PositionConfig& c, const ModelDims& dims, Rng& rng)
        -> std::unique_ptr<PositionScheme> { return std::make_unique<XlPosition>(c, dims, rng); },
    // clamp_len 3 < L: clamping happens.
    .test_variants = {{{"clamp_len", std::int64_t{3}}}, {{"per_layer_uv", true}}},
    .table_index =
        [](const PositionConfig& c, std::int64_t rel) {
          const auto clamp_len = c.get<std::int64_t>("clamp_len");
          return clamp_len > 0 ? std::min(-rel, clamp_len) : -rel;
        },
    .caption =
        [](const PositionConfig& c) {
          const auto clamp_len = c.get<std::int64_t>("clamp_len");
          return fmt::format("xl sinusoid distance i - j{}",
                             clamp_len > 0 ? fmt::format(", clamped at {}", clamp_len) : "");
        },
    .index_keys = {"clamp_len"},
    .reference_names = {{"xl_w_r", "layers.0.w_r"}, {"xl_u", "u"}, {"xl_v", "v"}},
    .causal_only = true,
});

}  // namespace
}  // namespace relpos
