// The trainer: bit-exact resume, divergence handling and error paths.
#include <fmt/format.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>

#include "autograd/error.h"
#include "tests/test_files.h"
#include "tests/test_metrics.h"
#include "tests/tiny_run.h"
#include "train/config/config.h"
#include "train/divergence.h"
#include "train/metrics.h"
#include "train/store/checkpoint.h"
#include "train/store/checkpoint_folder.h"
#include "train/trainer.h"

using namespace relpos;
namespace fs = std::filesystem;
using testing::TempDir;

namespace {

// The tiny run with 2 layers, dropout, 4 rows, 6 steps evaluated and saved every 3.
RunConfig tiny_config(const fs::path& out, const std::vector<std::string>& extra = {},
                      const std::string& scheme = "t5") {
  std::vector<std::string> changes = {"model.n_layers=2",
                                      "model.dropout=0.1",
                                      "model.position.scheme=" + scheme,
                                      "data.batch_size=4",
                                      "train.steps=6",
                                      "train.eval_every=3",
                                      "train.checkpoint_every=3",
                                      "train.keep_checkpoints=0",
                                      "schedule.warmup_steps=2",
                                      "train.threads=2",
                                      "train.out_dir=" + out.string()};
  changes.insert(changes.end(), extra.begin(), extra.end());
  return testing::tiny_run_config(changes);
}

std::vector<std::string> lines_of(const fs::path& file) {
  std::ifstream in(file);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

}  // namespace

TEST_CASE("resume is bit-exact: N steps straight equal k steps, resume, N-k steps",
          "[trainer][slow]") {
  // Randomized positions are drawn per step from the step's seed, so a resume draws them again.
  // The attention temperature: learned's scales are parameters with optimizer state.
  const std::vector<std::pair<std::string, std::vector<std::string>>> runs = {
      {"t5", {}},
      {"shaw", {}},
      {"xl", {}},
      {"rope", {"model.position.randomized_max_len=64"}},
      {"fire", {"model.position.fire_hidden=8", "model.position.fire_threshold=4"}},
      {"none", {"model.attention_temperature.kind=learned"}},
      {"alibi", {"model.attention_temperature.kind=log_length"}}};
  for (const auto& [scheme, extra] : runs) {
    INFO("scheme " << scheme);
    TempDir straight("trainer_straight"), resumed("trainer_resumed");
    RunState a = build_run(tiny_config(straight.path(), extra, scheme));
    train(a);
    // The straight run saved a checkpoint at step 3: continue it in another folder.
    RunState b = build_run(tiny_config(resumed.path(), extra, scheme));
    const fs::path at3 = checkpoint_path(straight.path() / "checkpoints", 3);
    restore_run(b, load_checkpoint(at3), at3);
    REQUIRE(b.step == 3);
    train(b);
    const auto pa = a.model->parameters(), pb = b.model->parameters();
    REQUIRE(pa.size() == pb.size());
    for (std::size_t i = 0; i < pa.size(); ++i) {
      INFO(pa[i].name);
      REQUIRE(pa[i].tensor.to_vector() == pb[i].tensor.to_vector());  // bit-identical
    }
    // The logged training losses of steps 4..6 are identical too.
    auto losses = [](const fs::path& dir) {
      std::vector<std::string> out;
      for (const auto& l : lines_of(dir / "metrics.jsonl"))
        if (l.find("\"loss\"") != std::string::npos && l.find("\"step\":3,") == std::string::npos &&
            (l.find("\"step\":4") != std::string::npos ||
             l.find("\"step\":5") != std::string::npos ||
             l.find("\"step\":6") != std::string::npos))
          out.push_back(l.substr(0, l.find("\"tokens_per_s\"")));
      return out;
    };
    REQUIRE(losses(straight.path()).size() == 3);
    REQUIRE(losses(straight.path()) == losses(resumed.path()));
  }
}

TEST_CASE("a diverging loss stops training, names the step, and keeps the last checkpoint",
          "[trainer]") {
  TempDir dir("trainer_nan");
  RunState run = build_run(
      tiny_config(dir.path(), {"optim.lr=1e30", "optim.grad_clip=0", "train.checkpoint_every=1",
                               "train.steps=20", "schedule.name=constant"}));
  REQUIRE_THROWS_WITH(
      train(run), Catch::Contains("diverged at step") && Catch::Contains("last good checkpoint"));
  const auto latest = latest_checkpoint(dir.path() / "checkpoints");
  REQUIRE(latest.has_value());
  const Checkpoint ok = load_checkpoint(*latest);  // loads cleanly
  REQUIRE(ok.step >= 1);
  REQUIRE(ok.step < 20);
  for (const auto& entry : fs::directory_iterator(dir.path() / "checkpoints"))
    REQUIRE(entry.path().extension() != ".tmp");
}

TEST_CASE("training errors: unwritable out_dir, tiny corpus, changed architecture", "[trainer]") {
  TempDir dir("trainer_errors");
  const fs::path blocker = dir.write("a_file", "not a directory");
  RunState run = build_run(tiny_config(blocker / "out"));
  REQUIRE_THROWS_WITH(train(run), Catch::Contains("a_file/out"));

  const fs::path small = dir.write("small.txt", "only a few bytes of text");
  REQUIRE_THROWS_WITH(build_run(tiny_config(dir.path() / "o", {"data.source=" + small.string()})),
                      Catch::Contains("small.txt"));

  RunState original = build_run(tiny_config(dir.path() / "orig", {"train.steps=3"}));
  train(original);
  const fs::path ckpt = checkpoint_path(dir.path() / "orig" / "checkpoints", 3);
  RunState wider = build_run(tiny_config(dir.path() / "wide", {"model.d_model=24"}));
  REQUIRE_THROWS_WITH(restore_run(wider, load_checkpoint(ckpt), ckpt),
                      Catch::Contains("architecture") && Catch::Contains("ckpt_00000003.h5"));
  REQUIRE_THROWS_WITH(resolve_checkpoint(dir.path() / "missing"),
                      Catch::Contains("does not exist"));
  REQUIRE_THROWS_WITH(resolve_checkpoint(dir.path()), Catch::Contains("no checkpoint"));
}

TEST_CASE("checkpoint parameters whose shapes differ from the config are rejected", "[trainer]") {
  TempDir dir("trainer_shapes");
  RunState run = build_run(tiny_config(dir.path() / "a", {"train.steps=3"}));
  train(run);
  const fs::path ckpt = checkpoint_path(dir.path() / "a" / "checkpoints", 3);
  Checkpoint c = load_checkpoint(ckpt);
  c.params["embed.weight"] = Tensor::zeros({7, 16});
  const fs::path broken = dir.path() / "broken.h5";
  save_checkpoint(broken, c);
  RunState fresh = build_run(tiny_config(dir.path() / "b"));
  REQUIRE_THROWS_WITH(restore_run(fresh, load_checkpoint(broken), broken),
                      Catch::Contains("embed.weight") && Catch::Contains("[7, 16]"));
}

namespace {

// Sets every optimizer state tensor whose key ends in `suffix` to +Inf.
void poison_optimizer_state(RunState& run, const std::string& suffix) {
  std::map<std::string, Tensor> state = run.optimizer->state();
  for (auto& [key, tensor] : state)
    if (key.ends_with(suffix)) tensor.fill_(std::numeric_limits<double>::infinity());
  run.optimizer->load_state(state);
}

}  // namespace

TEST_CASE("metrics.jsonl: a resume cuts records after the checkpoint and a partial last line",
          "[trainer][metrics][slow]") {
  TempDir dir("trainer_metrics_cut");
  RunState straight = build_run(tiny_config(dir.path()));
  train(straight);
  const std::vector<std::string> expected =
      testing::metrics_without_timing(dir.path() / "metrics.jsonl");
  // A crash while writing a record of step 7 left half a line.
  std::ofstream(dir.path() / "metrics.jsonl", std::ios::app) << "{\"step\":7,\"lo";
  RunState resumed = build_run(tiny_config(dir.path()));
  const fs::path at3 = checkpoint_path(dir.path() / "checkpoints", 3);
  restore_run(resumed, load_checkpoint(at3), at3);
  train(resumed);
  // Valid JSON lines, no duplicates (steps 4..6 again) and no gaps.
  REQUIRE(testing::metrics_without_timing(dir.path() / "metrics.jsonl") == expected);
}

TEST_CASE("metrics.jsonl: a write that fails leaves no partial record", "[trainer][metrics]") {
  TempDir dir("trainer_metrics_full");
  MetricsLog log(dir.path(), 0);
  log.write({{"step", 1}, {"loss", 2.5}});
  const std::string before = testing::slurp(dir.path() / "metrics.jsonl");
  {
    const testing::FileSizeLimit disk_full(before.size() + 10);  // room for part of a line
    REQUIRE_THROWS_WITH(log.write({{"step", 2}, {"loss", 2.25}, {"lr", 0.001}}),
                        Catch::Contains("metrics.jsonl"));
  }
  REQUIRE(testing::slurp(dir.path() / "metrics.jsonl") == before);
}

TEST_CASE("divergence: the gradient norm is measured when clipping is off", "[trainer]") {
  TempDir dir("trainer_norm");
  RunState run = build_run(tiny_config(dir.path(), {"optim.grad_clip=0", "train.steps=2"}));
  train(run);
  int records = 0;
  for (const std::string& line : lines_of(dir.path() / "metrics.jsonl")) {
    const nlohmann::json j = nlohmann::json::parse(line);
    if (!j.contains("grad_norm")) continue;
    ++records;
    CHECK(j["grad_norm"].get<double>() > 0.0);
  }
  REQUIRE(records == 2);
}

TEST_CASE(
    "divergence: the message names the first bad step and a last good checkpoint that is "
    "finite",
    "[trainer]") {
  TempDir dir("trainer_poison");
  RunState run = build_run(
      tiny_config(dir.path(), {"optim.lr=1e30", "optim.grad_clip=0", "train.checkpoint_every=1",
                               "train.steps=20", "schedule.name=constant"}));
  std::string message;
  try {
    train(run);
  } catch (const UsageError& e) {
    message = e.what();
  }
  INFO(message);
  // The first step not in metrics.jsonl is the one that diverged.
  const auto last = nlohmann::json::parse(lines_of(dir.path() / "metrics.jsonl").back());
  REQUIRE(message.find(fmt::format("diverged at step {}:", last["step"].get<int>() + 1)) !=
          std::string::npos);
  const std::string marker = "The last good checkpoint is ";
  REQUIRE(message.find(marker) != std::string::npos);
  const fs::path named = message.substr(message.find(marker) + marker.size());
  REQUIRE(fs::exists(named));
  for (const auto& entry : fs::directory_iterator(dir.path() / "checkpoints")) {
    if (entry.path().extension() != ".h5") continue;  // the .digest files beside them
    INFO(entry.path());
    const Checkpoint c = load_checkpoint(entry.path());
    REQUIRE_FALSE(first_non_finite(c.params).has_value());
    REQUIRE_FALSE(first_non_finite(c.optim).has_value());
  }
}

TEST_CASE("divergence: a non-finite optimizer state is never saved", "[trainer]") {
  TempDir dir("trainer_state");
  RunState run = build_run(tiny_config(dir.path(), {"train.steps=3"}));
  poison_optimizer_state(run, "/exp_avg_sq");  // the parameters stay finite
  REQUIRE_THROWS_WITH(train(run), Catch::Contains("exp_avg_sq") && Catch::Contains("not finite") &&
                                      Catch::Contains("No good checkpoint"));
  REQUIRE_FALSE(latest_checkpoint(dir.path() / "checkpoints").has_value());
}

TEST_CASE("divergence: rollback reloads the last good checkpoint with half the learning rate",
          "[trainer][slow]") {
  TempDir straight("trainer_rollback_a"), rolled("trainer_rollback_b");
  RunState a = build_run(tiny_config(straight.path()));
  train(a);
  const fs::path at3 = checkpoint_path(straight.path() / "checkpoints", 3);

  RunState refused = build_run(tiny_config(
      rolled.path() / "stop", {"train.on_divergence=rollback", "train.max_rollbacks=0"}));
  restore_run(refused, load_checkpoint(at3), at3);
  poison_optimizer_state(refused, "/exp_avg_sq");
  REQUIRE_THROWS_WITH(train(refused),
                      Catch::Contains("after 0 rollbacks") && Catch::Contains("ckpt_00000003.h5"));

  RunState b = build_run(tiny_config(rolled.path() / "go", {"train.on_divergence=rollback"}));
  restore_run(b, load_checkpoint(at3), at3);
  poison_optimizer_state(b, "/exp_avg_sq");  // refused at the save of step 6
  train(b);
  REQUIRE(b.step == 6);
  REQUIRE(b.lr_halvings == 1);
  std::map<std::int64_t, double> lr_a, lr_b;
  nlohmann::json rollback;
  for (const auto& [dir, lrs] :
       {std::pair{straight.path(), &lr_a}, std::pair{rolled.path() / "go", &lr_b}})
    for (const std::string& line : lines_of(dir / "metrics.jsonl")) {
      const nlohmann::json j = nlohmann::json::parse(line);
      if (j.contains("lr")) {
        REQUIRE(lrs->count(j["step"]) == 0);  // each step once
        (*lrs)[j["step"]] = j["lr"];
      }
      if (j.value("event", "") == "rollback") rollback = j;
    }
  REQUIRE(rollback["step"] == 3);
  REQUIRE(rollback["diverged_at"] == 6);
  REQUIRE(rollback["lr_scale"] == 0.5);
  for (const std::int64_t step : {4, 5, 6}) REQUIRE(lr_b.at(step) == lr_a.at(step) / 2);
  // The scale is checkpointed, so a resume continues with it.
  const fs::path at6 = checkpoint_path(rolled.path() / "go" / "checkpoints", 6);
  RunState again = build_run(tiny_config(rolled.path() / "again", {"train.steps=8"}));
  restore_run(again, load_checkpoint(at6), at6);
  REQUIRE(again.lr_halvings == 1);
}
