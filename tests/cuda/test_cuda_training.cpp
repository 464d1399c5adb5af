// Whole runs with train.device=cuda: placement, checkpoints that move between
// devices, bit-exact resume on the GPU, and the quickstart's loss curve
// against the CPU's.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tests/test_files.h"
#include "train/config/config.h"
#include "train/store/checkpoint.h"
#include "train/store/checkpoint_folder.h"
#include "train/trainer.h"

using namespace relpos;
namespace fs = std::filesystem;
using testing::TempDir;

namespace {

RunConfig tiny_config(const fs::path& out, const std::string& device,
                      const std::vector<std::string>& extra = {}) {
  std::vector<std::string> overrides = {"model.d_model=16",
                                        "model.n_layers=2",
                                        "model.n_heads=2",
                                        "model.d_ff=32",
                                        "model.dropout=0.1",
                                        "model.position.scheme=t5",
                                        "data.seq_len=16",
                                        "data.batch_size=4",
                                        "train.steps=6",
                                        "train.log_every=1",
                                        "train.eval_every=3",
                                        "train.eval_batches=1",
                                        "train.checkpoint_every=3",
                                        "train.keep_checkpoints=0",
                                        "schedule.warmup_steps=2",
                                        "optim.lr=1e-2",
                                        "train.device=" + device,
                                        "train.out_dir=" + out.string()};
  overrides.insert(overrides.end(), extra.begin(), extra.end());
  return load_config({}, overrides);
}

struct Difference {
  double largest = 0.0, mean = 0.0;  // absolute, over every parameter element
};

// Trains `resumed` from `checkpoint` and compares its parameters with those of
// the finished run `reference`.
Difference resumed_difference(const RunState& reference, RunState& resumed,
                              const fs::path& checkpoint) {
  restore_run(resumed, load_checkpoint(checkpoint), checkpoint);
  train(resumed);
  const auto a = reference.model->parameters(), b = resumed.model->parameters();
  REQUIRE(a.size() == b.size());
  Difference d;
  std::size_t count = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const std::vector<double> x = a[i].tensor.to_vector(), y = b[i].tensor.to_vector();
    for (std::size_t j = 0; j < x.size(); ++j) {
      d.largest = std::max(d.largest, std::abs(x[j] - y[j]));
      d.mean += std::abs(x[j] - y[j]);
    }
    count += x.size();
  }
  d.mean /= static_cast<double>(count);
  return d;
}

// The repository root: $RELPOS_SOURCE_DIR, else the working directory (the GPU
// machine runs the bundle from the repository root).
fs::path source_dir() {
  const char* dir = std::getenv("RELPOS_SOURCE_DIR");
  const fs::path root = dir != nullptr && *dir != '\0' ? fs::path(dir) : fs::current_path();
  INFO("looking for configs/quickstart.yaml under "
       << root << "; run from the repository root or set RELPOS_SOURCE_DIR");
  REQUIRE(fs::exists(root / "configs" / "quickstart.yaml"));
  return root;
}

struct Curve {
  std::vector<double> loss;      // per step
  std::vector<double> val_loss;  // per evaluation
};

Curve read_curve(const fs::path& metrics) {
  std::ifstream in(metrics);
  REQUIRE(in.good());
  Curve curve;
  for (std::string line; std::getline(in, line);) {
    const nlohmann::json record = nlohmann::json::parse(line);
    if (record.contains("loss")) curve.loss.push_back(record["loss"].get<double>());
    if (record.contains("val_loss")) curve.val_loss.push_back(record["val_loss"].get<double>());
  }
  return curve;
}

Curve quickstart_curve(const fs::path& root, const fs::path& out, const std::string& device) {
  const RunConfig config = load_config(
      {(root / "configs" / "quickstart.yaml").string()},
      {"train.steps=200", "train.log_every=1", "train.eval_every=100", "train.checkpoint_every=200",
       "train.device=" + device, "train.out_dir=" + out.string()});
  RunState run = build_run(config);
  train(run);
  return read_curve(out / "metrics.jsonl");
}

}  // namespace

TEST_CASE("train.device=cuda puts parameters and optimizer state on the GPU", "[cuda][trainer]") {
  TempDir dir("cuda_placement");
  const RunState run = build_run(tiny_config(dir.path(), "cuda"));
  REQUIRE(run.device == Device::cuda);
  for (const NamedParameter& p : run.model->parameters()) {
    INFO(p.name);
    REQUIRE(p.tensor.device() == Device::cuda);
  }
  const auto state = run.optimizer->state();
  REQUIRE(state.at("embed.weight/exp_avg").device() == Device::cuda);
  REQUIRE(state.at("step").device() == Device::cpu);
  REQUIRE_THROWS_WITH(build_run(tiny_config(dir.path(), "cuda", {"optim.name=sgd"})),
                      "optimizer 'sgd': the sgd_update kernel is not supported on cuda");
}

