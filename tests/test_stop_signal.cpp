// Graceful stop: SIGINT or SIGTERM finish the step, save, write the summary and
// exit 130 or 143 with one line; a second signal exits at once; `relpos ablate`
// stops the sweep the same way, and rerunning resumes. Runs the real binary.
#include <signal.h>
#include <stdlib.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "tests/test_files.h"
#include "tests/test_metrics.h"
#include "tests/test_process.h"
#include "tests/tiny_run.h"
#include "train/store/checkpoint.h"
#include "train/store/checkpoint_folder.h"

namespace fs = std::filesystem;
using relpos::testing::slurp;
using relpos::testing::TempDir;

namespace {

const std::string kTiny = relpos::testing::tiny_run_yaml(
    {"train.steps=300", "train.eval_every=50", "train.checkpoint_every=100"});

int one_line_count(const std::string& text) {
  return static_cast<int>(std::count(text.begin(), text.end(), '\n'));
}

}  // namespace

TEST_CASE("stop: SIGINT and SIGTERM save, write the summary, exit 130/143, resume is exact",
          "[stop][cli][slow]") {
  TempDir box("stop_signal");
  box.write("tiny.yaml", kTiny);
  using relpos::testing::spawn_relpos, relpos::testing::wait_for;
  REQUIRE(wait_for(spawn_relpos({"train", "tiny.yaml", "train.out_dir=straight"}, box.path())) ==
          0);
  for (const auto& [signal, code, name] :
       {std::tuple{SIGINT, 130, "SIGINT"}, std::tuple{SIGTERM, 143, "SIGTERM"}}) {
    INFO(name);
    const std::string dir = std::string("run_") + name;
    const pid_t pid = spawn_relpos({"train", "tiny.yaml", "train.out_dir=" + dir}, box.path());
    relpos::testing::wait_for_lines(box.path() / dir / "metrics.jsonl", 20);
    ::kill(pid, signal);
    REQUIRE(wait_for(pid) == code);
    const std::string err = slurp(box.path() / "err");
    INFO(err);
    REQUIRE(one_line_count(err) == 1);
    REQUIRE(err.find(std::string("stopped by ") + name) != std::string::npos);
    // The step it finished is saved, summarised and the last one in metrics.jsonl.
    const auto summary = nlohmann::json::parse(slurp(box.path() / dir / "summary.json"));
    const std::int64_t step = summary["steps"];
    REQUIRE(step >= 20);
    REQUIRE(step < 300);
    const relpos::Checkpoint saved =
        relpos::load_checkpoint(relpos::checkpoint_path(box.path() / dir / "checkpoints", step));
    REQUIRE(saved.step == step);
    REQUIRE(nlohmann::json::parse(
                relpos::testing::metrics_without_timing(box.path() / dir / "metrics.jsonl")
                    .back())["step"] == step);
    REQUIRE(wait_for(spawn_relpos({"train", "tiny.yaml", "train.out_dir=" + dir, "--resume", dir},
                                  box.path())) == 0);
    REQUIRE(relpos::testing::metrics_without_timing(box.path() / dir / "metrics.jsonl") ==
            relpos::testing::metrics_without_timing(box.path() / "straight" / "metrics.jsonl"));
  }
}

TEST_CASE("stop: a second signal ends the run at once", "[stop][cli]") {
  TempDir box("stop_twice");
  // Steps of a fraction of a second: both signals arrive within one step.
  box.write("big.yaml",
            "model: {d_model: 128, n_layers: 2, n_heads: 4, d_ff: 512}\n"
            "data: {seq_len: 256, batch_size: 8}\n"
            "train: {steps: 1000, log_every: 1, eval_every: 1000, eval_batches: 1, threads: 1}\n"
            "schedule: {warmup_steps: 1}\n");
  const pid_t pid =
      relpos::testing::spawn_relpos({"train", "big.yaml", "train.out_dir=run"}, box.path());
  relpos::testing::wait_for_lines(box.path() / "run" / "metrics.jsonl", 1);
  ::kill(pid, SIGINT);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  ::kill(pid, SIGINT);
  REQUIRE(relpos::testing::wait_for(pid) == 130);
  INFO(slurp(box.path() / "err"));
  REQUIRE(slurp(box.path() / "err").find("stopped by") == std::string::npos);  // nothing saved
  REQUIRE_FALSE(fs::exists(box.path() / "run" / "summary.json"));
}

TEST_CASE("stop: relpos ablate stops the sweep with the signal code and a rerun resumes",
          "[stop][ablation][cli]") {
  TempDir box("stop_ablate");
  box.write("tiny.yaml", kTiny);
  box.write("sweep.yaml",
            "base: [tiny.yaml]\nout_dir: sweep\neval_lengths: [16]\nvariants:\n"
            "  - {name: a}\n  - {name: b, overrides: [model.position.scheme=learned]}\n");
  ::setenv("RELPOS_PYTHON", "/nonexistent/python", 1);  // no figures: faster, same path
  const pid_t pid = relpos::testing::spawn_relpos({"ablate", "sweep.yaml"}, box.path());
  relpos::testing::wait_for_lines(box.path() / "sweep" / "a" / "metrics.jsonl", 20);
  ::kill(pid, SIGTERM);
  REQUIRE(relpos::testing::wait_for(pid) == 143);
  REQUIRE(slurp(box.path() / "err").find("stopped by SIGTERM") != std::string::npos);
  REQUIRE_FALSE(fs::exists(box.path() / "sweep" / "b"));  // the sweep stopped
  REQUIRE(relpos::testing::wait_for(
              relpos::testing::spawn_relpos({"ablate", "sweep.yaml"}, box.path())) == 0);
  ::unsetenv("RELPOS_PYTHON");
  const std::string out = slurp(box.path() / "out");
  INFO(out);
  REQUIRE(out.find("resume a from step") != std::string::npos);
  REQUIRE(fs::exists(box.path() / "sweep" / "results.csv"));
  const auto summary = nlohmann::json::parse(slurp(box.path() / "sweep" / "a" / "summary.json"));
  REQUIRE(summary["steps"] == 300);
}
