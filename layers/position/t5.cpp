// t5 (Raffel et al.): a learned scalar bias per (bucket, head), buckets log-spaced in the
// relative distance (t5_buckets.h); one table shared by all layers, or one per layer (UMT5).
#include <fmt/format.h>

#include "autograd/error.h"
#include "autograd/ops/relative.h"
#include "layers/position/registry.h"
#include "layers/position/t5_buckets.h"

namespace relpos {
namespace {

T5BucketConfig bucket_config(const PositionConfig& c) {
  return {c.get<std::int64_t>("num_buckets"), c.get<std::int64_t>("max_distance"),
          c.get<bool>("bidirectional_buckets")};
}

class T5Position final : public PositionScheme {
 public:
  T5Position(const PositionConfig& c, const ModelDims& dims, Rng& rng)
      : buckets_(bucket_config(c)), scale_(c.get<bool>("scale")) {
    const bool per_layer = c.get<bool>("per_layer");
    for (std::int64_t l = 0; l < (per_layer ? dims.n_layers : 1); ++l) {
      const std::string name = per_layer ? fmt::format("layers.{}.table", l) : "table";
      tables_.push_back(register_parameter(
          name, normal_init({buckets_.num_buckets, dims.n_heads}, rng, kEmbeddingInitStd), false));
    }
  }

  PositionTerms terms(std::int64_t layer, std::int64_t q_len, std::int64_t k_len) const override {
    const Tensor& table = tables_.size() == 1 ? tables_[0] : tables_[layer];
    PositionTerms t;
    // (H, Lq+Lk-1): one bias per head and distance, never (Lq, Lk).
    t.distance_bias =
        bucket_gather(table, t5_distance_buckets(q_len, k_len, buckets_).to(table.device()));
    t.scale_scores = scale_;
    return t;
  }

 private:
  T5BucketConfig buckets_;
  bool scale_;
  std::vector<Tensor> tables_;  // one (num_buckets, H) table, or one per layer
};

void validate_t5(const PositionConfig& c, const SchemeContext&) {
  const T5BucketConfig buckets = bucket_config(c);
  try {
    validate(buckets);
  } catch (const UsageError& e) {
    fail(
        "model.position.num_buckets={}, model.position.max_distance={}, "
        "model.position.bidirectional_buckets={}: {}",
        buckets.num_buckets, buckets.max_distance, buckets.bidirectional, e.what());
  }
}

const bool registered = register_position_scheme({
    .name = "t5",
    .order = 40,
    .keys =
        {{"num_buckets", std::int64_t{32}, "number of relative-distance buckets", {}},
         {"max_distance", std::int64_t{128}, "distance where the logarithmic buckets saturate", {}},
         {"bidirectional_buckets", false,
          "half the buckets per direction; when not set: the opposite of model.causal",
          [](const ModelDims& dims) -> OptionValue { return !dims.causal; }},
         {"per_layer", false, "one bias table per layer (UMT5) instead of one shared (T5)", {}},
         {"scale", true, "divide q·k by sqrt(head_dim) (T5 itself does not)", {}}},
    .validate = validate_t5,
    .build = [](const PositionConfig& c, const ModelDims& dims, Rng& rng)
        -> std::unique_ptr<PositionScheme> { return std::make_unique<T5Position>(c, dims, rng); },
    // 6 buckets, max_distance 4: distances from 4 on saturate.
    .test_variants = {{{"num_buckets", std::int64_t{6}}, {"max_distance", std::int64_t{4}}},
                      {{"num_buckets", std::int64_t{8}},
                       {"max_distance", std::int64_t{6}},
                       {"bidirectional_buckets", true},
                       {"per_layer", true},
                       {"scale", false}}},
    .table_index = [](const PositionConfig& c,
                      std::int64_t rel) { return t5_bucket(rel, bucket_config(c)); },
    .caption =
        [](const PositionConfig& c) {
          const T5BucketConfig b = bucket_config(c);
          return fmt::format("t5 buckets ({} buckets, max_distance {}, {})", b.num_buckets,
                             b.max_distance, b.bidirectional ? "bidirectional" : "unidirectional");
        },
    .index_keys = {"num_buckets", "max_distance", "bidirectional_buckets"},
    .reference_names = {{"bidirectional", "bidirectional_buckets"}, {"t5_table", "table"}},
    .size_keys = {{"num_buckets", std::int64_t{1} << 20}},
});

}  // namespace
}  // namespace relpos
