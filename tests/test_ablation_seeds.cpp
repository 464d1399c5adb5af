// Seeded sweeps: mean / sample std / n, the turning point, the progress line, resuming a
// half-finished seeded sweep, and parallel runs (jobs) giving the same results.
#include <fmt/format.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>
#include <map>
#include <numbers>
#include <sstream>

#include "autograd/error.h"
#include "tests/fixture.h"
#include "tests/test_files.h"
#include "tests/tiny_run.h"
#include "train/ablation/report.h"
#include "train/ablation/sweep.h"
#include "train/store/checkpoint.h"
#include "train/store/checkpoint_folder.h"

using namespace relpos;
namespace fs = std::filesystem;
using testing::slurp;
using testing::TempDir;

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

std::vector<std::string> split(const std::string& text, char separator) {
  std::vector<std::string> out;
  std::stringstream s(text);
  for (std::string item; std::getline(s, item, separator);) out.push_back(item);
  return out;
}

// results.csv: variant -> column -> text.
std::map<std::string, std::map<std::string, std::string>> csv_by_variant(const fs::path& file) {
  const std::vector<std::string> lines = split(slurp(file), '\n');
  const std::vector<std::string> header = split(lines.at(0), ',');
  std::map<std::string, std::map<std::string, std::string>> rows;
  for (std::size_t i = 1; i < lines.size(); ++i) {
    const std::vector<std::string> cells = split(lines[i], ',');
    REQUIRE(cells.size() == header.size());
    for (std::size_t c = 0; c < cells.size(); ++c) rows[cells[0]][header[c]] = cells[c];
  }
  return rows;
}

// The columns that depend only on what was trained and evaluated, not on timing.
bool result_column(const std::string& column) {
  for (const char* prefix : {"final_val", "loss_at_", "accuracy_at_", "exact_match_at_",
                             "turning_point", "seeds", "runs", "steps", "params"})
    if (column.starts_with(prefix)) return true;
  return false;
}

AblationSweep seeded_sweep(const TempDir& box, const std::string& out, const std::string& jobs) {
  box.write("tiny.yaml", testing::tiny_run_yaml({"data.batch_size=4", "train.keep_checkpoints=0"}));
  return load_sweep(
      box.write(out + ".yaml", fmt::format("base: [tiny.yaml]\n"
                                           "out_dir: {}\n"
                                           "eval_lengths: [32]\n"
                                           "eval_batches: 1\n"
                                           "seeds: [0, 1]\n"
                                           "jobs: {}\n"
                                           "variants:\n"
                                           "  - name: none\n"
                                           "    overrides: [model.position.scheme=none]\n"
                                           "  - name: alibi\n"
                                           "    overrides: [model.position.scheme=alibi]\n",
                                           (box.path() / out).string(), jobs)));
}

}  // namespace

TEST_CASE("ablation seeds: mean, sample std and n against hand-computed values",
          "[ablation][seeds]") {
  const Stat four = stat_of({1.0, 2.0, 3.0, 4.0});
  REQUIRE(four.n == 4);
  REQUIRE(four.mean == Approx(2.5).epsilon(1e-15));
  REQUIRE(four.std == Approx(std::sqrt(5.0 / 3.0)).epsilon(1e-15));  // sum of squares 5, n-1 = 3
  const Stat with_gap = stat_of({2.0, kNaN, 4.0});                   // NaN: that run gave none
  REQUIRE(with_gap.n == 2);
  REQUIRE(with_gap.mean == 3.0);
  REQUIRE(with_gap.std == Approx(std::sqrt(2.0)).epsilon(1e-15));
  const Stat one = stat_of({0.75});
  REQUIRE(one.n == 1);
  REQUIRE(one.mean == 0.75);
  REQUIRE(std::isnan(one.std));
  const Stat none = stat_of({kNaN});
  REQUIRE(none.n == 0);
  REQUIRE(std::isnan(none.mean));
  REQUIRE(std::isnan(none.std));
}

