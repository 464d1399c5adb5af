// The run configuration: defaults, YAML layers and overrides, error messages,
// validation, the to_yaml round trip, docs/config.md and the configs/ examples.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "autograd/error.h"
#include "layers/position/registry.h"
#include "layers/transformer.h"
#include "tests/fixture.h"
#include "tests/test_files.h"
#include "train/config/config.h"
#include "train/config/memory_estimate.h"

namespace relpos {
namespace {

namespace fs = std::filesystem;
using Catch::Contains;
using testing::slurp;
using testing::TempDir;

RunConfig from_overrides(const std::vector<std::string>& overrides) {
  return load_config({}, overrides);
}

// Every field, compared one by one (data.seed is not a config key: the trainer derives it).
void require_same(const RunConfig& a, const RunConfig& b) {
  const ModelConfig &ma = a.model, &mb = b.model;
  CHECK(ma.vocab == mb.vocab);
  CHECK(ma.d_model == mb.d_model);
  CHECK(ma.n_layers == mb.n_layers);
  CHECK(ma.n_heads == mb.n_heads);
  CHECK(ma.d_ff == mb.d_ff);
  CHECK(ma.dropout == mb.dropout);
  CHECK(ma.norm == mb.norm);
  CHECK(ma.tie_embeddings == mb.tie_embeddings);
  CHECK(ma.causal == mb.causal);
  CHECK(ma.attention_path == mb.attention_path);
  CHECK(ma.attention_window == mb.attention_window);
  CHECK(ma.attention_temperature.kind == mb.attention_temperature.kind);
  CHECK(ma.attention_temperature.train_len == mb.attention_temperature.train_len);
  CHECK(ma.layer_positions == mb.layer_positions);
  CHECK(ma.attention_chunk.size == mb.attention_chunk.size);
  CHECK(ma.attention_chunk.left_chunks == mb.attention_chunk.left_chunks);
  CHECK(ma.attention_chunk.dynamic == mb.attention_chunk.dynamic);
  CHECK(ma.knn_memory.layer == mb.knn_memory.layer);
  CHECK(ma.knn_memory.size == mb.knn_memory.size);
  CHECK(ma.knn_memory.top_k == mb.knn_memory.top_k);
  const PositionConfig &pa = ma.position, &pb = mb.position;
  CHECK(pa.scheme == pb.scheme);
  for (const PositionKey& k : position_keys()) {
    INFO("model.position." << k.key.name);
    CHECK(pa.at(k.key.name) == pb.at(k.key.name));
  }
  CHECK(a.data.source == b.data.source);
  CHECK(a.data.tokenizer_kind == b.data.tokenizer_kind);
  CHECK(a.data.tokenizer_model == b.data.tokenizer_model);
  CHECK(a.data.seq_len == b.data.seq_len);
  CHECK(a.data.batch_size == b.data.batch_size);
  CHECK(a.data.val_fraction == b.data.val_fraction);
  CHECK(a.data.mask_prob == b.data.mask_prob);
  CHECK(a.data.stream_offsets == b.data.stream_offsets);
  CHECK(a.data.task.num_symbols == b.data.task.num_symbols);
  CHECK(a.data.task.offset == b.data.task.offset);
  CHECK(a.data.task.num_pairs == b.data.task.num_pairs);
  CHECK(a.data.task.min_items == b.data.task.min_items);
  CHECK(a.data.task.max_items == b.data.task.max_items);
  CHECK(a.optim.name == b.optim.name);
  CHECK(a.optim.lr == b.optim.lr);
  CHECK(a.optim.beta1 == b.optim.beta1);
  CHECK(a.optim.beta2 == b.optim.beta2);
  CHECK(a.optim.eps == b.optim.eps);
  CHECK(a.optim.weight_decay == b.optim.weight_decay);
  CHECK(a.optim.momentum == b.optim.momentum);
  CHECK(a.optim.nesterov == b.optim.nesterov);
  CHECK(a.optim.grad_clip == b.optim.grad_clip);
  CHECK(a.optim.grad_accum == b.optim.grad_accum);
  CHECK(a.optim.position_lr_scale == b.optim.position_lr_scale);
  CHECK(a.schedule.name == b.schedule.name);
  CHECK(a.schedule.warmup_steps == b.schedule.warmup_steps);
  CHECK(a.schedule.min_lr == b.schedule.min_lr);
  CHECK(a.train.steps == b.train.steps);
  CHECK(a.train.log_every == b.train.log_every);
  CHECK(a.train.eval_every == b.train.eval_every);
  CHECK(a.train.eval_batches == b.train.eval_batches);
  CHECK(a.train.checkpoint_every == b.train.checkpoint_every);
  CHECK(a.train.keep_checkpoints == b.train.keep_checkpoints);
  CHECK(a.train.on_divergence == b.train.on_divergence);
  CHECK(a.train.max_rollbacks == b.train.max_rollbacks);
  CHECK(a.train.mem_len == b.train.mem_len);
  CHECK(a.train.seed == b.train.seed);
  CHECK(a.train.threads == b.train.threads);
  CHECK(a.train.device == b.train.device);
  CHECK(a.train.precision == b.train.precision);
  CHECK(a.train.deterministic_reduce == b.train.deterministic_reduce);
  CHECK(a.train.out_dir == b.train.out_dir);
  CHECK(a.eval.lengths == b.eval.lengths);
}

// require_same compares this many keys; a new key must be added there too.
constexpr std::size_t kComparedKeys = 86;

// Every key set to a value other than its default (and valid together).
const char* const kEveryKeyYaml = R"(model:
  vocab: 300
  d_model: 96
  n_layers: 3
  n_heads: 6
  d_ff: 200
  dropout: 0.125
  norm: rmsnorm
  tie_embeddings: false
  causal: false
  attention: composed
  attention_window: [0]  # a window (> 0) needs a causal model
  attention_temperature:
    kind: learned  # log_length needs a causal model
    train_len: 50
  attention_chunk:
    size: 8
    left_chunks: 2
    dynamic: true
  position:
    scheme: shaw
    max_len: 4096
    max_relative: 5
    shaw_keys: false
    shaw_values: true
    per_head: true
    num_buckets: 64
    max_distance: 256
    bidirectional_buckets: false
    per_layer: true
    scale: false
    clamp_len: 7
    per_layer_uv: true
    rope_base: 500000
    randomized_max_len: 96
    sinusoid_scale: 0.5
    rope_scaling:
      kind: yarn
      factor: 8
      original_len: 48
      beta_fast: 16
      beta_slow: 2
    fire_hidden: 12
    fire_c: 0.5
    fire_threshold: 40
  knn_memory:
    layer: 2
    size: 96
    top_k: 8
data:
  source: offset_lookup
  tokenizer:  # a SentencePiece model needs a text corpus and a causal model (test_tokenizer.cpp)
    kind: bytes
    model: ""
  seq_len: 64
  batch_size: 5
  val_fraction: 0.25
  mask_prob: 0.3
  stream_offsets: redrawn  # train.mem_len is 7
  task:
    num_symbols: 20
    offset: 3
    num_pairs: 4
    min_items: 1  # offset_lookup accepts only the defaults (test_task_metrics.cpp sets others)
    max_items: 0
optim:
  name: sgd
  lr: 0.0003
  beta1: 0.8
  beta2: 0.95
  eps: 1e-6
  weight_decay: 0.5
  momentum: 0.9
  nesterov: true
  grad_clip: 0
  grad_accum: 4
  position_lr_scale: 2
schedule:
  name: warmup_linear
  warmup_steps: 7
  min_lr: 0.00001
train:
  steps: 77
  log_every: 3
  eval_every: 11
  eval_batches: 2
  checkpoint_every: 13
  keep_checkpoints: 0
  on_divergence: rollback
  max_rollbacks: 5
  mem_len: 7
  seed: 18446744073709551615
  threads: 2
  device: cuda
  precision: bf16
  deterministic_reduce: true
  out_dir: runs/every key
eval:
  lengths: [64, 128, 512]
)";

RunConfig every_key_expected() {
  RunConfig c;
  c.model = {300,
             96,
             3,
             6,
             200,
             0.125,
             NormKind::rmsnorm,
             false,
             false,
             {},
             AttentionPath::composed,
             {8, 2, true},
             {2, 96, 8},
             {},
             {0},
             {"learned", 50}};
  PositionConfig& p = c.model.position;
  p.scheme = "shaw";
  p.set("max_len", std::int64_t{4096});
  p.set("max_relative", std::int64_t{5});
  p.set("shaw_keys", false);
  p.set("shaw_values", true);
  p.set("per_head", true);
  p.set("num_buckets", std::int64_t{64});
  p.set("max_distance", std::int64_t{256});
  p.set("bidirectional_buckets", false);
  p.set("per_layer", true);
  p.set("scale", false);
  p.set("clamp_len", std::int64_t{7});
  p.set("per_layer_uv", true);
  p.set("rope_base", 500000.0);
  p.set("randomized_max_len", std::int64_t{96});
  p.set("sinusoid_scale", 0.5);
  p.set("rope_scaling.kind", std::string("yarn"));
  p.set("rope_scaling.factor", 8.0);
  p.set("rope_scaling.original_len", std::int64_t{48});
  p.set("rope_scaling.beta_fast", 16.0);
  p.set("rope_scaling.beta_slow", 2.0);
  p.set("fire_hidden", std::int64_t{12});
  p.set("fire_c", 0.5);
  p.set("fire_threshold", 40.0);
  c.data.source = "offset_lookup";
  c.data.seq_len = 64;
  c.data.batch_size = 5;
  c.data.val_fraction = 0.25;
  c.data.mask_prob = 0.3;
  c.data.stream_offsets = "redrawn";
  c.data.task = {20, 3, 4, 1, 0};
  c.optim = {"sgd", 3e-4, 0.8, 0.95, 1e-6, 0.5, 0.9, true, 0.0, 4, 2.0};
  c.schedule = {"warmup_linear", 7, 1e-5};
  c.train = {77, 3,          11,     2,    13,
             0,  "rollback", 5,      7,    std::numeric_limits<std::uint64_t>::max(),
             2,  "cuda",     "bf16", true, "runs/every key"};
  c.eval.lengths = {64, 128, 512};
  return c;
}

}  // namespace

