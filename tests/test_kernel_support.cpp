// Code above autograd/ asks whether an optional kernel is supported, never which
// device it runs on. Switching a kernel off on the CPU stands in for a backend
// that lacks it: attention falls back to the fused path, and a run whose optimizer
// has no update kernel is refused while it is set up, before any step.
#include <catch2/catch.hpp>
#include <filesystem>

#include "autograd/error.h"
#include "autograd/kernel.h"
#include "layers/scaled_attention.h"
#include "tests/test_files.h"
#include "tests/test_helpers.h"
#include "train/config/config.h"
#include "train/trainer.h"

using namespace relpos;
namespace fs = std::filesystem;

TEST_CASE("attention takes the fused path where the flash kernel is missing", "[kernels]") {
  Rng rng(5);
  const Tensor q = randn({2, 2, 6, 8}, rng), k = randn({2, 2, 9, 8}, rng),
               v = randn({2, 2, 9, 8}, rng);
  PositionTerms terms;
  terms.distance_bias = randn({2, 6 + 9 - 1}, rng);
  const Tensor fused = scaled_attention(q, k, v, terms, true, AttentionPath::fused);
  const KernelSwitchedOff off(Device::cpu, Kernel::flash_attention);
  const Tensor flash = scaled_attention(q, k, v, terms, true, AttentionPath::flash);
  REQUIRE(flash.to_vector() == fused.to_vector());
}

TEST_CASE("an optimizer whose update kernel is missing is refused at set-up", "[kernels]") {
  testing::TempDir dir("kernel_support");
  const RunConfig config = load_config(
      {}, {"model.d_model=16", "model.n_layers=1", "model.n_heads=2", "model.d_ff=32",
           "data.seq_len=16", "data.batch_size=2", "train.steps=2", "schedule.warmup_steps=1",
           "optim.name=sgd", "train.out_dir=" + (dir.path() / "run").string()});
  const KernelSwitchedOff off(Device::cpu, Kernel::sgd_update);
  REQUIRE_THROWS_AS(build_run(config), UsageError);
  REQUIRE_THROWS_WITH(build_run(config),
                      "optimizer 'sgd': the sgd_update kernel is not supported on cpu");
  REQUIRE_FALSE(fs::exists(dir.path() / "run"));  // nothing written
}
