// The study's sweep files (configs/study/*.yaml, docs/results/study.md): each loads and
// resolves, evaluates on the whole validation split, and every part but the pilot runs 5
// seeds; the long-context parts (issue 29, item 6) run 3 seeds, train >= 1 epoch with
// re-drawn stream offsets where they recur and sweep the memory to >= 8L, and the kNN parts
// train >= 5,000 steps and sweep the kNN memory over two decades.
#include <catch2/catch.hpp>
#include <filesystem>
#include <string>
#include <vector>

#include "data/data_source.h"
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
    const std::string part = file.stem().string();
    if (part.starts_with("long-context")) {
      CHECK(sweep.seeds == std::vector<std::uint64_t>{0, 1, 2});
      CHECK(sweep.copy_span > 0);
      const auto source = make_source(configs.front().data);
      const auto train_tokens = static_cast<std::int64_t>(
          dynamic_cast<const CorpusSource&>(*source).corpus().train.size());
      for (const RunConfig& c : configs) {
        CHECK(sweep.eval_mem_lengths.back() >= 8 * c.data.seq_len);
        CHECK(c.train.steps * c.data.batch_size * c.data.seq_len >= train_tokens);  // >= 1 epoch
        if (c.train.mem_len > 0) CHECK(c.data.stream_offsets == "redrawn");
      }
    } else if (part.starts_with("knn")) {
      CHECK(sweep.eval_knn_sizes.back() >= 100 * sweep.eval_knn_sizes.at(1));  // [0, S, ...]
      const auto source = make_source(configs.front().data);
      const auto validation = static_cast<std::int64_t>(
          dynamic_cast<const CorpusSource&>(*source).corpus().validation.size());
      for (const RunConfig& c : configs) {
        CHECK(c.train.steps >= 5000);
        CHECK(validation / c.data.batch_size >= 25000);  // evaluation streams of >= 25 KB
      }
    } else if (part != "pilot") {
      CHECK(sweep.seeds == std::vector<std::uint64_t>{0, 1, 2, 3, 4});
    }
    for (const RunConfig& c : configs) CHECK(c.train.threads == 1);
  }
  CHECK(sweeps >= 2);
}
