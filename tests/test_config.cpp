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
  CHECK(a.data.seq_len == b.data.seq_len);
  CHECK(a.data.batch_size == b.data.batch_size);
  CHECK(a.data.val_fraction == b.data.val_fraction);
  CHECK(a.data.mask_prob == b.data.mask_prob);
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
constexpr std::size_t kComparedKeys = 70;

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
  knn_memory:
    layer: 2
    size: 96
    top_k: 8
data:
  source: offset_lookup
  seq_len: 64
  batch_size: 5
  val_fraction: 0.25
  mask_prob: 0.3
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
             {2, 96, 8}};
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
  c.data.source = "offset_lookup";
  c.data.seq_len = 64;
  c.data.batch_size = 5;
  c.data.val_fraction = 0.25;
  c.data.mask_prob = 0.3;
  c.data.task = {20, 3, 4, 1, 0};
  c.optim = {"sgd", 3e-4, 0.8, 0.95, 1e-6, 0.5, 0.9, true, 0.0, 4};
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

TEST_CASE("config: file errors name the file and line", "[config]") {
  TempDir dir("config");
  SECTION("missing file") {
    const std::string missing = (dir.path() / "missing.yaml").string();
    REQUIRE_THROWS_WITH(load_config({missing}, {}),
                        "config file '" + missing + "': cannot open: No such file or directory");
  }
  SECTION("a directory") {
    REQUIRE_THROWS_WITH(load_config({(dir.path() / "").string()}, {}),
                        Contains("cannot open: Is a directory"));
  }
  SECTION("invalid YAML") {
    const std::string f = dir.write("bad.yaml", "model:\n  d_model: 128\n  n_heads: [4, 8\n");
    REQUIRE_THROWS_WITH(load_config({f}, {}),
                        Contains(f + ":4:1: invalid YAML: end of sequence flow not found"));
  }
  SECTION("unknown key with a suggestion") {
    const std::string f = dir.write("typo.yaml", "model:\n  n_heads: 4\n  d_modle: 64\n");
    REQUIRE_THROWS_WITH(load_config({f}, {}),
                        f + ":3: unknown key 'model.d_modle' (did you mean 'model.d_model'?)");
  }
  SECTION("unknown section with a suggestion") {
    const std::string f = dir.write("section.yaml", "optim:\n  lr: 1e-3\nmodle:\n  d_model: 64\n");
    REQUIRE_THROWS_WITH(load_config({f}, {}),
                        f + ":3: unknown key 'modle' (did you mean 'model'?)");
  }
  SECTION("a key in the wrong section is suggested by its name") {
    const std::string f = dir.write("wrong.yaml", "model:\n  num_buckets: 16\n");
    REQUIRE_THROWS_WITH(
        load_config({f}, {}),
        f + ":2: unknown key 'model.num_buckets' (did you mean 'model.position.num_buckets'?)");
  }
  SECTION("an unknown key with nothing close") {
    const std::string f = dir.write("far.yaml", "train:\n  wandb_project: x\n");
    REQUIRE_THROWS_WITH(load_config({f}, {}), f + ":2: unknown key 'train.wandb_project'");
  }
  SECTION("data.seed is derived, not a key") {
    const std::string f = dir.write("seed.yaml", "data:\n  seed: 3\n");
    REQUIRE_THROWS_WITH(load_config({f}, {}), Contains(f + ":2: unknown key 'data.seed'"));
  }
  SECTION("wrong scalar types") {
    const std::string f = dir.write("types.yaml", "model:\n  d_model: abc\n");
    REQUIRE_THROWS_WITH(load_config({f}, {}),
                        f + ":2: model.d_model: expected an integer, got 'abc'");
    const std::string g = dir.write("float.yaml", "optim:\n  lr: 1e-3\n  eps: fast\n");
    REQUIRE_THROWS_WITH(load_config({g}, {}), g + ":3: optim.eps: expected a number, got 'fast'");
    const std::string h = dir.write("bool.yaml", "model:\n  causal: yes\n");
    REQUIRE_THROWS_WITH(load_config({h}, {}),
                        h + ":2: model.causal: expected true or false, got 'yes'");
    const std::string i = dir.write("int.yaml", "model:\n  n_layers: 2.5\n");
    REQUIRE_THROWS_WITH(load_config({i}, {}),
                        i + ":2: model.n_layers: expected an integer, got '2.5'");
    const std::string j = dir.write("inf.yaml", "optim:\n  lr: inf\n");
    REQUIRE_THROWS_WITH(load_config({j}, {}),
                        j + ":2: optim.lr: expected a finite number, got 'inf'");
  }
  SECTION("a mapping where a value is expected") {
    const std::string f = dir.write("map.yaml", "model:\n  d_model:\n    x: 1\n");
    REQUIRE_THROWS_WITH(load_config({f}, {}),
                        f + ":3: model.d_model: expected an integer, got a mapping");
  }
  SECTION("a value where a mapping is expected") {
    const std::string f = dir.write("scalar.yaml", "optim:\n  lr: 1e-3\nmodel: 5\n");
    REQUIRE_THROWS_WITH(load_config({f}, {}), f + ":3: model: expected a mapping of keys, got '5'");
    const std::string g = dir.write("list.yaml", "- model\n- optim\n");
    REQUIRE_THROWS_WITH(load_config({g}, {}),
                        g + ":1: expected a mapping of config keys, got a list");
  }
  SECTION("lists") {
    const std::string f = dir.write("lengths.yaml", "eval:\n  lengths: 128\n");
    REQUIRE_THROWS_WITH(load_config({f}, {}),
                        f + ":2: eval.lengths: expected a list of integers, got '128'");
    const std::string g = dir.write("element.yaml", "eval:\n  lengths:\n    - 128\n    - x\n");
    REQUIRE_THROWS_WITH(load_config({g}, {}),
                        g + ":4: eval.lengths[1]: expected an integer, got 'x'");
  }
  SECTION("bad enum values list the allowed ones") {
    const std::string f = dir.write("enum.yaml", "model:\n  norm: batchnorm\n");
    REQUIRE_THROWS_WITH(load_config({f}, {}),
                        f + ":2: model.norm: expected one of layernorm, rmsnorm, got 'batchnorm'");
  }
  SECTION("a key set twice in one file") {
    const std::string f = dir.write("twice.yaml", "model:\n  d_model: 64\nmodel.d_model: 32\n");
    REQUIRE_THROWS_WITH(load_config({f}, {}),
                        f + ":3: key 'model.d_model' is set twice (first at " + f + ":2)");
  }
  SECTION("a later file may set a key again") {
    const std::string a = dir.write("a.yaml", "model:\n  d_model: 64\n");
    const std::string b = dir.write("b.yaml", "model:\n  d_model: 32\n");
    CHECK(load_config({a, b}, {}).model.d_model == 32);
  }
}

