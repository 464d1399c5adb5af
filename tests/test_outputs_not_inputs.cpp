// Issue 28, outputs never inputs, through the real binary: every command compares the
// files it writes with the files it reads, by real path (symlinks followed, hard links
// found by inode), through train/store/input_output.h: export -o, tokenizer train -o,
// positions --png (and its .csv/.svg), the sweep's report, logs and runs, and a run's
// own files in train.out_dir.
#include <stdlib.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <string>
#include <vector>

#include "tests/test_files.h"
#include "tests/test_process.h"
#include "tests/tiny_run.h"
#include "tests/trained_box.h"

namespace fs = std::filesystem;
using relpos::testing::relpos_in;
using relpos::testing::require_one_line_error;
using relpos::testing::slurp;
using relpos::testing::TempDir;
using relpos::testing::TrainedBox;

TEST_CASE("outputs never inputs: export -o and tokenizer train -o never replace what they read",
          "[hostile][cli]") {
  TrainedBox box("outputs_not_inputs");
  const std::string ckpt = box.checkpoint().string(), bytes = slurp(ckpt);
  // Before: exit 0, the checkpoint replaced by the safetensors file.
  for (const std::string& output : {ckpt, ckpt + ".digest"})
    require_one_line_error(relpos_in(box.path(), {"export", ckpt, "-o", output}),
                           {"-o '" + output + "'", "an output never replaces an input"});
  REQUIRE(slurp(ckpt) == bytes);
  const fs::path text = box.write("text.txt", "some training text\n");
  fs::create_symlink(text, box.path() / "model.model");
  // Before: the training text replaced by the model (through the symlink: by name).
  for (const std::string output : {"text.txt", "model.model"})
    require_one_line_error(relpos_in(box.path(), {"tokenizer", "train", "text.txt", "--vocab-size",
                                                  "300", "-o", output}),
                           {"-o '" + output + "'", "the training text 'text.txt'"});
  REQUIRE(slurp(text) == "some training text\n");
}

TEST_CASE("outputs never inputs: positions --png never writes over the plot script",
          "[hostile][cli]") {
  TempDir box("outputs_positions");
  const fs::path script = box.write("plot.py", "import sys\n");
  REQUIRE(::setenv("RELPOS_PLOT_SCRIPT", script.c_str(), 1) == 0);
  for (const char* extension : {".csv", ".png", ".svg"}) {
    fs::remove(box.path() / (std::string("heat") + extension));
    fs::create_symlink(script, box.path() / (std::string("heat") + extension));
    // Before: exit 0 (the CSV written where the script is named).
    require_one_line_error(relpos_in(box.path(), {"positions", "t5", "--png", "heat.png"}),
                           {"--png", "the plot script", "an output never replaces an input"});
    fs::remove(box.path() / (std::string("heat") + extension));
  }
  ::unsetenv("RELPOS_PLOT_SCRIPT");
  REQUIRE(slurp(script) == "import sys\n");
}

TEST_CASE("outputs never inputs: a sweep never writes over its sweep file, configs or data",
          "[hostile][ablation][cli]") {
  TempDir box("outputs_sweep");
  box.write("tiny.yaml", relpos::testing::tiny_run_yaml());
  const std::string sweep = "base: [../tiny.yaml]\nout_dir: s\nvariants: [{name: a}]\n";
  fs::create_directories(box.path() / "s/logs");
  // The sweep file is the report the sweep writes (before: trained, then replaced).
  box.write("s/results.md", sweep);
  require_one_line_error(relpos_in(box.path(), {"ablate", "s/results.md", "--dry-run"}),
                         {"the sweep file 's/results.md'", "the sweep in out_dir 's'"});
  // A variant's data.source is one of the sweep's logs, or a run's metrics.
  box.write("s/logs/a.log", "text text text text\n");
  box.write("sweep.yaml",
            "base: [tiny.yaml]\nout_dir: s\nvariants:\n"
            "  - {name: a, overrides: [data.source=s/logs/a.log]}\n");
  require_one_line_error(relpos_in(box.path(), {"ablate", "sweep.yaml", "--dry-run"}),
                         {"data.source 's/logs/a.log'", "(as 's/logs')"});
  fs::create_directories(box.path() / "s/b");
  box.write("s/b/metrics.jsonl", "text text text text\n");
  box.write("sweep.yaml",
            "base: [tiny.yaml]\nout_dir: s\nvariants:\n"
            "  - {name: b, overrides: [data.source=s/b/metrics.jsonl]}\n");
  require_one_line_error(relpos_in(box.path(), {"ablate", "sweep.yaml", "--dry-run"}),
                         {"data.source 's/b/metrics.jsonl'", "the run in train.out_dir 's/b'"});
  // The report's name a symlink to the base config: compared by real path.
  fs::create_symlink(box.path() / "tiny.yaml", box.path() / "s/results.csv");
  box.write("sweep.yaml", "base: [tiny.yaml]\nout_dir: s\nvariants: [{name: c}]\n");
  require_one_line_error(relpos_in(box.path(), {"ablate", "sweep.yaml", "--dry-run"}),
                         {"the base config file", "(as 's/results.csv')"});
}

TEST_CASE("outputs never inputs: a run never writes over a file it reads in its folder",
          "[hostile][runs][cli]") {
  TrainedBox box("outputs_not_inputs");
  const std::string metrics = slurp(box.path() / "run/metrics.jsonl");
  // Before: accepted; the resume cut metrics.jsonl, its own data.source.
  require_one_line_error(
      relpos_in(box.path(), {"train", "tiny.yaml", "train.out_dir=run", "train.steps=6",
                             "data.source=run/metrics.jsonl", "--resume", "run"}),
      {"the data.source file 'run/metrics.jsonl'", "the run in train.out_dir 'run'"});
  REQUIRE(slurp(box.path() / "run/metrics.jsonl") == metrics);
  // The one exception: a resume may read the run's own config.yaml.
  const auto r =
      relpos_in(box.path(), {"train", "run/config.yaml", "train.steps=6", "--resume", "run"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  REQUIRE(fs::exists(box.path() / "run/checkpoints/ckpt_00000006.h5"));
}
