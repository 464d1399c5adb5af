#include "layers/position/relative.h"

#include <cmath>
#include <fmt/format.h>

#include "autograd/error.h"
#include "autograd/ops/matmul.h"
#include "autograd/ops/relative.h"
#include "autograd/ops/shape.h"
#include "layers/position/alibi_slopes.h"
#include "layers/position/sinusoid.h"

namespace relpos {
namespace {

std::string layer_name(std::int64_t layer, const char* what) {
  return fmt::format("layers.{}.{}", layer, what);
}

}  // namespace

// ---- Shaw ----

ShawPosition::ShawPosition(const PositionConfig& c, const ModelDims& dims, Rng& rng)
    : clip_(c.max_relative) {
  require(c.max_relative >= 1, "model.position.max_relative must be >= 1, got {}",
          c.max_relative);
  require(c.shaw_keys || c.shaw_values,
          "model.position: shaw needs shaw_keys or shaw_values (or both) to be true");
  const std::int64_t width = 2 * clip_ + 1, d = dims.head_dim();
  const Shape shape = c.per_head ? Shape{dims.n_heads, width, d} : Shape{width, d};
  for (std::int64_t l = 0; l < dims.n_layers; ++l) {
    if (c.shaw_keys)
      keys_.push_back(register_parameter(layer_name(l, "keys"), normal_init(shape, rng, kEmbeddingInitStd), false));
    if (c.shaw_values)
      values_.push_back(
          register_parameter(layer_name(l, "values"), normal_init(shape, rng, kEmbeddingInitStd), false));
  }
}

PositionTerms ShawPosition::terms(std::int64_t layer, std::int64_t, std::int64_t) const {
  PositionTerms t;
  t.shaw_clip = clip_;
  if (!keys_.empty()) t.shaw_keys = keys_[layer];
  if (!values_.empty()) t.shaw_values = values_[layer];
  return t;
}

// ---- T5 ----

T5Position::T5Position(const PositionConfig& c, const ModelDims& dims, Rng& rng)
    : buckets_{c.num_buckets, c.max_distance, c.bidirectional_buckets}, scale_(c.scale) {
  validate(buckets_);
  const std::int64_t count = c.per_layer ? dims.n_layers : 1;
  for (std::int64_t l = 0; l < count; ++l) {
    const std::string name = c.per_layer ? layer_name(l, "table") : std::string("table");
    tables_.push_back(register_parameter(
        name, normal_init({c.num_buckets, dims.n_heads}, rng, kEmbeddingInitStd), false));
  }
}

PositionTerms T5Position::terms(std::int64_t layer, std::int64_t q_len,
                                std::int64_t k_len) const {
  const Tensor& table = tables_.size() == 1 ? tables_[0] : tables_[layer];
  PositionTerms t;
  // (H, Lq+Lk-1): one bias per head and distance, never (Lq, Lk).
  t.distance_bias =
      bucket_gather(table, t5_distance_buckets(q_len, k_len, buckets_).to(table.device()));
  t.scale_scores = scale_;
  return t;
}

// ---- Transformer-XL ----

Tensor xl_relative_encodings(const Tensor& w_r, std::int64_t k_len, std::int64_t heads,
                             std::int64_t clamp_len) {
  std::vector<double> distances(static_cast<std::size_t>(k_len));
  for (std::int64_t c = 0; c < k_len; ++c) {
    const std::int64_t t = k_len - 1 - c;
    distances[c] = static_cast<double>(clamp_len > 0 ? std::min(t, clamp_len) : t);
  }
  const std::int64_t d_model = w_r.size(1), head_dim = w_r.size(0) / heads;
  Tensor r_sin = concatenated_sinusoids(distances, d_model, w_r.dtype()).to(w_r.device());
  Tensor r = matmul(r_sin, transpose(w_r, 0, 1));                          // (Lk, H*D)
  return permute(reshape(r, {k_len, heads, head_dim}), {1, 0, 2});         // (H, Lk, D)
}

XlPosition::XlPosition(const PositionConfig& c, const ModelDims& dims, Rng& rng)
    : heads_(dims.n_heads), clamp_len_(c.clamp_len) {
  require(dims.causal, "model.position.scheme=xl needs model.causal=true");
  require(c.clamp_len >= 0, "model.position.clamp_len must be >= 0, got {}", c.clamp_len);
  require(dims.d_model % 2 == 0, "xl: d_model must be even for the sinusoids, got {}",
          dims.d_model);
  const std::int64_t h = dims.n_heads, d = dims.head_dim();
  for (std::int64_t l = 0; l < dims.n_layers; ++l)
    w_r_.push_back(register_parameter(
        layer_name(l, "w_r"),
        normal_init({h * d, dims.d_model}, rng, 1.0 / std::sqrt(double(dims.d_model))), false));
  const std::int64_t pairs = c.per_layer_uv ? dims.n_layers : 1;
  for (std::int64_t l = 0; l < pairs; ++l) {
    u_.push_back(register_parameter(c.per_layer_uv ? layer_name(l, "u") : "u",
                                    Tensor::zeros({h, d}), false));
    v_.push_back(register_parameter(c.per_layer_uv ? layer_name(l, "v") : "v",
                                    Tensor::zeros({h, d}), false));
  }
}

PositionTerms XlPosition::terms(std::int64_t layer, std::int64_t, std::int64_t k_len) const {
  PositionTerms t;
  t.xl_r = xl_relative_encodings(w_r_[layer], k_len, heads_, clamp_len_);
  const std::size_t pair = u_.size() == 1 ? 0 : static_cast<std::size_t>(layer);
  t.xl_u = u_[pair];
  t.xl_v = v_[pair];
  return t;
}

// ---- ALiBi ----

AlibiPosition::AlibiPosition(const ModelDims& dims) : slopes_(alibi_slopes(dims.n_heads)) {}

Tensor alibi_distance_bias(const std::vector<double>& slopes, std::int64_t q_len,
                           std::int64_t k_len) {
  const auto heads = static_cast<std::int64_t>(slopes.size());
  const std::int64_t n = q_len + k_len - 1;
  Tensor bias = Tensor::empty({heads, n}, DType::f64);
  double* b = bias.data<double>();
  for (std::int64_t h = 0; h < heads; ++h)
    for (std::int64_t i = 0; i < n; ++i)
      b[h * n + i] = -slopes[h] * static_cast<double>(std::abs(i - (k_len - 1)));
  return bias;
}

PositionTerms AlibiPosition::terms(std::int64_t, std::int64_t q_len, std::int64_t k_len) const {
  PositionTerms t;
  t.distance_bias = alibi_distance_bias(slopes_, q_len, k_len);  // on the causal part: -m (i - j)
  return t;
}

}  // namespace relpos
