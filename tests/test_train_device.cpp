// train.device: the error of a machine or build without CUDA, and placement
// helpers that work on any build. (tests/cuda covers train.device=cuda runs.)
#include <catch2/catch.hpp>
#include <string>

#include "autograd/backend.h"
#include "autograd/error.h"
#include "tests/test_files.h"
#include "train/config/config.h"
#include "train/device_placement.h"
#include "train/trainer.h"

using namespace relpos;
using testing::TempDir;

namespace {

bool cuda_usable() {
  try {
    backend_for(Device::cuda);
    return true;
  } catch (const UsageError&) {
    return false;
  }
}

}  // namespace

TEST_CASE("train.device=cuda without a usable CUDA device fails with one line naming the key",
          "[trainer]") {
  if (cuda_usable()) {
    WARN("a CUDA device is usable here; tests/cuda covers train.device=cuda");
    return;
  }
  TempDir dir("train_device");
  const RunConfig config =
      load_config({}, {"train.device=cuda", "train.out_dir=" + dir.path().string()});
  try {
    build_run(config);
    FAIL("build_run accepted train.device=cuda without a usable CUDA device");
  } catch (const UsageError& e) {
    const std::string message = e.what();
    CHECK(message.rfind("train.device: cuda is not available: ", 0) == 0);
    CHECK(message.find("use train.device=cpu") != std::string::npos);
    CHECK(message.find('\n') == std::string::npos);
  }
}

TEST_CASE("a CPU run keeps its model on the CPU", "[trainer]") {
  TempDir dir("train_device_cpu");
  const RunState run =
      build_run(load_config({}, {"model.d_model=16", "model.n_heads=2", "model.d_ff=32",
                                 "train.out_dir=" + dir.path().string()}));
  REQUIRE(run.device == Device::cpu);
  REQUIRE(device_of(*run.model) == Device::cpu);
  REQUIRE(train_device("cpu") == Device::cpu);
  REQUIRE_THROWS_WITH(train_device("tpu"), "train.device must be cpu or cuda, got 'tpu'");
}
