// Sampling keeps memory bounded: it multiplies a bounded number of matrix shapes, each a
// oneDNN primitive (autograd/cpu/onednn_gemm.h), instead of one new shape per token; the
// recompute path pads its context (train/sample.h) and still reads the logits of the
// unpadded context, for every position scheme.
#include <catch2/catch.hpp>
#include <vector>

#include "autograd/cpu/onednn_gemm.h"
#include "autograd/ops/shape.h"
#include "autograd/tape.h"
#include "layers/position/registry.h"
#include "layers/transformer.h"
#include "scheme_harness.h"
#include "test_helpers.h"
#include "train/sample.h"

using namespace relpos;

namespace {

ModelConfig small_model(const PositionConfig& position, std::int64_t heads) {
  ModelConfig c;
  c.vocab = 256;
  c.d_model = 16;
  c.n_layers = 2;
  c.n_heads = heads;
  c.d_ff = 32;
  c.position = position;
  return c;
}

// (1, len) tokens: `ids`, then the last one repeated up to `len`.
Tensor batch_of(const std::vector<std::int64_t>& ids, std::int64_t len) {
  Tensor t = Tensor::empty({1, len}, DType::i64);
  for (std::int64_t i = 0; i < len; ++i)
    t.data<std::int64_t>()[i] = ids[static_cast<std::size_t>(
        std::min<std::int64_t>(i, static_cast<std::int64_t>(ids.size()) - 1))];
  return t;
}

}  // namespace

TEST_CASE("sampling 200 tokens makes a bounded number of matrix shapes", "[sample][memory]") {
  if (!cpu::onednn_built()) {
    WARN("SKIPPED: this build has no oneDNN (products of every shape go to OpenBLAS)");
    return;
  }
  for (const std::int64_t heads : {1, 2}) {
    for (const bool use_cache : {false, true}) {
      INFO("heads " << heads << ", KV cache " << use_cache);
      Rng rng(3);
      TransformerLM model(small_model(PositionConfig(), heads), rng);
      SampleOptions o;
      o.tokens = 200;
      o.temperature = 0;
      o.use_cache = use_cache;
      const std::uint64_t before = cpu::onednn_primitives_made();
      REQUIRE(generate(model, {65, 66}, o).size() == 200);
      const std::uint64_t made = cpu::onednn_primitives_made() - before;
      INFO("primitives made: " << made);
      // Before: without the cache, the context's length was a new row count for every
      // linear layer at each token, about 4 new primitives a token (over 800).
      REQUIRE(made <= 40);
    }
  }
}

TEST_CASE("the padded recompute gives the logits of the unpadded context for every scheme",
          "[sample][positions]") {
  for (const std::string& scheme : position_scheme_names())
    for (const PositionConfig& position : test_position_configs(scheme)) {
      INFO(testing::describe_config(position));
      Rng rng(9);
      TransformerLM model(small_model(position, 2), rng);
      model.set_training(false);
      NoGradGuard no_grad;
      std::vector<std::int64_t> ids;
      for (int i = 0; i < 37; ++i) ids.push_back(static_cast<std::int64_t>(rng.below(256)));
      const std::int64_t limit = model.max_positions();
      if (limit > 0 && limit < 64) continue;  // too short for 37 tokens; the next case
      const std::int64_t padded = recompute_length(model, 37);
      if (testing::rotation_depends_on_length(position)) {
        REQUIRE(padded == 37);
        continue;
      }
      REQUIRE(padded == 64);
      const Tensor exact = model.forward(batch_of(ids, 37));   // (1, 37, V)
      const Tensor longer = model.forward(batch_of(ids, 64));  // (1, 64, V)
      testing::require_close(slice(longer, 1, 0, 37).to_vector(), exact.to_vector(), 1e-6);
    }
}

TEST_CASE("the padded recompute stays within the positions a scheme can place",
          "[sample][positions]") {
  PositionConfig learned;
  learned.scheme = "learned";
  learned.set("max_len", std::int64_t{100});
  Rng rng(4);
  const TransformerLM model(small_model(learned, 2), rng);
  REQUIRE(recompute_length(model, 37) == 64);
  REQUIRE(recompute_length(model, 65) == 100);  // not 128
  REQUIRE(recompute_length(model, 100) == 100);
  REQUIRE(recompute_length(model, 101) == 101);  // refused by the scheme itself
}
