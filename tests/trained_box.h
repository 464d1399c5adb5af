#pragma once
// A temporary folder holding tiny.yaml (tests/tiny_run.h) and a finished 4-step run of it
// in run/: the starting point of the CLI tests that attack a run or its checkpoint.

#include <catch2/catch.hpp>
#include <filesystem>
#include <string>

#include "tests/test_files.h"
#include "tests/test_process.h"
#include "tests/tiny_run.h"

namespace relpos::testing {

struct TrainedBox : TempDir {
  explicit TrainedBox(const std::string& name) : TempDir(name) {
    write("tiny.yaml", tiny_run_yaml());
    const auto r = relpos_in(path(), {"train", "tiny.yaml", "train.out_dir=run"});
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
  }
  std::filesystem::path checkpoint() const { return path() / "run/checkpoints/ckpt_00000004.h5"; }
};

}  // namespace relpos::testing