TEST_CASE("config: no files and no overrides give the struct defaults", "[config]") {
  const RunConfig c = load_config({}, {});
  require_same(c, RunConfig{});
  // Spot checks of the documented defaults, independent of the structs.
  CHECK(c.model.d_model == 128);
  CHECK(c.model.position.scheme == "none");
  CHECK(c.model.position.get<bool>("bidirectional_buckets") ==
        false);  // follows model.causal = true
  CHECK(c.optim.lr == 1e-3);
  CHECK(c.train.out_dir == "runs/default");
  CHECK(c.eval.lengths.empty());
}

TEST_CASE("config: a file setting every key reaches every field", "[config]") {
  REQUIRE(config_keys().size() == kComparedKeys);
  TempDir dir("config");
  const RunConfig c = load_config({dir.write("every.yaml", kEveryKeyYaml)}, {});
  require_same(c, every_key_expected());
}

TEST_CASE("config: overrides win over files, later files over earlier ones", "[config]") {
  TempDir dir("config");
  const std::string base = dir.write("base.yaml",
                                     "model:\n  d_model: 256\n  n_heads: 8\n"
                                     "optim:\n  lr: 3e-4\n  weight_decay: 0.01\n");
  const std::string overlay = dir.write("overlay.yaml",
                                        "optim:\n  lr: 2e-3\n"
                                        "model:\n  position:\n    scheme: t5\n");
  SECTION("file then override") {
    const RunConfig c = load_config({base}, {"optim.lr=5e-4", "eval.lengths=[128, 256]"});
    CHECK(c.model.d_model == 256);
    CHECK(c.model.n_heads == 8);
    CHECK(c.optim.lr == 5e-4);
    CHECK(c.optim.weight_decay == 0.01);
    CHECK(c.eval.lengths == std::vector<std::int64_t>{128, 256});
    CHECK(c.model.n_layers == 2);  // untouched: the default
  }
  SECTION("two files merged") {
    const RunConfig c = load_config({base, overlay}, {});
    CHECK(c.model.d_model == 256);
    CHECK(c.optim.lr == 2e-3);
    CHECK(c.optim.weight_decay == 0.01);
    CHECK(c.model.position.scheme == "t5");
  }
  SECTION("the order of the files decides") {
    CHECK(load_config({overlay, base}, {}).optim.lr == 3e-4);
  }
  SECTION("later overrides win; a section can be overridden as a mapping") {
    const RunConfig c = load_config({base}, {"optim.lr=1e-2", "optim.lr=4e-3",
                                             "model.position={scheme: shaw, max_relative: 8}"});
    CHECK(c.optim.lr == 4e-3);
    CHECK(c.model.position.scheme == "shaw");
    CHECK(c.model.position.get<std::int64_t>("max_relative") == 8);
  }
  SECTION("dotted keys inside a file") {
    const RunConfig c =
        load_config({dir.write("dotted.yaml", "model.position.scheme: rope\n")}, {});
    CHECK(c.model.position.scheme == "rope");
  }
  SECTION("empty files and empty sections change nothing") {
    const RunConfig c = load_config(
        {dir.write("empty.yaml", ""), dir.write("sections.yaml", "model:\neval:\n")}, {});
    require_same(c, RunConfig{});
  }
}

