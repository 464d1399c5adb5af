// Incremental decoding (KV cache) and segment memory give exactly what a full
// recompute gives, for every position scheme.
#include <catch2/catch.hpp>

#include "autograd/error.h"
#include "autograd/ops/elementwise.h"
#include "autograd/ops/shape.h"
#include "autograd/tape.h"
#include "layers/position/registry.h"
#include "layers/transformer.h"
#include "scheme_harness.h"
#include "test_helpers.h"

using namespace relpos;

namespace {

// Every variant of every scheme (layers/position/registry.h), in a small two-layer model.
std::vector<ModelConfig> small_models() {
  std::vector<ModelConfig> models;
  for (const std::string& scheme : position_scheme_names())
    for (const PositionConfig& position : test_position_configs(scheme)) {
      ModelConfig& c = models.emplace_back();
      c.vocab = 32;
      c.d_model = 16;
      c.n_layers = 2;
      c.n_heads = 2;
      c.d_ff = 32;
      c.position = position;
    }
  return models;
}

Tensor random_tokens(std::int64_t batch, std::int64_t len, std::int64_t vocab, Rng& rng) {
  Tensor t = Tensor::empty({batch, len}, DType::i64);
  for (std::int64_t i = 0; i < t.numel(); ++i)
    t.data<std::int64_t>()[i] = static_cast<std::int64_t>(rng.below(vocab));
  return t;
}

// Gives the schemes' zero-initialised tables (XL's u, v) non-trivial values.
void perturb(const TransformerLM& model, Rng& rng) {
  NoGradGuard no_grad;
  for (const NamedParameter& p : model.parameters()) {
    Tensor t = p.tensor;
    t.copy_(add(t, randn(t.shape(), rng, t.dtype(), 0.05)));
  }
}

}  // namespace

TEST_CASE("KV-cache decoding equals full recompute for every scheme", "[positions][decode][slow]") {
  for (const ModelConfig& config : small_models()) {
    INFO(testing::describe_config(config.position));
    Rng rng(50);
    TransformerLM model(config, rng);
    model.set_training(false);
    perturb(model, rng);
    NoGradGuard no_grad;
    const std::int64_t len = 14;
    Tensor tokens = random_tokens(2, len, 32, rng);
    const Tensor full = model.forward(tokens);  // (2, L, V)
    DecodeState state;
    if (testing::rotation_depends_on_length(config.position)) {
      // Every hidden state changes as the sequence grows: nothing to cache, refused.
      CHECK_THROWS_AS(model.forward(slice(tokens, 1, 0, 5), state, true), UsageError);
      continue;
    }
    // A prompt of 5 tokens, then one token at a time.
    std::vector<Tensor> pieces{model.forward(slice(tokens, 1, 0, 5), state, true)};
    for (std::int64_t t = 5; t < len; ++t)
      pieces.push_back(model.forward(slice(tokens, 1, t, t + 1), state, true));
    const Tensor incremental = concat(pieces, 1);
    testing::require_close(incremental.to_vector(), full.to_vector(), 2e-5);
  }
}

TEST_CASE("segment memory covering the past equals full recompute for every scheme",
          "[positions][decode]") {
  for (const ModelConfig& config : small_models()) {
    INFO(testing::describe_config(config.position));
    // Refused for a rotation that depends on the length (the KV-cache test above).
    if (testing::rotation_depends_on_length(config.position)) continue;
    Rng rng(51);
    TransformerLM model(config, rng);
    model.set_training(false);
    perturb(model, rng);
    NoGradGuard no_grad;
    Tensor tokens = random_tokens(2, 12, 32, rng);
    const Tensor full = model.forward(tokens);
    DecodeState state;
    Tensor first = model.forward(slice(tokens, 1, 0, 6), state, false, 6);
    Tensor second = model.forward(slice(tokens, 1, 6, 12), state, false, 6);
    testing::require_close(concat({first, second}, 1).to_vector(), full.to_vector(), 2e-5);
    // A memory shorter than the past changes the result (it really is used).
    DecodeState short_state;
    model.forward(slice(tokens, 1, 0, 6), short_state, false, 2);
    Tensor truncated = model.forward(slice(tokens, 1, 6, 12), short_state, false, 2);
    REQUIRE(testing::largest_difference(truncated, second) > 1e-4);
  }
}