TEST_CASE("config: override errors name the override", "[config]") {
  SECTION("no '='") {
    REQUIRE_THROWS_WITH(from_overrides({"optim.lr"}),
                        "override 'optim.lr': expected key.path=value");
    REQUIRE_THROWS_WITH(from_overrides({"=3"}), "override '=3': expected key.path=value");
  }
  SECTION("unknown key") {
    REQUIRE_THROWS_WITH(from_overrides({"model.foo=1"}),
                        "override 'model.foo=1': unknown key 'model.foo'");
    REQUIRE_THROWS_WITH(
        from_overrides({"optim.lrr=1"}),
        "override 'optim.lrr=1': unknown key 'optim.lrr' (did you mean 'optim.lr'?)");
  }
  SECTION("wrong type") {
    REQUIRE_THROWS_WITH(from_overrides({"optim.lr=abc"}),
                        "override 'optim.lr=abc': optim.lr: expected a number, got 'abc'");
    REQUIRE_THROWS_WITH(
        from_overrides({"train.seed=-1"}),
        "override 'train.seed=-1': train.seed: expected a non-negative integer, got '-1'");
    REQUIRE_THROWS_WITH(from_overrides({"train.out_dir="}),
                        "override 'train.out_dir=': train.out_dir: expected a string, got null");
    REQUIRE_THROWS_WITH(from_overrides({"model.d_model=99999999999999999999"}),
                        Contains("model.d_model: expected an integer, got '99999999999999999999'"));
  }
  SECTION("bad enum value") {
    REQUIRE_THROWS_WITH(from_overrides({"model.position.scheme=t6"}),
                        fmt::format("override 'model.position.scheme=t6': model.position.scheme: "
                                    "expected one of {}, got 't6'",
                                    fmt::join(position_scheme_names(), ", ")));
    CHECK(position_scheme_names().front() == "none");  // in registry order
  }
  SECTION("invalid YAML value") {
    REQUIRE_THROWS_WITH(from_overrides({"eval.lengths=[128"}),
                        Contains("override 'eval.lengths=[128': invalid YAML value:"));
  }
  SECTION("a section needs a mapping") {
    REQUIRE_THROWS_WITH(from_overrides({"model.position=t5"}),
                        "override 'model.position=t5': model.position: expected a mapping of keys, "
                        "got 't5'");
  }
}