TEST_CASE("config: enum values map to the right enumerators", "[config]") {
  CHECK(from_overrides({"model.norm=rmsnorm"}).model.norm == NormKind::rmsnorm);
  CHECK(from_overrides({"model.norm=layernorm"}).model.norm == NormKind::layernorm);
  CHECK(from_overrides({"model.attention=composed"}).model.attention_path ==
        AttentionPath::composed);
  CHECK(from_overrides({"model.attention=fused"}).model.attention_path == AttentionPath::fused);
}

TEST_CASE("config: to_yaml round-trips every key", "[config]") {
  SECTION("defaults") {
    const RunConfig c;
    require_same(config_from_yaml(to_yaml(c), "defaults"), c);
  }
  SECTION("every key changed, with values that are hard to print") {
    RunConfig c = every_key_expected();
    c.optim.lr = 1.0 / 3.0;
    c.optim.eps = 1.2345678901234567e-9;
    c.schedule.min_lr = 0.1 / 3.0;
    c.model.position.set("rope_base", 1e300);
    c.data.val_fraction = 0.1 + 0.2;  // not 0.3
    c.train.out_dir = "runs/a b: c # d";
    c.data.source = "~";
    validate(c);
    const std::string yaml = to_yaml(c);
    INFO(yaml);
    require_same(config_from_yaml(yaml, "round trip"), c);
    CHECK(to_yaml(config_from_yaml(yaml, "round trip")) == yaml);
  }
  SECTION("strings that read as null or a number stay strings") {
    RunConfig c;
    c.train.out_dir = "null";
    c.data.source = "123";
    require_same(config_from_yaml(to_yaml(c), "round trip"), c);
  }
}