TEST_CASE("GPU runs resume bit-exactly, and checkpoints move between CPU and GPU",
          "[cuda][trainer]") {
  TempDir cpu_dir("cuda_ckpt_cpu"), gpu_dir("cuda_ckpt_gpu"), other("cuda_ckpt_other");
  RunState cpu_run = build_run(tiny_config(cpu_dir.path(), "cpu"));
  train(cpu_run);
  RunState gpu_run = build_run(tiny_config(gpu_dir.path(), "cuda"));
  train(gpu_run);
  const fs::path cpu_at3 = checkpoint_path(cpu_dir.path() / "checkpoints", 3);
  const fs::path gpu_at3 = checkpoint_path(gpu_dir.path() / "checkpoints", 3);

  // Every GPU kernel reduces in a fixed order, so a resumed GPU run repeats the bits.
  RunState gpu_again = build_run(tiny_config(other.path() / "a", "cuda"));
  REQUIRE(resumed_difference(gpu_run, gpu_again, gpu_at3).largest == 0.0);

  // Across devices only rounding differs. Adam's first steps move each element
  // by about lr = 1e-2 whatever the gradient's size, so an element whose
  // gradient is pure rounding noise may step the other way (2 lr apart); the
  // mean over all elements stays near rounding. A checkpoint that lost the
  // parameters or the Adam moments moves nearly every element by a good part
  // of lr: a mean of 1e-3 or more.
  RunState cpu_from_gpu = build_run(tiny_config(other.path() / "b", "cpu"));
  CHECK(resumed_difference(gpu_run, cpu_from_gpu, gpu_at3).mean < 1e-5);
  RunState gpu_from_cpu = build_run(tiny_config(other.path() / "c", "cuda"));
  CHECK(resumed_difference(cpu_run, gpu_from_cpu, cpu_at3).mean < 1e-5);
}

// The whole-run check. Tolerances:
// - step 1's loss comes from the same initial weights and batch, so it differs
//   only by the forward's f32 rounding (cuBLAS's summation order, device expf):
//   1e-5 relative.
// - From then on, the rounding differences are fed through training. On the
//   CPU, this config's 200 steps with model.attention=fused against composed,
//   and fused against flash (the same math, other rounding), differed by at
//   most 1.4e-6 nats per step and 1.8e-7 in validation loss: this run does not
//   amplify rounding. The GPU rounds every GEMM differently (cuBLAS's order), so
//   we allow about 700 times that: 1e-3 nats per step and in validation loss.
//   A wrong gradient or update moves the curve by 1e-2 nats or more.
//   (Not yet measured on a GPU: if the first GPU run fails only these bounds,
//   look at the printed differences before widening them.)
TEST_CASE("configs/quickstart.yaml with train.device=cuda follows the CPU loss curve",
          "[cuda][trainer][quickstart]") {
  const fs::path root = source_dir();
  setenv("RELPOS_DATA_DIR", (root / "data").c_str(), 0);  // the bundled corpus
  TempDir dir("cuda_quickstart");
  const Curve cpu = quickstart_curve(root, dir.path() / "cpu", "cpu");
  const Curve gpu = quickstart_curve(root, dir.path() / "cuda", "cuda");
  REQUIRE(cpu.loss.size() == 200);
  REQUIRE(gpu.loss.size() == 200);
  CHECK(std::abs(gpu.loss[0] - cpu.loss[0]) <= 1e-5 * cpu.loss[0]);
  double largest = 0.0;
  for (std::size_t i = 0; i < cpu.loss.size(); ++i)
    largest = std::max(largest, std::abs(gpu.loss[i] - cpu.loss[i]));
  INFO("largest per-step difference " << largest << "; final losses " << cpu.loss.back()
                                      << " (cpu) and " << gpu.loss.back() << " (cuda)");
  CHECK(largest <= 1e-3);
  REQUIRE(cpu.val_loss.size() == gpu.val_loss.size());
  for (std::size_t i = 0; i < cpu.val_loss.size(); ++i) {
    INFO("evaluation " << i << ": " << cpu.val_loss[i] << " (cpu), " << gpu.val_loss[i]
                       << " (cuda)");
    CHECK(std::abs(gpu.val_loss[i] - cpu.val_loss[i]) <= 1e-3);
  }
  CHECK(cpu.loss.back() < cpu.loss.front() - 1.0);  // it did learn
}