TEST_CASE("ablation seeds: the turning point on hand-made curves", "[ablation][seeds]") {
  // Rises 1.5% at 256: the turning point is 128 (0.5% above).
  auto t = turning_point({{64, 2.0}, {128, 2.01}, {256, 2.03}, {512, 2.0}}, 64);
  REQUIRE(t.length == 128);
  REQUIRE_FALSE(t.last_evaluated);
  // Exactly 1% above still counts; falling loss (more context) is within too.
  t = turning_point({{64, 2.0}, {128, 2.02}, {256, 1.5}, {1024, 1.4}}, 64);
  REQUIRE(t.length == 1024);
  REQUIRE(t.last_evaluated);
  // Unsorted input, a length below the training length ignored, n/a ends the band.
  t = turning_point({{256, kNaN}, {32, 9.0}, {64, 1.0}, {128, 1.0}}, 64);
  REQUIRE(t.length == 128);
  REQUIRE_FALSE(t.last_evaluated);
  // No loss at the training length: no turning point.
  REQUIRE(turning_point({{64, kNaN}, {128, 1.0}}, 64).length == 0);
  REQUIRE(turning_point({{128, 1.0}}, 64).length == 0);
  // Leaves the band at once.
  t = turning_point({{64, 1.0}, {128, 1.2}}, 64);
  REQUIRE(t.length == 64);
  REQUIRE_FALSE(t.last_evaluated);
}

TEST_CASE("ablation seeds: the progress line", "[ablation][seeds]") {
  // 2 runs measured in 100 s: 50 s each, 23 left: 1150 s.
  REQUIRE(progress_line({4, 27, 1, 9, 2, 100.0}) ==
          "progress: 4/27 runs, 1/9 variants done, 1m 40s elapsed, ETA 19m 10s");
  REQUIRE(progress_line({3, 27, 1, 9, 0, 0.2}) ==
          "progress: 3/27 runs, 1/9 variants done, 0s elapsed, ETA n/a");
  REQUIRE(progress_line({80, 81, 26, 27, 80, 3600.0}) ==
          "progress: 80/81 runs, 26/27 variants done, 1h 00m elapsed, ETA 45s");
  REQUIRE(progress_line({81, 81, 27, 27, 81, 4000.0}) ==
          "progress: 81/81 runs, 27/27 variants done, 1h 06m elapsed, finished");
}

TEST_CASE("ablation seeds: a half-finished seeded sweep finishes exactly the rest",
          "[ablation][seeds]") {
  TempDir box("ablation_seeds");
  // The straight run.
  const AblationSweep straight = seeded_sweep(box, "straight", "1");
  std::ostringstream log;
  const std::vector<VariantResult> runs = run_sweep(straight, log);
  INFO(log.str());
  REQUIRE(runs.size() == 4);
  REQUIRE(runs[1].name == "none");
  REQUIRE(runs[1].seed == 1);
  REQUIRE(fs::exists(box.path() / "straight/alibi/seed-1/summary.json"));
  REQUIRE(log.str().find("progress: 4/4 runs, 2/2 variants done") != std::string::npos);
  // Seed by seed: both variants' seed 0 trains before either variant's seed 1.
  const std::string straight_log = log.str();
  REQUIRE(straight_log.find("train alibi/seed-0 in") < straight_log.find("train none/seed-1 in"));
  REQUIRE(runs[0].final_val_loss != runs[1].final_val_loss);  // the seeds differ
  const auto expected = csv_by_variant(box.path() / "straight/results.csv");
  const Stat none = stat_of({runs[0].final_val_loss, runs[1].final_val_loss});
  REQUIRE(std::stod(expected.at("none").at("final_val_loss")) == Approx(none.mean).epsilon(1e-6));
  REQUIRE(std::stod(expected.at("none").at("final_val_loss_std")) ==
          Approx(none.std).margin(1e-6));  // written with 6 decimals
  REQUIRE(expected.at("none").at("final_val_loss_n") == "2");
  REQUIRE(expected.at("none").at("seeds") == "0 1");
  REQUIRE(expected.at("none").at("runs") == "none/seed-0 none/seed-1");
  const std::string md = slurp(box.path() / "straight/results.md");
  REQUIRE(md.find(fmt::format("| none | none | corpus | 16 | {} | 2 | {:.4f} ± {:.4f} | "
                              "{:.4f} ± {:.4f} |",
                              runs[0].parameters, none.mean / std::numbers::ln2,
                              none.ci95 / std::numbers::ln2, none.mean, none.ci95)) !=
          std::string::npos);
  REQUIRE(md.find("n/a") != std::string::npos);  // accuracy and exact match on the corpus

  // The same sweep cut short: none/seed-0 and alibi/seed-0 done, alibi/seed-1 interrupted
  // after its step-2 checkpoint, none/seed-1 never started.
  const AblationSweep cut = seeded_sweep(box, "cut", "1");
  run_sweep(cut, log);
  const fs::path out = box.path() / "cut";
  fs::remove_all(out / "none/seed-1");
  fs::remove(out / "alibi/seed-1/summary.json");
  fs::remove(out / "alibi/seed-1/ablation.json");
  fs::remove(checkpoint_path(out / "alibi/seed-1/checkpoints", 4));
  std::ostringstream rerun;
  run_sweep(cut, rerun);
  const std::string text = rerun.str();
  INFO(text);
  REQUIRE(text.find("skip none/seed-0: finished") != std::string::npos);
  REQUIRE(text.find("skip alibi/seed-0: finished") != std::string::npos);
  REQUIRE(text.find("train none/seed-1 in") != std::string::npos);
  REQUIRE(text.find("resume alibi/seed-1 from step 2") != std::string::npos);
  REQUIRE(text.find("train none/seed-0") == std::string::npos);
  REQUIRE(text.find("train alibi/seed-0") == std::string::npos);
  REQUIRE(text.find("progress: 2/4 runs, 0/2 variants done") != std::string::npos);
  REQUIRE(text.find("progress: 4/4 runs, 2/2 variants done") != std::string::npos);
  const auto resumed = csv_by_variant(out / "results.csv");
  for (const auto& [variant, row] : expected)
    for (const auto& [column, value] : row)
      if (result_column(column)) {
        INFO(variant << " " << column);
        REQUIRE(resumed.at(variant).at(column) == value);
      }
}

