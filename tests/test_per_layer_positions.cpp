// Per-layer position schemes (model.position as a list or an `every` rule, docs/config.md):
// reading, the resolved YAML round trip, errors naming the key or index, a model that
// shares one scheme module (and T5's one table) among the layers with the same config,
// and resume refusing a changed list.
#include <catch2/catch.hpp>
#include <map>
#include <string>
#include <vector>

#include "autograd/error.h"
#include "autograd/tape.h"
#include "fixture.h"
#include "layers/transformer.h"
#include "test_helpers.h"
#include "tests/test_files.h"
#include "tests/test_process.h"
#include "tests/tiny_run.h"
#include "train/ablation/sweep_file.h"
#include "train/config/config.h"
#include "train/run_state.h"

namespace relpos {

using Catch::Contains;
using testing::TempDir;

namespace {

std::vector<std::string> schemes_of(const RunConfig& c) {
  std::vector<std::string> out;
  for (std::int64_t l = 0; l < c.model.n_layers; ++l)
    out.push_back(layer_position(c.model, l).scheme);
  return out;
}

}  // namespace

TEST_CASE("per-layer positions: a list of names or mappings, and the every rule",
          "[config][per_layer]") {
  const RunConfig list = load_config(
      {}, {"model.n_layers=4", "model.position=[rope, {scheme: t5, num_buckets: 8}, none, t5]"});
  CHECK(schemes_of(list) == std::vector<std::string>{"rope", "t5", "none", "t5"});
  CHECK(list.model.layer_positions[1].get<std::int64_t>("num_buckets") == 8);
  CHECK(list.model.layer_positions[3].get<std::int64_t>("num_buckets") == 32);
  CHECK(position_label(list.model) == "rope+t5+none+t5");
  // Layer l uses `scheme` when (l + 1) % every == 0, else `else`.
  const RunConfig rule = load_config(
      {}, {"model.n_layers=6", "model.position={every: 3, scheme: none, else: {scheme: rope}}"});
  CHECK(schemes_of(rule) ==
        std::vector<std::string>{"rope", "rope", "none", "rope", "rope", "none"});
  // An entry's attention_window: the rule's layers get it, the others no window.
  const RunConfig windowed = load_config(
      {}, {"model.n_layers=4",
           "model.position={every: 2, scheme: none, else: {scheme: rope, attention_window: 8}}"});
  CHECK(schemes_of(windowed) == std::vector<std::string>{"rope", "none", "rope", "none"});
  CHECK(windowed.model.attention_window == std::vector<std::int64_t>{8, 0, 8, 0});
  // A key set after the list applies to every layer; a single mapping stays uniform.
  const RunConfig later = load_config(
      {}, {"model.n_layers=2", "model.position=[rope, none]", "model.position.rope_base=500"});
  CHECK(later.model.layer_positions[0].get<double>("rope_base") == 500);
  CHECK(later.model.layer_positions[1].get<double>("rope_base") == 500);
  CHECK(load_config({}, {"model.position.scheme=rope"}).model.layer_positions.empty());
  // T5's bucket kind follows model.causal in every entry that leaves it unset.
  const RunConfig encoder =
      load_config({}, {"model.causal=false", "model.n_layers=2",
                       "model.position=[t5, {scheme: t5, bidirectional_buckets: false}]"});
  CHECK(encoder.model.layer_positions[0].get<bool>("bidirectional_buckets"));
  CHECK_FALSE(encoder.model.layer_positions[1].get<bool>("bidirectional_buckets"));
}

TEST_CASE("per-layer positions: the resolved YAML round-trips, uniform configs are unchanged",
          "[config][per_layer]") {
  const RunConfig c =
      load_config({}, {"model.n_layers=3", "model.attention_window=[4, 0, 4]",
                       "model.position=[rope, {scheme: alibi}, {scheme: t5, per_layer: true}]"});
  const std::string yaml = to_yaml(c);
  const RunConfig back = config_from_yaml(yaml, "saved");
  CHECK(to_yaml(back) == yaml);
  CHECK(back.model.layer_positions == c.model.layer_positions);
  CHECK(back.model.attention_window == std::vector<std::int64_t>{4, 0, 4});
  CHECK(config_changes(c, back).empty());
  // One scheme everywhere: model.position stays one mapping.
  const std::string uniform = to_yaml(load_config({}, {"model.position.scheme=rope"}));
  CHECK(uniform.find("  position:\n    scheme: rope\n") != std::string::npos);
  // A changed entry is named by its index and key.
  RunConfig changed = c;
  changed.model.layer_positions[1].scheme = "none";
  const auto changes = config_changes(c, changed);
  REQUIRE(changes.size() == 1);
  CHECK(changes[0].key == "model.position[1].scheme");
  CHECK(changes[0].before == "alibi");
  CHECK(changes[0].after == "none");
}

TEST_CASE("per-layer positions: errors name the key or the index", "[config][per_layer]") {
  REQUIRE_THROWS_WITH(
      load_config({}, {"model.n_layers=3", "model.position=[rope, none]"}),
      "override 'model.position=[rope, none]': model.position: a list of 2 entries, expected one "
      "per layer (model.n_layers=3)");
  REQUIRE_THROWS_WITH(load_config({}, {"model.n_layers=2", "model.position=[rope, learned]"}),
                      Contains("model.position[1]: the scheme 'learned' adds its term to the "
                               "token embeddings"));
  REQUIRE_THROWS_WITH(load_config({}, {"model.n_layers=2", "model.position=[rope, [none]]"}),
                      Contains("model.position[1]: expected a scheme name or a mapping"));
  REQUIRE_THROWS_WITH(load_config({}, {"model.n_layers=2", "model.position=[rope, bogus]"}),
                      Contains("model.position[1]: "));
  REQUIRE_THROWS_WITH(
      load_config({}, {"model.n_layers=2", "model.position=[rope, {scheme: t5, buckets: 3}]"}),
      Contains("model.position[1]: ") && Contains("unknown key 'model.position.buckets'"));
  REQUIRE_THROWS_WITH(load_config({}, {"model.position={every: 2, scheme: none}"}),
                      Contains("a per-layer rule needs every, scheme and else"));
  REQUIRE_THROWS_WITH(load_config({}, {"model.position={every: 0, scheme: none, else: rope}"}),
                      Contains("model.position.every: expected an integer >= 1, got '0'"));
  REQUIRE_THROWS_WITH(load_config({}, {"model.position={every: 2, scheme: none, other: rope}"}),
                      Contains("unknown key 'other' in a per-layer rule"));
  REQUIRE_THROWS_WITH(
      load_config({}, {"model.n_layers=2", "model.position=[rope, {scheme: rope, rope_base: 1}]"}),
      Contains("model.position[1]: model.position.rope_base must be > 1"));
  REQUIRE_THROWS_WITH(
      load_config({}, {"model.n_layers=2", "model.attention_window=[4]",
                       "model.position=[{scheme: rope, attention_window: 8}, none]"}),
      Contains("entries set attention_window, and so does model.attention_window"));
  REQUIRE_THROWS_WITH(
      load_config({}, {"model.n_layers=2",
                       "model.position=[{scheme: rope, attention_window: x}, "
                       "none]"}),
      Contains("model.position[0]: ") && Contains("attention_window: expected an integer >= 0"));
  // model.attention_window
  REQUIRE_THROWS_WITH(load_config({}, {"model.n_layers=3", "model.attention_window=[4, 0]"}),
                      "model.attention_window: a list of 2 entries, expected [] (none), [W] "
                      "(every layer) or one per layer (model.n_layers=3)");
  REQUIRE_THROWS_WITH(load_config({}, {"model.attention_window=[-1]"}),
                      "model.attention_window[0] must be in [0, 2^24] (0: no window), got -1");
  REQUIRE_THROWS_WITH(load_config({}, {"model.causal=false", "model.attention_window=[8]"}),
                      Contains("model.attention_window[0]=8: a sliding window needs "
                               "model.causal=true"));
}

TEST_CASE("per-layer positions: layers with the same config share one scheme and its tables",
          "[per_layer][positions]") {
  ModelConfig uniform;
  uniform.vocab = 32;
  uniform.d_model = 16;
  uniform.n_layers = 3;
  uniform.n_heads = 2;
  uniform.d_ff = 32;
  uniform.position.scheme = "t5";
  ModelConfig listed = uniform;
  listed.layer_positions.assign(3, uniform.position);
  Rng rng_a(60), rng_b(60);
  TransformerLM a(uniform, rng_a), b(listed, rng_b);
  // The same parameters under position.0 instead of position, initialised alike.
  std::vector<std::string> names_b;
  for (const NamedParameter& p : b.parameters()) names_b.push_back(p.name);
  CHECK(std::count(names_b.begin(), names_b.end(), "position.0.table") == 1);
  CHECK(a.parameters().size() == b.parameters().size());
  NoGradGuard no_grad;
  Tensor tokens = Tensor::zeros({1, 9}, DType::i64);
  for (std::int64_t i = 0; i < 9; ++i) tokens.data<std::int64_t>()[i] = (i * 7) % 32;
  CHECK(testing::largest_difference(a.forward(tokens), b.forward(tokens)) == 0.0);
  // A hybrid: T5 in layers 0 and 2 (one shared table), no positions in layer 1.
  ModelConfig hybrid = listed;
  hybrid.layer_positions[1].scheme = "none";
  Rng rng_c(60);
  TransformerLM c(hybrid, rng_c);
  std::int64_t tables = 0;
  for (const NamedParameter& p : c.parameters()) tables += p.name.ends_with(".table") ? 1 : 0;
  CHECK(tables == 1);
  CHECK(testing::largest_difference(a.forward(tokens), c.forward(tokens)) > 1e-4);
}

TEST_CASE("cli: a resume with another per-layer list is refused in one line",
          "[per_layer][cli][slow]") {
  TempDir dir("per_layer");
  const std::string config =
      dir.write("hybrid.yaml",
                testing::tiny_run_yaml({"model.n_layers=2", "model.position=[rope, none]",
                                        "model.attention_window=[4, 0]", "train.steps=2"}))
          .string();
  const std::string out = (dir.path() / "run").string();
  auto r = testing::relpos_in(dir.path(), {"train", config, "train.out_dir=" + out});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  testing::require_one_line_error(
      testing::relpos_in(dir.path(), {"train", config, "train.out_dir=" + out, "train.steps=4",
                                      "model.position=[none, rope]", "--resume", out}),
      {"cannot change the architecture", "model.position[0].scheme was rope and is now none"});
  testing::require_one_line_error(
      testing::relpos_in(dir.path(), {"train", config, "train.out_dir=" + out, "train.steps=4",
                                      "model.attention_window=[4, 4]", "--resume", out}),
      {"cannot change the architecture", "model.attention_window was [4, 0] and is now [4, 4]"});
  r = testing::relpos_in(
      dir.path(), {"train", config, "train.out_dir=" + out, "train.steps=4", "--resume", out});
  INFO(r.err);
  CHECK(r.exit_code == 0);
}

TEST_CASE("cli: relpos positions --config shows each layer and its window", "[per_layer][cli]") {
  TempDir dir("per_layer_positions");
  const std::string config =
      dir.write("hybrid.yaml",
                "model:\n  n_layers: 2\n  position: [{scheme: rope, attention_window: 2}, "
                "{scheme: t5, num_buckets: 8}]\n")
          .string();
  const auto r = testing::relpos_in(dir.path(), {"positions", "--config", config, "--q-len", "3"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("layer 0: rope, causal sliding window of 2\n") != std::string::npos);
  CHECK(r.out.find("layer 1: t5 (num_buckets=8), every earlier position\n") != std::string::npos);
  // Layer 0's grid: distances j - i, '.' in the future and outside the window.
  CHECK(r.out.find("  2 |  . -1  0\n") != std::string::npos);
  testing::require_one_line_error(
      testing::relpos_in(dir.path(), {"positions", "t5", "--config", config}),
      {"give a SCHEME or --config, not both"});
}

TEST_CASE("ablation: configs/ablate_hybrid.yaml names per-layer lists and windows",
          "[per_layer][ablation]") {
  const AblationSweep sweep = load_sweep(testing::source_dir() / "configs" / "ablate_hybrid.yaml");
  const std::vector<RunConfig> configs = resolve_variant_configs(sweep);
  REQUIRE(configs.size() == 15);
  std::map<std::string, std::pair<std::string, std::vector<std::int64_t>>> seen;
  for (std::size_t i = 0; i < configs.size(); ++i) {
    const ModelConfig& m = configs[i].model;
    REQUIRE(configs[i].data.seq_len == 64);
    seen[sweep.run_label(i).substr(0, sweep.run_label(i).find('/'))] = {position_label(m),
                                                                        m.attention_window};
  }
  using Expected = std::pair<std::string, std::vector<std::int64_t>>;
  CHECK(seen["hybrid-rope_w16-nope"] == Expected{"rope+none", {16, 0}});
  CHECK(seen["hybrid-rope_w32-nope"] == Expected{"rope+none", {32, 0}});
  CHECK(seen["rope-w16"] == Expected{"rope", {16}});
  CHECK(seen["none"] == Expected{"none", {}});
  CHECK(seen["rope"] == Expected{"rope", {}});
}

}  // namespace relpos
