// The kill test: SIGKILL a training run at random moments (a fixed seed picks
// them), resume after each kill, and require the result of the uninterrupted
// run: every checkpoint left loads, the final parameters and optimizer state are
// bit-identical, and metrics.jsonl is the same line for line (but tokens_per_s).
#include <signal.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>

#include "tests/test_files.h"
#include "tests/test_metrics.h"
#include "tests/test_process.h"
#include "tests/tiny_run.h"
#include "train/store/checkpoint.h"
#include "train/store/checkpoint_folder.h"

namespace fs = std::filesystem;
using relpos::testing::TempDir;

namespace {

const std::string kRun = relpos::testing::tiny_run_yaml(
    {"model.dropout=0.1", "train.steps=1500", "train.eval_every=25", "train.checkpoint_every=7",
     "train.keep_checkpoints=3", "schedule.warmup_steps=10"});

void require_same_tensors(const std::map<std::string, relpos::Tensor>& a,
                          const std::map<std::string, relpos::Tensor>& b) {
  REQUIRE(a.size() == b.size());
  for (const auto& [name, tensor] : a) {
    INFO(name);
    REQUIRE(b.count(name) == 1);
    REQUIRE(tensor.to_vector() == b.at(name).to_vector());
  }
}

}  // namespace

TEST_CASE("kill: SIGKILL at random moments, resume each time: the result is bit-identical",
          "[kill][cli][slow]") {
  TempDir box("kill_resume");
  box.write("run.yaml", kRun);
  using relpos::testing::spawn_relpos, relpos::testing::wait_for;
  REQUIRE(wait_for(spawn_relpos({"train", "run.yaml", "train.out_dir=straight"}, box.path())) == 0);

  std::mt19937 rng(20240612);
  std::uniform_int_distribution<int> delay_ms(10, 120);
  int kills = 0, attempts = 0;
  for (bool finished = false; !finished; ++attempts) {
    REQUIRE(attempts < 200);
    // Killed before its first checkpoint, a run can only start over.
    const bool resumable =
        relpos::latest_checkpoint(box.path() / "killed" / "checkpoints").has_value();
    const std::vector<std::string> args = {"train", "run.yaml", "train.out_dir=killed",
                                           resumable ? "--resume" : "--overwrite", "killed"};
    const pid_t pid = spawn_relpos(
        resumable ? args : std::vector<std::string>(args.begin(), args.end() - 1), box.path());
    if (kills < 12) {
      std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms(rng)));
      ::kill(pid, SIGKILL);
    }
    const int code = wait_for(pid);
    INFO(relpos::testing::slurp(box.path() / "err"));
    if (code == -SIGKILL) {
      ++kills;
      continue;
    }
    REQUIRE(code == 0);
    finished = true;
  }
  REQUIRE(kills >= 10);

  for (const auto& entry : fs::directory_iterator(box.path() / "killed" / "checkpoints"))
    if (entry.path().extension() == ".h5") REQUIRE_NOTHROW(relpos::load_checkpoint(entry.path()));
  const auto a = relpos::load_checkpoint(box.path() / "straight/checkpoints/ckpt_00001500.h5");
  const auto b = relpos::load_checkpoint(box.path() / "killed/checkpoints/ckpt_00001500.h5");
  require_same_tensors(a.params, b.params);
  require_same_tensors(a.optim, b.optim);
  REQUIRE(a.rng_states == b.rng_states);
  REQUIRE(relpos::testing::metrics_without_timing(box.path() / "killed/metrics.jsonl") ==
          relpos::testing::metrics_without_timing(box.path() / "straight/metrics.jsonl"));
}