TEST_CASE("ablation seeds: two runs at once (jobs: 2) give the results of one at a time",
          "[ablation][seeds][cli][slow]") {
  TempDir box("ablation_jobs");
  std::ostringstream log;
  run_sweep(seeded_sweep(box, "serial", "1"), log);
  const AblationSweep parallel = seeded_sweep(box, "parallel", "2");
  std::ostringstream parallel_log;
  REQUIRE_THROWS_WITH(run_sweep(parallel, parallel_log),
                      Catch::Contains("jobs 2") && Catch::Contains("needs the relpos executable"));
  run_sweep(parallel, parallel_log, RELPOS_CLI);
  const std::string text = parallel_log.str();
  INFO(text);
  REQUIRE(text.find("start none/seed-0 (log: ") != std::string::npos);
  REQUIRE(text.find("done alibi/seed-1") != std::string::npos);
  REQUIRE(text.find("progress: 4/4 runs, 2/2 variants done") != std::string::npos);
  REQUIRE(slurp(box.path() / "parallel/logs/none.seed-1.log").find("train none/seed-1 in") !=
          std::string::npos);
  const auto expected = csv_by_variant(box.path() / "serial/results.csv");
  const auto got = csv_by_variant(box.path() / "parallel/results.csv");
  for (const auto& [variant, row] : expected)
    for (const auto& [column, value] : row)
      if (result_column(column)) {
        INFO(variant << " " << column);
        REQUIRE(got.at(variant).at(column) == value);
      }
  // A failing run fails the sweep, naming it and its log.
  fs::remove_all(box.path() / "parallel/alibi/seed-0");
  const fs::path failing = box.write("failing.sh", "#!/bin/sh\necho 'out of disk space'\nexit 3\n");
  fs::permissions(failing, fs::perms::owner_exec, fs::perm_options::add);
  REQUIRE_THROWS_WITH(run_sweep(parallel, parallel_log, failing),
                      Catch::Contains("run alibi/seed-0 failed (exit 3; ") &&
                          Catch::Contains("alibi.seed-0.log): out of disk space"));
}

TEST_CASE("ablation seeds: seeds and jobs errors name the file, line and key",
          "[ablation][seeds]") {
  TempDir box("ablation_seed_errors");
  const auto error_of = [&](const std::string& text) -> std::string {
    try {
      load_sweep(box.write("bad.yaml", "out_dir: out\n" + text + "variants:\n  - name: a\n"));
    } catch (const UsageError& e) {
      return e.what();
    }
    return "no error";
  };
  CHECK_THAT(error_of("seeds: []\n"),
             Catch::Contains("bad.yaml:2: seeds: expected a non-empty list of seeds"));
  CHECK_THAT(error_of("seeds: 3\n"), Catch::Contains("seeds: expected a non-empty list"));
  CHECK_THAT(error_of("seeds: [0, -1]\n"),
             Catch::Contains("bad.yaml:2: seeds: expected an integer >= 0, got -1"));
  CHECK_THAT(error_of("seeds: [1, 2, 1]\n"),
             Catch::Contains("bad.yaml:2: seeds: seed 1 is listed twice"));
  CHECK_THAT(error_of("jobs: 0\n"), Catch::Contains("bad.yaml:2: jobs: expected an integer >= 1"));
  CHECK_THAT(error_of("jobs: two\n"), Catch::Contains("jobs: expected an integer >= 1, got 'two'"));
  const AblationSweep sweep = load_sweep(box.write(
      "good.yaml", "out_dir: out\nseeds: [3, 5]\njobs: 2\nvariants:\n  - name: a\n  - name: b\n"));
  REQUIRE(sweep.run_count() == 4);
  REQUIRE(sweep.run_label(0) == "a/seed-3");
  REQUIRE(sweep.run_label(3) == "b/seed-5");
  REQUIRE(sweep.jobs == 2);
}

