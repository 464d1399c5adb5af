// Training with a kNN memory (model.knn_memory): the memory is part of the
// checkpoint, so a resumed run continues bit-exactly; a checkpoint whose memory
// does not fit the run is refused with one line.
#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "autograd/error.h"
#include "tests/test_files.h"
#include "tests/tiny_run.h"
#include "train/config/config.h"
#include "train/knn_state.h"
#include "train/store/checkpoint.h"
#include "train/store/checkpoint_folder.h"
#include "train/trainer.h"

using namespace relpos;
namespace fs = std::filesystem;
using testing::TempDir;

namespace {

RunConfig knn_config(const fs::path& out, const std::vector<std::string>& extra = {}) {
  std::vector<std::string> changes = {"model.n_layers=2",
                                      "model.position.scheme=t5",
                                      "model.knn_memory.layer=1",
                                      "model.knn_memory.size=40",
                                      "model.knn_memory.top_k=8",
                                      "data.batch_size=3",
                                      "train.steps=6",
                                      "train.log_every=10",
                                      "schedule.warmup_steps=2",
                                      "train.eval_every=3",
                                      "train.checkpoint_every=3",
                                      "train.keep_checkpoints=0",
                                      "train.threads=2",
                                      "train.out_dir=" + out.string()};
  changes.insert(changes.end(), extra.begin(), extra.end());
  return testing::tiny_run_config(changes);
}

std::vector<std::vector<double>> parameter_values(const RunState& run) {
  std::vector<std::vector<double>> out;
  for (const NamedParameter& p : run.model->parameters()) out.push_back(p.tensor.to_vector());
  return out;
}

}  // namespace

TEST_CASE("kNN memory: a resumed run equals the straight one, and needs the saved memory",
          "[knn][trainer]") {
  TempDir straight("knn_straight"), resumed("knn_resumed"), amnesic("knn_amnesic");
  RunState a = build_run(knn_config(straight.path()));
  train(a);
  REQUIRE(a.knn_memory.length() == 40);  // 6 steps of 16 positions, the last 40 kept

  const fs::path at3 = checkpoint_path(straight.path() / "checkpoints", 3);
  const Checkpoint saved = load_checkpoint(at3);
  REQUIRE(saved.knn_memory.at("keys").shape() == Shape{3, 2, 40, 8});
  REQUIRE(saved.knn_memory.at("valid_from").to_vector() == std::vector<double>{0, 0, 0});

  RunState b = build_run(knn_config(resumed.path()));
  restore_run(b, saved, at3);
  REQUIRE(b.knn_memory.keys().to_vector() == saved.knn_memory.at("keys").to_vector());
  train(b);
  REQUIRE(parameter_values(a) == parameter_values(b));  // bit-identical
  REQUIRE(a.knn_memory.keys().to_vector() == b.knn_memory.keys().to_vector());

  // Without the memory the continuation differs: the test above could fail.
  Checkpoint forgetful = saved;
  forgetful.knn_memory.clear();
  RunState c = build_run(knn_config(amnesic.path()));
  restore_run(c, forgetful, at3);
  REQUIRE(c.knn_memory.length() == 0);
  train(c);
  REQUIRE(parameter_values(a) != parameter_values(c));
}

TEST_CASE("kNN memory: a saved memory of the wrong shape is refused with one line",
          "[knn][trainer]") {
  TempDir dir("knn_shapes");
  const RunConfig config = knn_config(dir.path());
  KnnMemory memory(40);
  Checkpoint ckpt;
  ckpt.knn_memory["keys"] = Tensor::zeros({2, 2, 5, 8});  // 2 rows, the run has 3
  ckpt.knn_memory["values"] = Tensor::zeros({2, 2, 5, 8});
  ckpt.knn_memory["valid_from"] = Tensor::zeros({2}, DType::i64);
  REQUIRE_THROWS_WITH(restore_knn_memory(memory, ckpt, config, Device::cpu, "x.h5"),
                      Catch::Contains("checkpoint x.h5: /knn_memory holds keys f32[2, 2, 5, 8]") &&
                          Catch::Contains("data.batch_size=3"));
  ckpt.knn_memory.erase("values");
  REQUIRE_THROWS_WITH(restore_knn_memory(memory, ckpt, config, Device::cpu, "x.h5"),
                      "checkpoint x.h5: /knn_memory has no 'values'");
  ckpt.knn_memory["values"] = Tensor::zeros({3, 2, 5, 8});
  ckpt.knn_memory["keys"] = Tensor::zeros({3, 2, 5, 8});
  ckpt.knn_memory["valid_from"] = Tensor::full({3}, 9, DType::i64);  // past the 5 entries
  REQUIRE_THROWS_WITH(restore_knn_memory(memory, ckpt, config, Device::cpu, "x.h5"),
                      Catch::Contains("checkpoint x.h5: knn memory: a row start 9"));
  ckpt.knn_memory["valid_from"] = Tensor::full({3}, 2, DType::i64);
  restore_knn_memory(memory, ckpt, config, Device::cpu, "x.h5");
  REQUIRE(memory.length() == 5);
  REQUIRE(memory.valid_from() == std::vector<std::int64_t>{2, 2, 2});
}

TEST_CASE("kNN memory: metrics.jsonl logs the gates' trajectory, sigmoid of the gate bias",
          "[knn][trainer]") {
  TempDir dir("knn_gates");
  RunState run = build_run(knn_config(dir.path(), {"train.log_every=2"}));
  REQUIRE(knn_gates(*run.model) == std::vector<double>{0.5, 0.5});  // b = 0 at the start
  train(run);
  std::vector<std::vector<double>> logged;
  std::ifstream in(dir.path() / "metrics.jsonl");
  for (std::string line; std::getline(in, line);) {
    const nlohmann::json j = nlohmann::json::parse(line);
    if (j.contains("loss")) logged.push_back(j.at("knn_gate").get<std::vector<double>>());
  }
  REQUIRE(logged.size() == 3);      // steps 2, 4, 6
  REQUIRE(logged[0] != logged[2]);  // the gates move
  std::vector<double> expected;
  for (const NamedParameter& p : run.model->parameters())
    if (p.name == "blocks.1.attn.knn.gate")
      for (const double b : p.tensor.to_vector()) expected.push_back(1.0 / (1.0 + std::exp(-b)));
  REQUIRE(expected.size() == 2);
  for (std::size_t h = 0; h < 2; ++h) CHECK(logged[2][h] == Approx(expected[h]).epsilon(1e-12));
  // Without a kNN layer there is nothing to log.
  TempDir plain("knn_gates_plain");
  RunState none = build_run(knn_config(plain.path(), {"model.knn_memory.layer=-1"}));
  REQUIRE(knn_gates(*none.model).empty());
}
