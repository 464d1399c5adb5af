// FIRE inside a per-layer list (model.position: [fire, rope]): the flash, fused and
// composed paths agree on the logits and gradients, KV-cache decoding and segment memory
// equal the full recompute, and a checkpoint restores the model exactly.
#include <algorithm>
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "autograd/ops/elementwise.h"
#include "autograd/ops/reduce.h"
#include "autograd/ops/shape.h"
#include "autograd/tape.h"
#include "decoding_check.h"
#include "layers/position/registry.h"
#include "layers/transformer.h"
#include "scheme_harness.h"
#include "test_helpers.h"
#include "tests/test_files.h"
#include "tests/tiny_run.h"
#include "train/run_state.h"
#include "train/store/checkpoint.h"
#include "train/store/checkpoint_folder.h"
#include "train/trainer.h"

using namespace relpos;
using testing::largest_difference;

namespace {

// Two layers: FIRE (the registry's test variant, thresholds inside short sequences, with
// L_thr = 3.5 off the integer positions), then RoPE. At L_thr = 3 exactly, the query at
// position 3 sits on the kink of max(i, L_thr): the flash kernel and the composed ops then
// take different one-sided derivatives for L_thr (measured: 16% apart), as at any kink.
ModelConfig fire_rope_model(AttentionPath path) {
  ModelConfig c;
  c.vocab = 32;
  c.d_model = 16;
  c.n_layers = 2;
  c.n_heads = 2;
  c.d_ff = 32;
  c.attention_path = path;
  PositionConfig fire = test_position_configs("fire").back();
  fire.set("fire_threshold", 3.5);
  c.layer_positions = {fire, test_position_configs("rope")[0]};
  return c;
}

}  // namespace

namespace {

// Logits and every parameter's gradient of <logits, logits> on the three paths (flash,
// fused, composed), in f64: FIRE's threshold gradient sums many terms of both signs.
struct PathResults {
  std::vector<Tensor> logits;
  std::vector<std::vector<Tensor>> grads;  // [path][parameter]
  std::vector<std::string> names;
};

PathResults results_on_every_path() {
  Rng data(51);
  const Tensor tokens = testing::random_ids(2, 13, 32, data);
  PathResults r;
  for (AttentionPath path : {AttentionPath::flash, AttentionPath::fused, AttentionPath::composed}) {
    Rng rng(50);
    TransformerLM model(fire_rope_model(path), rng);
    std::vector<Tensor> values;
    for (const NamedParameter& p : model.parameters()) values.push_back(p.tensor);
    testing::set_parameters(model, values, DType::f64);
    const Tensor out = model.forward(tokens);  // (2, 13, 32)
    backward(sum(mul(out, out)));
    r.logits.push_back(out.detach());
    r.grads.emplace_back();
    r.names.clear();
    for (const NamedParameter& p : model.parameters()) {
      r.names.push_back(p.name);
      r.grads.back().push_back(p.tensor.grad());
    }
  }
  return r;
}

}  // namespace

TEST_CASE("FIRE in a per-layer list: flash = fused = composed, logits and the gradients",
          "[positions][fire][per_layer]") {
  const PathResults r = results_on_every_path();
  // FIRE's MLP lives in layer 0's scheme module: position.0.
  CHECK(std::count_if(r.names.begin(), r.names.end(),
                      [](const std::string& n) { return n.starts_with("position.0."); }) > 0);
  for (std::size_t path = 0; path < 2; ++path) {
    INFO("path " << name_of(static_cast<AttentionPath>(path)));
    CHECK(testing::relative_error(r.logits[path], r.logits[2]) <= 1e-12);
    for (std::size_t g = 0; g < r.names.size(); ++g) {
      INFO(r.names[g]);
      // The FIRE module holds one MLP per model layer; layer 1 (RoPE) never reads its MLP,
      // which then gets no gradient on any path.
      REQUIRE(r.grads[path][g].defined() == r.grads[2][g].defined());
      if (!r.grads[2][g].defined()) {
        CHECK(r.names[g].starts_with("position.0.layers.1."));
        continue;
      }
      CHECK(testing::relative_error(r.grads[path][g], r.grads[2][g]) <= 1e-10);
    }
  }
}

TEST_CASE("FIRE in a per-layer list: KV-cache decoding and segment memory equal full recompute",
          "[positions][fire][per_layer][decode]") {
  for (AttentionPath path : {AttentionPath::flash, AttentionPath::composed}) {
    INFO(name_of(path));
    Rng rng(52);
    TransformerLM model(fire_rope_model(path), rng);
    model.set_training(false);
    NoGradGuard no_grad;
    const std::int64_t len = 12;
    const Tensor tokens = testing::random_ids(2, len, 32, rng);
    const Tensor full = model.forward(tokens);  // (2, L, V)
    testing::require_decoding_equals_full(model, tokens, full);
  }
}

TEST_CASE("FIRE in a per-layer list: a checkpoint restores every parameter and the logits",
          "[positions][fire][per_layer][checkpoint]") {
  testing::TempDir dir("fire_per_layer");
  const RunConfig config = testing::tiny_run_config(
      {"model.n_layers=2", "model.position=[{scheme: fire, fire_hidden: 8}, rope]",
       "train.out_dir=" + dir.path().string()});
  RunState trained = build_run(config);
  train(trained);
  RunState restored = build_run(config);
  const auto at4 = checkpoint_path(dir.path() / "checkpoints", 4);
  restore_run(restored, load_checkpoint(at4), at4);
  const auto a = trained.model->parameters(), b = restored.model->parameters();
  REQUIRE(a.size() == b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    INFO(a[i].name);
    CHECK(a[i].name == b[i].name);
    CHECK(a[i].tensor.to_vector() == b[i].tensor.to_vector());  // bit for bit
  }
  Rng data(53);
  const Tensor tokens = testing::random_ids(2, 20, 256, data);
  NoGradGuard no_grad;
  trained.model->set_training(false);
  restored.model->set_training(false);
  CHECK(trained.model->forward(tokens).to_vector() == restored.model->forward(tokens).to_vector());
}