TEST_CASE("ablation seeds: accuracy and exact match reach results.md and results.csv",
          "[ablation][seeds]") {
  TempDir box("ablation_accuracy");
  AblationSweep sweep;
  sweep.file = "sweep.yaml";
  sweep.out_dir = box.path() / "out";
  sweep.seeds = {0, 1};
  // Hand-made runs: a task variant with answer metrics (one seed n/a at 128), and text.
  const auto run = [](const std::string& name, const std::string& data, std::uint64_t seed,
                      double acc64, double acc128) {
    VariantResult r;
    r.name = name;
    r.scheme = "t5";
    r.data_source = data;
    r.seed = seed;
    r.train_length = 64;
    r.steps = 10;
    r.final_val_loss = 1.0 + static_cast<double>(seed);
    r.tokens_per_second = r.wall_seconds = 1.0;
    r.extrapolation = {{64, 1.0, "", acc64, acc64 / 2},
                       {128, 1.0 + static_cast<double>(seed), "", acc128, acc128 / 2}};
    return r;
  };
  write_ablation_report(sweep,
                        {run("t5-copy", "copy", 0, 0.5, 0.25), run("t5-copy", "copy", 1, 1.0, kNaN),
                         run("t5", "corpus", 0, kNaN, kNaN), run("t5", "corpus", 1, kNaN, kNaN)});
  const std::string md = slurp(sweep.out_dir / "results.md");
  INFO(md);
  // accuracy @64: 0.5 and 1.0: mean 0.75, std sqrt(0.125) = 0.354, 95% half-width
  // t_0.975,1 · std / √2 = 12.7062 · 0.25 = 3.177; @128 only one seed.
  REQUIRE(md.find("## Accuracy on the tasks") != std::string::npos);
  REQUIRE(md.find("| t5-copy | 0.750 ± 3.177 | 0.250 ± n/a (n=1) | 0.375 ± 1.588 | "
                  "0.125 ± n/a (n=1) |") != std::string::npos);
  REQUIRE(md.find("| t5 | 0.") == std::string::npos);  // text has no answer tokens
  // final val loss 1 and 2: 1.5 ± 6.3531 (2.1640 ± 9.1656 bits/byte, first); loss @128
  // leaves the 1% band: turning point 64.
  REQUIRE(md.find("| t5-copy | t5 | copy | 64 | 0 | 2 | 2.1640 ± 9.1656 | 1.5000 ± 6.3531 |") !=
          std::string::npos);
  const auto rows = csv_by_variant(sweep.out_dir / "results.csv");
  REQUIRE(rows.at("t5-copy").at("accuracy_at_64") == "0.750000");
  REQUIRE(rows.at("t5-copy").at("accuracy_at_64_std") == "0.353553");
  REQUIRE(rows.at("t5-copy").at("accuracy_at_64_n") == "2");
  REQUIRE(rows.at("t5-copy").at("accuracy_at_64_ci95") == "3.176551");
  REQUIRE(rows.at("t5-copy").at("exact_match_at_128") == "0.125000");
  REQUIRE(rows.at("t5-copy").at("exact_match_at_128_std") == "nan");
  REQUIRE(rows.at("t5-copy").at("exact_match_at_128_n") == "1");
  REQUIRE(rows.at("t5").at("accuracy_at_64") == "nan");
  REQUIRE(rows.at("t5").at("accuracy_at_64_n") == "0");
  REQUIRE(rows.at("t5-copy").at("turning_point") == "64");
  REQUIRE(rows.at("t5").at("turning_point") == "64");
}
