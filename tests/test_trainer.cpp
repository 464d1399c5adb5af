// The trainer: bit-exact resume, divergence handling and error paths.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

#include "tests/test_files.h"
#include "train/checkpoint.h"
#include "train/config.h"
#include "train/trainer.h"

using namespace relpos;
namespace fs = std::filesystem;
using testing::TempDir;

namespace {

std::vector<std::string> tiny(const fs::path& out, const std::string& scheme = "t5") {
  return {"model.d_model=16", "model.n_layers=2", "model.n_heads=2", "model.d_ff=32",
          "model.dropout=0.1", "model.position.scheme=" + scheme, "data.seq_len=16",
          "data.batch_size=4", "train.steps=6", "train.log_every=1", "train.eval_every=3",
          "train.eval_batches=1", "train.checkpoint_every=3", "train.keep_checkpoints=0",
          "schedule.warmup_steps=2", "train.threads=2", "train.out_dir=" + out.string()};
}

RunConfig tiny_config(const fs::path& out, const std::vector<std::string>& extra = {},
                      const std::string& scheme = "t5") {
  std::vector<std::string> overrides = tiny(out, scheme);
  overrides.insert(overrides.end(), extra.begin(), extra.end());
  return load_config({}, overrides);
}

std::vector<std::string> lines_of(const fs::path& file) {
  std::ifstream in(file);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

}  // namespace

TEST_CASE("resume is bit-exact: N steps straight equal k steps, resume, N-k steps", "[trainer]") {
  for (const std::string scheme : {"t5", "shaw", "xl"}) {
    INFO("scheme " << scheme);
    TempDir straight("trainer_straight"), resumed("trainer_resumed");
    RunState a = build_run(tiny_config(straight.path(), {}, scheme));
    train(a);
    // The straight run saved a checkpoint at step 3: continue it in another folder.
    RunState b = build_run(tiny_config(resumed.path(), {}, scheme));
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
            (l.find("\"step\":4") != std::string::npos || l.find("\"step\":5") != std::string::npos ||
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
  REQUIRE_THROWS_WITH(train(run), Catch::Contains("diverged at step") &&
                                      Catch::Contains("last good checkpoint"));
  const auto latest = latest_checkpoint(dir.path() / "checkpoints");
  REQUIRE(latest.has_value());
  const Checkpoint ok = load_checkpoint(*latest);  // loads cleanly
  REQUIRE(ok.step >= 1);
  REQUIRE(ok.step < 20);
  for (const auto& entry : fs::directory_iterator(dir.path() / "checkpoints"))
    REQUIRE(entry.path().extension() != ".tmp");
}

TEST_CASE("training errors: unwritable out_dir, tiny corpus, changed architecture",
          "[trainer]") {
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
