// Config errors: each a one-line message naming the file and line, the override or the
// key, and the value and what was expected.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "autograd/error.h"
#include "layers/position/registry.h"
#include "tests/test_files.h"
#include "train/config/config.h"

namespace relpos {

namespace fs = std::filesystem;
using Catch::Contains;
using testing::slurp;
using testing::TempDir;

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
    REQUIRE_THROWS_WITH(load_config({}, {"optim.lr"}),
                        "override 'optim.lr': expected key.path=value");
    REQUIRE_THROWS_WITH(load_config({}, {"=3"}), "override '=3': expected key.path=value");
  }
  SECTION("unknown key") {
    REQUIRE_THROWS_WITH(load_config({}, {"model.foo=1"}),
                        "override 'model.foo=1': unknown key 'model.foo'");
    REQUIRE_THROWS_WITH(
        load_config({}, {"optim.lrr=1"}),
        "override 'optim.lrr=1': unknown key 'optim.lrr' (did you mean 'optim.lr'?)");
  }
  SECTION("wrong type") {
    REQUIRE_THROWS_WITH(load_config({}, {"optim.lr=abc"}),
                        "override 'optim.lr=abc': optim.lr: expected a number, got 'abc'");
    REQUIRE_THROWS_WITH(
        load_config({}, {"train.seed=-1"}),
        "override 'train.seed=-1': train.seed: expected a non-negative integer, got '-1'");
    REQUIRE_THROWS_WITH(load_config({}, {"train.out_dir="}),
                        "override 'train.out_dir=': train.out_dir: expected a string, got null");
    REQUIRE_THROWS_WITH(load_config({}, {"model.d_model=99999999999999999999"}),
                        Contains("model.d_model: expected an integer, got '99999999999999999999'"));
  }
  SECTION("bad enum value") {
    REQUIRE_THROWS_WITH(load_config({}, {"model.position.scheme=t6"}),
                        fmt::format("override 'model.position.scheme=t6': model.position.scheme: "
                                    "expected one of {}, got 't6'",
                                    fmt::join(position_scheme_names(), ", ")));
    CHECK(position_scheme_names().front() == "none");  // in registry order
  }
  SECTION("invalid YAML value") {
    REQUIRE_THROWS_WITH(load_config({}, {"eval.lengths=[128"}),
                        Contains("override 'eval.lengths=[128': invalid YAML value:"));
  }
  SECTION("a section needs a mapping") {
    REQUIRE_THROWS_WITH(load_config({}, {"model.position=t5"}),
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
      load_config({}, c.overrides);
      FAIL("no error");
    } catch (const UsageError& e) {
      const std::string message = e.what();
      INFO(message);
      CHECK(message.find('\n') == std::string::npos);
      for (const std::string& part : c.expected) CHECK(message.find(part) != std::string::npos);
    }
  }
  // The settings of schemes not chosen are not checked.
  CHECK_NOTHROW(load_config({}, {"model.position.num_buckets=1", "model.position.max_len=1"}));
  CHECK_NOTHROW(load_config(
      {}, {"model.position.scheme=learned", "model.position.max_len=2048", "eval.lengths=[2048]"}));
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