TEST_CASE("config: errors in an embedded config name its origin", "[config]") {
  REQUIRE_THROWS_WITH(
      config_from_yaml("model:\n  vocab: 256\n  layers: 2\n", "run.h5:/state/config"),
      "run.h5:/state/config:3: unknown key 'model.layers' (did you mean "
      "'model.n_layers'?)");
  REQUIRE_THROWS_WITH(config_from_yaml("model: {", "ckpt"), Contains("ckpt:1:"));
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

TEST_CASE("config: validation errors name the keys and values", "[config]") {
  struct Case {
    std::vector<std::string> overrides;
    std::vector<std::string> expected;  // substrings of the message
  };
  const std::vector<Case> cases = {
      {{"model.d_model=130", "model.n_heads=4"}, {"model.d_model=130", "model.n_heads=4"}},
      {{"model.n_heads=0"}, {"model.n_heads must be >= 1, got 0"}},
      {{"model.vocab=0"}, {"model.vocab must be >= 1, got 0"}},
      {{"model.n_layers=-1"}, {"model.n_layers must be >= 1, got -1"}},
      {{"model.d_ff=0"}, {"model.d_ff must be >= 1, got 0"}},
      {{"model.dropout=1"}, {"model.dropout must be in [0, 1), got 1"}},
      {{"model.dropout=-0.1"}, {"model.dropout must be in [0, 1), got -0.1"}},
      {{"optim.lr=0"}, {"optim.lr must be > 0, got 0"}},
      {{"schedule.min_lr=0.01"}, {"schedule.min_lr=0.01", "[0, 0.001]"}},
      {{"schedule.min_lr=-1e-5"}, {"schedule.min_lr=-1e-05"}},
      {{"schedule.warmup_steps=-1"}, {"schedule.warmup_steps=-1"}},
      {{"optim.beta1=1"}, {"optim.beta1 must be in [0, 1), got 1"}},
      {{"optim.beta2=-0.5"}, {"optim.beta2 must be in [0, 1), got -0.5"}},
      {{"optim.eps=0"}, {"optim.eps must be > 0, got 0"}},
      {{"optim.weight_decay=-0.1"}, {"optim.weight_decay must be >= 0, got -0.1"}},
      {{"optim.momentum=1.5"}, {"optim.momentum must be in [0, 1), got 1.5"}},
      {{"optim.grad_clip=-1"}, {"optim.grad_clip must be >= 0", "got -1"}},
      {{"optim.grad_accum=0"}, {"optim.grad_accum must be >= 1, got 0"}},
      {{"data.seq_len=1"}, {"data.seq_len must be >= 2, got 1"}},
      {{"data.batch_size=0"}, {"data.batch_size must be >= 1, got 0"}},
      {{"data.val_fraction=0"}, {"data.val_fraction must be in (0, 1), got 0"}},
      {{"data.val_fraction=1"}, {"data.val_fraction must be in (0, 1), got 1"}},
      {{"data.source=''"}, {"data.source must not be empty"}},
      {{"data.source=offset_lookup", "data.task.offset=300"},
       {"data.task", "offset", "300", "data.seq_len=256"}},
      {{"data.source=copy", "data.task.num_symbols=1"}, {"data.task", "num_symbols", "got 1"}},
      {{"train.steps=0"}, {"train.steps must be >= 1, got 0"}},
      {{"train.eval_every=0"}, {"train.eval_every must be >= 1, got 0"}},
      {{"train.checkpoint_every=0"}, {"train.checkpoint_every must be >= 1, got 0"}},
      {{"train.log_every=0"}, {"train.log_every must be >= 1, got 0"}},
      {{"train.eval_batches=0"}, {"train.eval_batches must be >= 1, got 0"}},
      {{"train.keep_checkpoints=-1"}, {"train.keep_checkpoints must be >= 0, got -1"}},
      {{"train.max_rollbacks=-1"}, {"train.max_rollbacks must be >= 0, got -1"}},
      {{"train.threads=-2"}, {"train.threads must be >= 0, got -2"}},
      {{"train.out_dir=''"}, {"train.out_dir must not be empty"}},
      {{"eval.lengths=[512, 1]"}, {"eval.lengths[1] must be >= 2, got 1"}},
      {{"model.position.scheme=t5", "model.position.num_buckets=1"},
       {"model.position.num_buckets=1", "max_exact=0"}},
      {{"model.position.scheme=t5", "model.causal=false", "model.position.num_buckets=3"},
       {"model.position.num_buckets=3", "model.position.bidirectional_buckets=true",
        "max_exact=0"}},
      {{"model.position.scheme=t5", "model.position.num_buckets=32",
        "model.position.max_distance=8"},
       {"model.position.max_distance=8", "must exceed max_exact=16"}},
      {{"model.position.scheme=shaw", "model.position.max_relative=0"},
       {"model.position.max_relative must be >= 1, got 0"}},
      {{"model.position.scheme=shaw", "model.position.shaw_keys=false",
        "model.position.shaw_values=false"},
       {"model.position.shaw_keys", "model.position.shaw_values"}},
      {{"model.position.scheme=xl", "model.causal=false"},
       {"model.position.scheme=xl needs model.causal=true"}},
      {{"model.position.scheme=xl", "model.position.clamp_len=-1"},
       {"model.position.clamp_len must be >= 0, got -1"}},
      {{"model.position.scheme=rope", "model.d_model=12", "model.n_heads=4"},
       {"even head dimension", "model.d_model=12", "model.n_heads=4", "= 3"}},
      {{"model.position.scheme=rope", "model.position.rope_base=1"},
       {"model.position.rope_base must be > 1, got 1"}},
      {{"model.position.scheme=sinusoidal", "model.d_model=129", "model.n_heads=3"},
       {"needs an even model.d_model, got 129"}},
      {{"model.position.scheme=learned", "model.position.max_len=100"},
       {"model.position.max_len=100", "data.seq_len=256"}},
      {{"model.position.scheme=learned", "eval.lengths=[512, 2048]"},
       {"model.position.max_len=1024", "eval.lengths entry 2048"}},
      {{"model.position.scheme=rope", "model.position.randomized_max_len=100"},
       {"model.position.randomized_max_len must be 0 (off) or in [data.seq_len, 2^24] = "
        "[256, 16777216]",
        "scheme rope", "got 100"}},
      {{"model.position.scheme=sinusoidal", "model.position.randomized_max_len=-1"},
       {"randomized_max_len", "got -1"}},
      {{"model.position.scheme=learned", "model.position.randomized_max_len=2048"},
       {"model.position.randomized_max_len=2048 is beyond model.position.max_len=1024"}},
      {{"data.source=copy", "data.seq_len=32", "data.task.max_items=17"},
       {"data.task", "data.source=copy", "max_items 17", "training seq_len 32"}},
      {{"data.source=reverse", "data.task.min_items=0"}, {"min_items must be >= 1, got 0"}},
      {{"data.source=copy", "data.task.min_items=5", "data.task.max_items=4"},
       {"max_items must be 0", ">= min_items = 5, got 4"}},
      {{"data.source=offset_lookup", "data.task.max_items=4"}, {"apply to copy and reverse only"}},
      {{"data.source=copy", "data.task.max_items=4", "model.causal=false"},
       {"data.task.max_items=4", "needs model.causal=true"}},
      {{"model.knn_memory.layer=2"}, {"model.knn_memory.layer", "[0, 2), got 2"}},
      {{"model.knn_memory.layer=-2"}, {"model.knn_memory.layer", "got -2"}},
      {{"model.knn_memory.size=0"}, {"model.knn_memory.size must be >= 1, got 0"}},
      {{"model.knn_memory.top_k=-1"}, {"model.knn_memory.top_k must be >= 1, got -1"}},
      {{"model.knn_memory.size=16", "model.knn_memory.top_k=17"},
       {"model.knn_memory.top_k=17 must be <= model.knn_memory.size=16"}},
  };
  for (const Case& c : cases) {
    INFO(c.overrides.front());
    try {
      from_overrides(c.overrides);
      FAIL("no error");
    } catch (const UsageError& e) {
      const std::string message = e.what();
      INFO(message);
      CHECK(message.find('\n') == std::string::npos);
      for (const std::string& part : c.expected) CHECK(message.find(part) != std::string::npos);
    }
  }
  // The settings of schemes not chosen are not checked.
  CHECK_NOTHROW(from_overrides({"model.position.num_buckets=1", "model.position.max_len=1"}));
  CHECK_NOTHROW(from_overrides(
      {"model.position.scheme=learned", "model.position.max_len=2048", "eval.lengths=[2048]"}));
}

TEST_CASE("config: validate checks values set in code", "[config]") {
  RunConfig c;
  c.optim.name = "rmsprop";
  REQUIRE_THROWS_WITH(validate(c), "optim.name must be one of sgd, adam, adamw, got 'rmsprop'");
  c = RunConfig{};
  c.train.device = "tpu";
  REQUIRE_THROWS_WITH(validate(c), "train.device must be one of cpu, cuda, got 'tpu'");
  c = RunConfig{};
  c.model.position.scheme = "nope";
  REQUIRE_THROWS_WITH(validate(c), Contains("model.position.scheme must be one of none,"));
  CHECK_NOTHROW(validate(RunConfig{}));
}

// docs/config.md documents every key in a table row of its "## Keys" chapter,
// | `path` | type | `default` | meaning |, with an enum's values in its type cell.
TEST_CASE("config: docs/config.md documents every key with its type and default", "[config]") {
  const std::string docs = slurp(testing::source_dir() / "docs" / "config.md");
  std::map<std::string, std::vector<std::string>> rows;  // path -> cells
  std::istringstream lines(docs);
  bool in_keys = false;  // inside the "## Keys" chapter
  for (std::string line; std::getline(lines, line);) {
    if (line.starts_with("## ")) in_keys = line == "## Keys";
    if (!in_keys || !line.starts_with("| `")) continue;
    std::vector<std::string> cells;
    std::istringstream split(line.substr(1));
    for (std::string cell; std::getline(split, cell, '|');) {
      const auto begin = cell.find_first_not_of(' ');
      const auto end = cell.find_last_not_of(' ');
      cells.push_back(begin == std::string::npos ? "" : cell.substr(begin, end - begin + 1));
    }
    REQUIRE(cells.size() >= 4);
    rows[cells[0].substr(1, cells[0].size() - 2)] = cells;
  }
  std::vector<std::string> paths;
  for (const ConfigKeyInfo& key : config_keys()) {
    INFO(key.path);
    paths.push_back(key.path);
    const auto row = rows.find(key.path);
    REQUIRE(row != rows.end());
    const std::vector<std::string>& cells = row->second;
    CHECK(cells[1].starts_with(key.type));
    for (const std::string& choice : key.choices) {
      CHECK(cells[1].find("`" + choice + "`") != std::string::npos);
    }
    CHECK(cells[2] == "`" + key.default_value + "`");
    CHECK(!cells[3].empty());
  }
  for (const auto& [path, cells] : rows) {
    INFO(path);
    CHECK(std::find(paths.begin(), paths.end(), path) != paths.end());  // no stale keys
  }
}

// The model.position table of docs/config.md, as the registry generates it.
std::string position_keys_table() {
  std::string table = "| key | type | default | meaning |\n|---|---|---|---|\n";
  for (const ConfigKeyInfo& key : config_keys()) {
    if (!key.path.starts_with("model.position.")) continue;
    std::string type = key.type;
    for (std::size_t i = 0; i < key.choices.size(); ++i)
      type += (i == 0 ? ": `" : ", `") + key.choices[i] + "`";
    table +=
        fmt::format("| `{}` | {} | `{}` | {} |\n", key.path, type, key.default_value, key.meaning);
  }
  return table;
}

TEST_CASE("config: docs/config.md's model.position table is the registry's", "[config][docs]") {
  const fs::path file = testing::source_dir() / "docs" / "config.md";
  const std::string docs = slurp(file);
  const std::string begin_mark = "<!-- generated from the scheme registry:";
  const std::string end_mark = "<!-- end of generated table -->";
  const auto begin = docs.find('\n', docs.find(begin_mark)) + 1;
  const auto end = docs.find(end_mark);
  REQUIRE(docs.find(begin_mark) != std::string::npos);
  REQUIRE(end != std::string::npos);
  const std::string expected = position_keys_table();
  if (std::getenv("RELPOS_UPDATE_DOCS")) {
    std::ofstream(file, std::ios::binary) << docs.substr(0, begin) << expected << docs.substr(end);
    return;
  }
  INFO("regenerate with: RELPOS_UPDATE_DOCS=1 build/tests/relpos_tests \"[docs]\"");
  CHECK(docs.substr(begin, end - begin) == expected);
}

TEST_CASE("config: the scheme overlays in configs/schemes load", "[config]") {
  const fs::path root = testing::source_dir() / "configs";
  const ConfigKeyInfo scheme = [] {
    for (const ConfigKeyInfo& key : config_keys()) {
      if (key.path == "model.position.scheme") return key;
    }
    FAIL("no model.position.scheme key");
    return ConfigKeyInfo{};
  }();
  const bool has_quickstart = fs::exists(root / "quickstart.yaml");
  for (const std::string& name : scheme.choices) {
    INFO(name);
    const fs::path file = root / "schemes" / (name + ".yaml");
    REQUIRE(fs::exists(file));
    // Only model.position settings, so the file works as an overlay.
    const YAML::Node node = YAML::LoadFile(file.string());
    REQUIRE(node.size() == 1);
    REQUIRE(node["model"].size() == 1);
    REQUIRE(node["model"]["position"].IsMap());
    const RunConfig c = load_config({file.string()}, {});
    CHECK(c.model.position.scheme == name);
    if (has_quickstart) {
      CHECK_NOTHROW(load_config({(root / "quickstart.yaml").string(), file.string()}, {}));
    }
  }
  const RunConfig shaw = load_config({(root / "schemes" / "shaw.yaml").string()}, {});
  CHECK(shaw.model.position.get<std::int64_t>("max_relative") == 16);
  const RunConfig t5 = load_config({(root / "schemes" / "t5.yaml").string()}, {});
  CHECK(t5.model.position.get<std::int64_t>("num_buckets") == 32);
  CHECK(t5.model.position.get<std::int64_t>("max_distance") == 128);
  const RunConfig learned = load_config({(root / "schemes" / "learned.yaml").string()}, {});
  CHECK(learned.model.position.get<std::int64_t>("max_len") == 2048);
}

TEST_CASE("config: every run config under configs/ loads", "[config]") {
  for (const auto& entry : fs::recursive_directory_iterator(testing::source_dir() / "configs")) {
    if (entry.path().extension() != ".yaml") continue;
    // Sweep files (a top-level `variants:` list) are checked by tests/test_ablation.cpp.
    if (YAML::LoadFile(entry.path().string())["variants"]) continue;
    INFO(entry.path().string());
    CHECK_NOTHROW(load_config({entry.path().string()}, {}));
  }
}

TEST_CASE("config: sizes whose products overflow are refused, naming the keys",
          "[config][bounds]") {
  struct Case {
    std::vector<std::string> overrides;
    std::vector<std::string> expected;  // substrings of the message
  };
  const std::vector<Case> cases = {
      {{"model.vocab=4611686018427387904"}, {"too large", "model.vocab=4611686018427387904"}},
      {{"data.batch_size=4611686018427387904"},
       {"too large", "data.batch_size=4611686018427387904"}},
      {{"model.d_ff=4611686018427387904"}, {"too large", "model.d_ff=4611686018427387904"}},
      {{"model.d_model=4294967296", "model.n_heads=1"}, {"too large", "model.d_model=4294967296"}},
      {{"eval.lengths=[4611686018427387904]"}, {"too large", "eval.lengths=[4611686018427387904]"}},
      {{"train.eval_batches=4611686018427387904"}, {"too large", "train.eval_batches="}},
      {{"model.n_layers=1000000"}, {"model.n_layers must be <= 1024, got 1000000"}},
      {{"train.threads=100000"}, {"train.threads must be <= 1024, got 100000"}},
      {{"model.position.scheme=t5", "model.position.num_buckets=1000000000"},
       {"model.position.num_buckets must be <= 1048576, got 1000000000"}},
      {{"model.position.scheme=learned", "model.position.max_len=1000000000"},
       {"model.position.max_len must be <= 1048576, got 1000000000"}},
      {{"model.position.scheme=shaw", "model.position.max_relative=1000000000"},
       {"model.position.max_relative must be <= 1048576, got 1000000000"}},
  };
  for (const Case& c : cases) {
    INFO(fmt::format("{}", fmt::join(c.overrides, " ")));
    try {
      load_config({}, c.overrides);
      FAIL("accepted");
    } catch (const UsageError& e) {
      const std::string message = e.what();
      for (const std::string& part : c.expected) CHECK_THAT(message, Contains(part));
    }
  }
  // The caps themselves are accepted.
  CHECK_NOTHROW(from_overrides({"model.n_layers=1024", "model.d_model=8", "model.d_ff=8",
                                "model.n_heads=1", "train.threads=1024"}));
}

TEST_CASE("config: every scheme's size keys are integer keys of that scheme", "[config][bounds]") {
  for (const PositionSchemeEntry& entry : position_schemes()) {
    for (const auto& [key, limit] : entry.size_keys) {
      INFO(entry.name << ": " << key);
      CHECK(limit >= 1);
      CHECK(std::any_of(entry.keys.begin(), entry.keys.end(), [&](const SchemeKey& k) {
        return k.name == key && std::holds_alternative<std::int64_t>(k.default_value);
      }));
    }
  }
}

TEST_CASE("config: the memory estimate bounds every scheme's parameters", "[config][bounds]") {
  for (const std::string& scheme : position_scheme_names()) {
    for (const PositionConfig& position : test_position_configs(scheme)) {
      for (const bool tied : {true, false}) {
        RunConfig config = from_overrides({"model.d_model=16", "model.n_heads=2",
                                           "model.n_layers=2", "model.d_ff=24", "model.vocab=300"});
        config.model.position = position;
        config.model.tie_embeddings = tied;
        Rng rng(1);
        const TransformerLM model(config.model, rng);
        const MemoryEstimate estimate = estimate_memory(config);
        INFO(scheme << (tied ? " tied" : " untied"));
        CHECK(estimate.parameters >= 4.0 * static_cast<double>(model.parameter_count()));
        // An upper bound, not a wild one: within 3x of the real count.
        CHECK(estimate.parameters <= 3 * 4.0 * static_cast<double>(model.parameter_count()));
        CHECK(estimate.training >= 3 * estimate.parameters);  // gradients and AdamW's moments
        CHECK(estimate.activations > 0);
      }
    }
  }
}

// Sets an environment variable for one scope.
struct ScopedEnv {
  ScopedEnv(const char* name, const char* value) : name_(name) { setenv(name, value, 1); }
  ~ScopedEnv() { unsetenv(name_); }
  const char* name_;
};

TEST_CASE("config: a run that would not fit in memory is refused, naming keys and estimate",
          "[config][bounds]") {
  const RunConfig config = from_overrides({});
  {
    ScopedEnv limit("RELPOS_MEMORY_LIMIT", "1000000");  // 1 MB
    REQUIRE(available_memory_bytes() == 1e6);
    REQUIRE_THROWS_WITH(require_fits_in_memory(config),
                        Contains("would not fit in memory") && Contains("GiB") &&
                            Contains("model.d_model=128") && Contains("data.batch_size=32") &&
                            Contains("RELPOS_MEMORY_LIMIT"));
  }
  {
    ScopedEnv limit("RELPOS_MEMORY_LIMIT", "lots\nof it");
    REQUIRE_THROWS_WITH(available_memory_bytes(),
                        "RELPOS_MEMORY_LIMIT: expected a number of bytes, got 'lots\\nof it'");
  }
  // Without the override: the machine's available memory, which holds the defaults.
  REQUIRE(available_memory_bytes() > 0);
  REQUIRE_NOTHROW(require_fits_in_memory(config));
  const RunConfig huge = from_overrides({"model.d_model=100000000", "model.n_heads=1"});
  REQUIRE_THROWS_WITH(require_fits_in_memory(huge),
                      Contains("would not fit") && Contains("model.d_model=100000000,"));
}

TEST_CASE("config: errors quote keys and values on one line", "[config]") {
  TempDir dir("config_quote");
  const auto message_of = [](const auto& load) -> std::string {
    try {
      load();
    } catch (const UsageError& e) {
      return e.what();
    }
    return "(accepted)";
  };
  const std::string key = dir.write("key.yaml", "model:\n  \"d_mo\\ndel\": 16\n").string();
  const std::string value = dir.write("value.yaml", "model:\n  norm: \"layer\\nnorm\"\n").string();
  const std::vector<std::pair<std::string, std::string>> cases = {
      {message_of([&] { load_config({key}, {}); }), "unknown key 'model.d_mo\\ndel'"},
      {message_of([&] { load_config({value}, {}); }), "got 'layer\\nnorm'"},
      {message_of([&] { load_config({}, {"model.norm=\"a\\tb\""}); }), "got 'a\\tb'"},
      {message_of([&] { load_config({}, {"model.d_mo\ndel=1"}); }),
       "override 'model.d_mo\\ndel=1': unknown key 'model.d_mo\\ndel'"},
      {message_of([&] { load_config({}, {"model.d_model"}); }),
       "override 'model.d_model': expected key.path=value"},
      {message_of([&] { load_config({}, {"model.norm=\"it's\""}); }), "got 'it\\'s'"},
  };
  for (const auto& [message, expected] : cases) {
    INFO(message);
    CHECK(message.find('\n') == std::string::npos);
    CHECK_THAT(message, Contains(expected));
  }
}

TEST_CASE("config: a section given twice in one file is an error", "[config]") {
  TempDir dir("config_twice");
  const std::string f =
      dir.write("twice.yaml", "model:\n  d_model: 16\ntrain:\n  steps: 2\nmodel:\n  n_layers: 1\n");
  REQUIRE_THROWS_WITH(load_config({f}, {}),
                      f + ":5: key 'model' is set twice (first at " + f + ":1)");
  const std::string nested = dir.write(
      "nested.yaml", "model:\n  position:\n    scheme: t5\n  position:\n    num_buckets: 8\n");
  REQUIRE_THROWS_WITH(load_config({nested}, {}),
                      Contains(":4: key 'model.position' is set twice (first at "));
}

TEST_CASE("config: files are read up to 1 MiB", "[config]") {
  TempDir dir("config_size");
  const std::string comment = "# " + std::string(1021, 'x') + "\n";  // 1 KiB
  std::string text;
  for (int i = 0; i < 1024; ++i) text += comment;
  const std::string fits = dir.write("fits.yaml", text).string();
  REQUIRE_NOTHROW(load_config({fits}, {}));
  const std::string big = dir.write("big.yaml", text + "\n").string();
  REQUIRE_THROWS_WITH(load_config({big}, {}),
                      "config file '" + big + "': larger than 1048576 bytes");
}

}  // namespace relpos
