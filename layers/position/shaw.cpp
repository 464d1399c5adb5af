// shaw (Shaw et al. 2018): learned key and value vectors per clipped relative distance,
// idx = clip(j - i, -k, k) + k; tables of (2k+1, D), or (H, 2k+1, D) per head.
#include <fmt/format.h>

#include <algorithm>

#include "autograd/error.h"
#include "layers/position/registry.h"

namespace relpos {
namespace {

class ShawPosition final : public PositionScheme {
 public:
  ShawPosition(const PositionConfig& c, const ModelDims& dims, Rng& rng)
      : clip_(c.get<std::int64_t>("max_relative")) {
    const std::int64_t width = 2 * clip_ + 1, d = dims.head_dim();
    const Shape shape = c.get<bool>("per_head") ? Shape{dims.n_heads, width, d} : Shape{width, d};
    for (std::int64_t l = 0; l < dims.n_layers; ++l) {
      if (c.get<bool>("shaw_keys"))
        keys_.push_back(register_parameter(fmt::format("layers.{}.keys", l),
                                           normal_init(shape, rng, kEmbeddingInitStd), false));
      if (c.get<bool>("shaw_values"))
        values_.push_back(register_parameter(fmt::format("layers.{}.values", l),
                                             normal_init(shape, rng, kEmbeddingInitStd), false));
    }
  }

  PositionTerms terms(std::int64_t layer, std::int64_t, std::int64_t) const override {
    PositionTerms t;
    t.shaw_clip = clip_;
    if (!keys_.empty()) t.shaw_keys = keys_[layer];
    if (!values_.empty()) t.shaw_values = values_[layer];
    return t;
  }

 private:
  std::int64_t clip_;
  std::vector<Tensor> keys_, values_;  // per layer: (2k+1, D) or (H, 2k+1, D)
};

void validate_shaw(const PositionConfig& c, const SchemeContext&) {
  const auto k = c.get<std::int64_t>("max_relative");
  require(k >= 1, "model.position.max_relative must be >= 1, got {}", k);
  require(c.get<bool>("shaw_keys") || c.get<bool>("shaw_values"),
          "model.position.scheme=shaw needs model.position.shaw_keys or "
          "model.position.shaw_values to be true");
}

const bool registered = register_position_scheme({
    .name = "shaw",
    .order = 30,
    .keys = {{"max_relative", std::int64_t{16}, "clipping distance k (tables of 2k+1 rows)", {}},
             {"shaw_keys", true, "relative term on the keys (logits)", {}},
             {"shaw_values", true, "relative term on the values (outputs)", {}},
             {"per_head", false, "one table per head instead of one shared by all heads", {}}},
    .validate = validate_shaw,
    .build = [](const PositionConfig& c, const ModelDims& dims, Rng& rng)
        -> std::unique_ptr<PositionScheme> { return std::make_unique<ShawPosition>(c, dims, rng); },
    // k = 2 < L: clipping happens on both sides.
    .test_variants = {{{"max_relative", std::int64_t{2}}},
                      {{"max_relative", std::int64_t{2}}, {"per_head", true}},
                      {{"max_relative", std::int64_t{3}}, {"shaw_values", false}},
                      {{"max_relative", std::int64_t{1}}, {"shaw_keys", false}}},
    .table_index =
        [](const PositionConfig& c, std::int64_t rel) {
          const auto k = c.get<std::int64_t>("max_relative");
          return std::clamp(rel, -k, k) + k;
        },
    .caption =
        [](const PositionConfig& c) {
          return fmt::format("shaw index clip(j - i, -{0}, {0}) + {0}",
                             c.get<std::int64_t>("max_relative"));
        },
    .index_keys = {"max_relative"},
    .reference_names = {{"max_rel", "max_relative"},
                        {"use_keys", "shaw_keys"},
                        {"use_values", "shaw_values"},
                        {"shaw_keys", "layers.0.keys"},
                        {"shaw_values", "layers.0.values"}},
    .size_keys = {{"max_relative", std::int64_t{1} << 20}},
});

}  // namespace
}  // namespace relpos
