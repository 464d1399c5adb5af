// learned: a trained table of absolute positions added to the token embeddings; it
// cannot go beyond max_len. Optionally randomized positions in training
// (randomized_positions.h), drawn below max_len.
#include "autograd/error.h"
#include "autograd/ops/elementwise.h"
#include "autograd/ops/embedding.h"
#include "autograd/ops/shape.h"
#include "layers/position/randomized_positions.h"
#include "layers/position/registry.h"

namespace relpos {
namespace {

class LearnedPosition final : public PositionScheme {
 public:
  LearnedPosition(std::int64_t max_len, std::int64_t d_model, std::int64_t randomized_max_len,
                  Rng& rng)
      : randomized_max_len_(randomized_max_len) {
    table_ =
        register_parameter("table", normal_init({max_len, d_model}, rng, kEmbeddingInitStd), false);
  }

  Tensor embed(const Tensor& x, std::int64_t start) const override {
    const std::int64_t len = x.size(1), max_len = table_.size(0);
    if (randomized_max_len_ > 0 && training()) {
      const std::vector<std::int64_t> window =
          window_positions(start, len, randomized_max_len_, true, position_seed_);
      const Tensor rows =
          Tensor::from_data(std::vector<double>(window.begin(), window.end()), {len}, DType::i64);
      return add(x, embedding(table_, rows.to(table_.device())));  // (B, L, d) + (L, d)
    }
    require(start + len <= max_len,
            "learned positions: position {} is beyond model.position.max_len={} (learned "
            "absolute positions cannot extrapolate)",
            start + len - 1, max_len);
    return add(x, slice(table_, 0, start, start + len));  // (B, L, d) + (L, d)
  }

  std::int64_t max_length() const override { return table_.size(0); }

 private:
  Tensor table_;  // (max_len, d_model)
  std::int64_t randomized_max_len_;
};

void validate_learned(const PositionConfig& c, const SchemeContext& context) {
  const auto max_len = c.get<std::int64_t>("max_len");
  require(max_len >= 1, "model.position.max_len must be >= 1, got {}", max_len);
  require(max_len >= context.seq_len,
          "model.position.max_len={} is shorter than data.seq_len={} (scheme learned)", max_len,
          context.seq_len);
  for (const std::int64_t length : context.eval_lengths)
    require(max_len >= length,
            "model.position.max_len={} is shorter than eval.lengths entry {} (scheme learned)",
            max_len, length);
  validate_randomized_max_len(c, context, "learned");
  const auto randomized = c.get<std::int64_t>("randomized_max_len");
  require(randomized <= max_len,
          "model.position.randomized_max_len={} is beyond model.position.max_len={} (scheme "
          "learned: the positions drawn must have rows in the table)",
          randomized, max_len);
}

const bool registered = register_position_scheme({
    .name = "learned",
    .order = 20,
    .keys = {{"max_len", std::int64_t{1024}, "positions in the absolute table", {}},
             randomized_max_len_key()},
    .validate = validate_learned,
    .build = [](const PositionConfig& c, const ModelDims& dims,
                Rng& rng) -> std::unique_ptr<PositionScheme> {
      return std::make_unique<LearnedPosition>(c.get<std::int64_t>("max_len"), dims.d_model,
                                               c.get<std::int64_t>("randomized_max_len"), rng);
    },
    .test_variants = {{{"max_len", std::int64_t{16}}},
                      {{"max_len", std::int64_t{16}}, {"randomized_max_len", std::int64_t{16}}}},
    .size_keys = {{"max_len", std::int64_t{1} << 20}},
    .absolute = true,
});

}  // namespace
}  // namespace relpos
