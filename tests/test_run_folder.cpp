// Run folders are owned: the lock, fresh/--resume/--overwrite, recorded config
// changes on resume, and the writability probe of out_dir/checkpoints.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "tests/test_files.h"
#include "tests/test_process.h"
#include "tests/tiny_run.h"
#include "train/config/config.h"
#include "train/store/checkpoint.h"
#include "train/store/checkpoint_folder.h"
#include "train/store/run_folder.h"
#include "train/trainer.h"

using namespace relpos;
namespace fs = std::filesystem;
using testing::require_one_line_error;
using testing::slurp;
using testing::TempDir;

namespace {

// Runs relpos in the box's folder.
testing::RelposResult relpos_in(const TempDir& box, const std::vector<std::string>& args) {
  return testing::relpos_in(box.path(), args);
}

std::vector<nlohmann::json> records(const fs::path& file) {
  std::ifstream in(file);
  std::vector<nlohmann::json> out;
  for (std::string line; std::getline(in, line);) out.push_back(nlohmann::json::parse(line));
  return out;
}

}  // namespace

TEST_CASE("runs: a second run into a locked out_dir is refused, naming the holder", "[runs]") {
  TempDir dir("runs_lock");
  const RunFolder holder(dir.path() / "run", RunStart::fresh);
  RunState run =
      build_run(testing::tiny_run_config({"train.steps=1", "schedule.warmup_steps=0",
                                          "train.out_dir=" + (dir.path() / "run").string()}));
  REQUIRE_THROWS_WITH(train(run), Catch::Contains("in use by another relpos run") &&
                                      Catch::Contains("pid " + std::to_string(::getpid())));
  REQUIRE_FALSE(fs::exists(dir.path() / "run" / "metrics.jsonl"));
}

TEST_CASE("runs: a new run into a used out_dir is refused and --overwrite moves the old run aside",
          "[runs][cli]") {
  TempDir box("runs_fresh");
  box.write("tiny.yaml", testing::tiny_run_yaml());
  REQUIRE(relpos_in(box, {"train", "tiny.yaml", "train.out_dir=run"}).exit_code == 0);
  const std::string checkpoint = slurp(box.path() / "run/checkpoints/ckpt_00000004.h5");
  const std::string metrics = slurp(box.path() / "run/metrics.jsonl");
  // The same command again would restart from step 0 over the old run.
  require_one_line_error(relpos_in(box, {"train", "tiny.yaml", "train.out_dir=run"}),
                         {"'run'", "--resume", "--overwrite"});
  REQUIRE(slurp(box.path() / "run/checkpoints/ckpt_00000004.h5") == checkpoint);
  REQUIRE(slurp(box.path() / "run/metrics.jsonl") == metrics);
  require_one_line_error(
      relpos_in(box, {"train", "tiny.yaml", "train.out_dir=run", "--overwrite", "--resume", "run"}),
      {"not both"});

  const testing::RelposResult over =
      relpos_in(box, {"train", "tiny.yaml", "train.out_dir=run", "train.steps=2", "--overwrite"});
  INFO(over.err);
  REQUIRE(over.exit_code == 0);
  REQUIRE(over.err.find("run.old-1") != std::string::npos);
  // Nothing was deleted: the old run is whole in run.old-1; the new one is alone in run.
  REQUIRE(slurp(box.path() / "run.old-1/checkpoints/ckpt_00000004.h5") == checkpoint);
  REQUIRE(slurp(box.path() / "run.old-1/metrics.jsonl") == metrics);
  REQUIRE_FALSE(fs::exists(box.path() / "run/checkpoints/ckpt_00000004.h5"));
  REQUIRE(fs::exists(box.path() / "run/checkpoints/ckpt_00000002.h5"));
  REQUIRE(records(box.path() / "run/metrics.jsonl").back()["step"] == 2);
}

TEST_CASE(
    "runs: a resume records changed settings and keeps each config, dropout and attention "
    "may change",
    "[runs][cli]") {
  TempDir box("runs_changes");
  box.write("tiny.yaml", testing::tiny_run_yaml());
  REQUIRE(relpos_in(box, {"train", "tiny.yaml", "train.out_dir=run", "train.steps=2"}).exit_code ==
          0);
  const testing::RelposResult r =
      relpos_in(box, {"train", "tiny.yaml", "train.out_dir=run", "train.steps=4", "optim.lr=0.002",
                      "model.dropout=0.1", "model.attention=composed", "--resume", "run"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  REQUIRE(std::count(r.err.begin(), r.err.end(), '\n') == 1);
  REQUIRE(r.err.find("optim.lr 0.001 -> 0.002") != std::string::npos);
  const auto lines = records(box.path() / "run/metrics.jsonl");
  const auto change = std::find_if(lines.begin(), lines.end(), [](const nlohmann::json& j) {
    return j.value("event", "") == "config_change";
  });
  REQUIRE(change != lines.end());
  CHECK((*change)["step"] == 2);
  CHECK((*change)["changes"]["optim.lr"] == nlohmann::json::array({"0.001", "0.002"}));
  CHECK((*change)["changes"]["train.steps"] == nlohmann::json::array({"2", "4"}));
  CHECK((*change)["changes"]["model.dropout"] == nlohmann::json::array({"0", "0.1"}));
  CHECK((*change)["changes"]["model.attention"] == nlohmann::json::array({"flash", "composed"}));
  // Each resolved config is kept: config.<step>.yaml ran from that step on.
  CHECK(slurp(box.path() / "run/config.0.yaml").find("lr: 0.001") != std::string::npos);
  CHECK(slurp(box.path() / "run/config.2.yaml").find("lr: 0.002") != std::string::npos);
  CHECK(slurp(box.path() / "run/config.yaml") == slurp(box.path() / "run/config.2.yaml"));
  // A true architecture change stays refused, naming the key.
  require_one_line_error(relpos_in(box, {"train", "tiny.yaml", "train.out_dir=run", "train.steps=6",
                                         "model.d_ff=48", "--resume", "run"}),
                         {"architecture", "model.d_ff"});
}

TEST_CASE("runs: an unwritable out_dir/checkpoints is found before the first step", "[runs]") {
  TempDir dir("runs_probe");
  const std::vector<std::string> tiny = {
      "model.d_model=16",        "model.n_layers=1", "model.n_heads=2",
      "model.d_ff=32",           "data.seq_len=16",  "data.batch_size=2",
      "schedule.warmup_steps=0", "train.threads=1",  "train.checkpoint_every=2"};
  auto config = [&](const fs::path& out, const std::string& steps) {
    std::vector<std::string> o = tiny;
    o.push_back("train.out_dir=" + out.string());
    o.push_back("train.steps=" + steps);
    return load_config({}, o);
  };
  RunState first = build_run(config(dir.path() / "a", "2"));
  train(first);
  const fs::path at2 = checkpoint_path(dir.path() / "a" / "checkpoints", 2);
  // A folder no one, not even root, can create files in.
  fs::create_directories(dir.path() / "b");
  fs::create_directory_symlink("/proc/self", dir.path() / "b" / "checkpoints");
  RunState resumed = build_run(config(dir.path() / "b", "40"));
  restore_run(resumed, load_checkpoint(at2), at2);
  REQUIRE_THROWS_WITH(train(resumed), Catch::Contains("checkpoints"));
  REQUIRE_FALSE(fs::exists(dir.path() / "b" / "metrics.jsonl"));  // no step was trained
}