TEST_CASE("config: to_yaml writes every key as nested maps in schema order", "[config]") {
  const std::string yaml = to_yaml(RunConfig{});
  // (path, value) of every leaf, in the order written.
  std::vector<std::pair<std::string, std::string>> leaves;
  const auto flatten = [&](const auto& self, const YAML::Node& map,
                           const std::string& prefix) -> void {
    for (const auto& entry : map) {
      const std::string path = prefix + entry.first.Scalar();
      if (entry.second.IsMap()) {
        self(self, entry.second, path + ".");
      } else {
        leaves.emplace_back(path, YAML::Dump(entry.second));
      }
    }
  };
  flatten(flatten, YAML::Load(yaml), "");
  const std::vector<ConfigKeyInfo> keys = config_keys();
  REQUIRE(leaves.size() == keys.size());
  for (std::size_t i = 0; i < keys.size(); ++i) {
    CHECK(leaves[i].first == keys[i].path);
    CHECK(leaves[i].second == keys[i].default_value);
  }
  CHECK(yaml.starts_with("model:\n  vocab: 256\n"));
  CHECK(yaml.find("\n  position:\n    scheme: none\n") != std::string::npos);
}

TEST_CASE("config: bidirectional_buckets follows model.causal unless set", "[config]") {
  CHECK(from_overrides({}).model.position.get<bool>("bidirectional_buckets") == false);
  CHECK(from_overrides({"model.causal=false"}).model.position.get<bool>("bidirectional_buckets") ==
        true);
  CHECK(from_overrides({"model.causal=false", "model.position.bidirectional_buckets=false"})
            .model.position.get<bool>("bidirectional_buckets") == false);
  CHECK(from_overrides({"model.causal=true", "model.position.bidirectional_buckets=true"})
            .model.position.get<bool>("bidirectional_buckets") == true);
  TempDir dir("config");
  const std::string set =
      dir.write("set.yaml", "model:\n  position:\n    bidirectional_buckets: false\n");
  CHECK(load_config({set}, {"model.causal=false"})
            .model.position.get<bool>("bidirectional_buckets") == false);
}

TEST_CASE("config: a warmup longer than the run is cut to the run", "[config]") {
  const RunConfig clamped = from_overrides({"train.steps=20", "schedule.warmup_steps=50"});
  const RunConfig exact = from_overrides({"train.steps=20", "schedule.warmup_steps=20"});
  CHECK(clamped.schedule.warmup_steps == 20);
  require_same(clamped, exact);
  CHECK(from_overrides({"train.steps=20", "schedule.warmup_steps=19"}).schedule.warmup_steps == 19);
  // A negative warmup is still refused, not clamped.
  REQUIRE_THROWS_WITH(from_overrides({"train.steps=20", "schedule.warmup_steps=-1"}),
                      Contains("schedule.warmup_steps=-1"));
}

}  // namespace relpos
