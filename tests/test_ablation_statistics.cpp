// The ablation report's statistics: Student t quantiles against published values, 95%
// intervals of a mean, and differences between variants paired by seed, written as
// results.md's section and differences.csv.
#include <catch2/catch.hpp>
#include <cmath>
#include <numbers>
#include <string>

#include "tests/test_files.h"
#include "train/ablation/differences.h"
#include "train/ablation/report.h"
#include "train/ablation/statistics.h"

using namespace relpos;
using testing::slurp;
using testing::TempDir;

TEST_CASE("statistics: t quantiles equal the published 0.975 values", "[ablation][statistics]") {
  // R's qt(0.975, df) to 10 digits.
  CHECK(t_quantile_975(1) == Approx(12.7062047362).epsilon(1e-10));
  CHECK(t_quantile_975(2) == Approx(4.3026527297).epsilon(1e-10));
  CHECK(t_quantile_975(4) == Approx(2.7764451052).epsilon(1e-10));
  CHECK(t_quantile_975(9) == Approx(2.2621571628).epsilon(1e-10));
  CHECK(t_quantile_975(29) == Approx(2.0452296421).epsilon(1e-10));
  CHECK(t_quantile_975(100000) == Approx(1.9599877).epsilon(1e-6));  // -> the normal's 1.959964
  CHECK(std::isnan(t_quantile_975(0)));
}

TEST_CASE("statistics: the 95% interval of a mean and of a paired difference",
          "[ablation][statistics]") {
  const Stat four = stat_of({1.0, 2.0, 3.0, 4.0});
  // std √(5/3); t_0.975,3 = 3.1824463053
  CHECK(four.ci95 == Approx(3.1824463053 * std::sqrt(5.0 / 3.0) / 2.0).epsilon(1e-10));
  CHECK(four.excludes_zero());  // 2.5 ± 2.054
  CHECK_FALSE(stat_of({-1.0, 1.0, 2.0}).excludes_zero());
  CHECK_FALSE(stat_of({5.0}).excludes_zero());  // one value: no interval
  CHECK(std::isnan(stat_of({5.0}).ci95));

  // Differences 0.1, 0.11, 0.09 (seed 3 only in b: left out): mean 0.1, std 0.01.
  const Stat paired =
      paired_difference({{0, 1.0}, {1, 2.0}, {2, 3.0}}, {{0, 0.9}, {1, 1.89}, {2, 2.91}, {3, 7.0}});
  CHECK(paired.n == 3);
  CHECK(paired.mean == Approx(0.1).epsilon(1e-12));
  CHECK(paired.ci95 == Approx(4.3026527297 * 0.01 / std::sqrt(3.0)).epsilon(1e-9));
  CHECK(paired.excludes_zero());
  // The same values unpaired overlap: each mean's interval is wider than the gap.
  CHECK(stat_of({1.0, 2.0, 3.0}).ci95 > 0.1);
  CHECK(paired_difference({{0, 1.0}}, {{1, 1.0}}).n == 0);
}

TEST_CASE("ablation report: differences paired by seed, bold only where the interval excludes 0",
          "[ablation][statistics]") {
  const TempDir box("ablation_statistics");
  AblationSweep sweep;
  sweep.file = "sweep.yaml";
  sweep.out_dir = box.path();
  sweep.seeds = {0, 1, 2};
  // Bits per byte at the training length 64, per seed.
  const auto run = [](const std::string& name, std::uint64_t seed, double bits) {
    VariantResult r;
    r.name = name;
    r.scheme = name;
    r.data_source = "corpus";
    r.seed = seed;
    r.train_length = 64;
    r.steps = 10;
    r.final_val_loss = bits * std::numbers::ln2;
    r.tokens_per_second = r.wall_seconds = 1.0;
    r.extrapolation = {{64, bits * std::numbers::ln2, ""}};
    return r;
  };
  std::vector<VariantResult> runs;
  const std::vector<std::pair<std::string, std::vector<double>>> bits = {
      {"a", {1.0, 2.0, 3.0}},  // best
      {"b",
       {1.1, 2.11, 3.09}},      // +0.1 in every seed: separated though the means' intervals overlap
      {"c", {1.0, 3.0, 2.2}}};  // +0.0667 ± 2.24: not separated
  for (const auto& [name, values] : bits)
    for (std::uint64_t seed = 0; seed < 3; ++seed) runs.push_back(run(name, seed, values[seed]));
  write_ablation_report(sweep, runs);
  const std::string md = slurp(box.path() / "results.md");
  INFO(md);
  REQUIRE(md.find("## Differences paired by seed") != std::string::npos);
  REQUIRE(md.find("### Bits/byte on corpus (trained at 64)") != std::string::npos);
  CHECK(md.find("| a | best |") != std::string::npos);
  CHECK(md.find("| b | **+0.1000 ± 0.0248** |") != std::string::npos);
  CHECK(md.find("| c | +0.0667 ± 2.2403 |") != std::string::npos);
  CHECK(md.find("Exact match on") == std::string::npos);  // text has no answer tokens

  const std::string csv = slurp(box.path() / "differences.csv");
  INFO(csv);
  CHECK(csv.find("metric,data,train_length,length,variant_a,variant_b,n,mean,ci95,low,high,"
                 "excludes_zero\n") == 0);
  CHECK(csv.find("bits_per_byte,corpus,64,64,a,b,3,-0.100000,0.024841,") != std::string::npos);
  CHECK(csv.find("bits_per_byte,corpus,64,64,b,c,3,") != std::string::npos);
  CHECK(csv.find(",true\n") != std::string::npos);
}
