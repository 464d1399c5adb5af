// The study's sweep files (configs/study/*.yaml, docs/results/study.md): each loads and
// resolves, evaluates on the whole validation split, and every part but the pilot runs 5
// seeds.
#include <catch2/catch.hpp>
#include <filesystem>
#include <string>
#include <vector>

#include "tests/fixture.h"
#include "train/ablation/sweep_file.h"

using namespace relpos;
namespace fs = std::filesystem;

TEST_CASE("study: every sweep file of configs/study resolves and reads the whole split",
          "[ablation][study]") {
  std::size_t sweeps = 0;
  for (const auto& entry : fs::directory_iterator(testing::source_dir() / "configs" / "study")) {
    const fs::path file = entry.path();
    if (file.extension() != ".yaml" || file.stem().string().ends_with("_model")) continue;
    INFO(file.string());
    ++sweeps;
    const AblationSweep sweep = load_sweep(file);
    const std::vector<RunConfig> configs = resolve_variant_configs(sweep);
    CHECK(sweep.eval_whole);
    CHECK(sweep.out_dir.string().starts_with("runs/study/"));
    CHECK(sweep.jobs == 2);
    if (file.stem() != "pilot") CHECK(sweep.seeds == std::vector<std::uint64_t>{0, 1, 2, 3, 4});
    for (const RunConfig& c : configs) CHECK(c.train.threads == 1);
  }
  CHECK(sweeps >= 2);
}
