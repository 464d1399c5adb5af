// Memory lengths in a sweep (eval_mem_lengths, eval_knn_sizes): every run is also scored
// on validation streams with each memory, and results.md, results.csv and
// differences.csv carry it, paired by seed; the keys' errors.
#include <fmt/format.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <numbers>
#include <sstream>

#include "autograd/error.h"
#include "data/data_source.h"
#include "tests/test_files.h"
#include "tests/tiny_run.h"
#include "train/ablation/report.h"
#include "train/ablation/sweep.h"
#include "train/copy_check.h"
#include "train/evaluate_stream.h"
#include "train/trainer.h"

using namespace relpos;
namespace fs = std::filesystem;
using testing::slurp;
using testing::TempDir;

namespace {

AblationSweep memory_sweep(const TempDir& box, const std::string& memory) {
  box.write("tiny.yaml", testing::tiny_run_yaml({"data.batch_size=4", "train.keep_checkpoints=0"}));
  return load_sweep(
      box.write("sweep.yaml", fmt::format("base: [tiny.yaml]\n"
                                          "out_dir: {}\n"
                                          "eval_batches: 3\n"
                                          "{}"
                                          "seeds: [0, 1]\n"
                                          "variants:\n"
                                          "  - name: none\n"
                                          "    overrides: [model.position.scheme=none]\n"
                                          "  - name: alibi\n"
                                          "    overrides: [model.position.scheme=alibi]\n",
                                          (box.path() / "out").string(), memory)));
}

// The loss of a run's final model on 4 validation streams of 3 segments of 16 with `mem_len`,
// computed here from the checkpoint.
double stream_loss(const fs::path& run_dir, std::int64_t mem_len) {
  RunState run = load_run_for_inference(resolve_checkpoint(run_dir));
  const auto& corpus = dynamic_cast<const CorpusSource&>(*run.data);
  return evaluate_streams(*run.model, corpus.corpus().validation, {16}, {mem_len}, 4, 3)[0].loss;
}

std::string csv_cell(const std::string& csv, const std::string& variant,
                     const std::string& column) {
  std::istringstream lines(csv);
  std::string header, line;
  std::getline(lines, header);
  std::vector<std::string> names;
  std::istringstream h(header);
  for (std::string n; std::getline(h, n, ',');) names.push_back(n);
  while (std::getline(lines, line)) {
    std::vector<std::string> cells;
    std::istringstream c(line);
    for (std::string v; std::getline(c, v, ',');) cells.push_back(v);
    if (cells.at(0) != variant) continue;
    for (std::size_t i = 0; i < names.size(); ++i)
      if (names[i] == column) return cells.at(i);
  }
  return "absent";
}

}  // namespace

TEST_CASE("ablation memory: every run is scored with each memory length, paired by seed",
          "[ablation][memory]") {
  TempDir box("ablation_memory");
  std::ostringstream log;
  const std::vector<VariantResult> runs =
      run_sweep(memory_sweep(box, "eval_mem_lengths: [16, 0]\n"), log);
  INFO(log.str());
  REQUIRE(runs.size() == 4);
  const fs::path out = box.path() / "out";
  for (const VariantResult& r : runs) {
    REQUIRE(r.memory.size() == 2);
    REQUIRE(r.memory[0].mem_len == 0);  // sorted
    REQUIRE(r.memory[1].mem_len == 16);
    const fs::path dir = out / fmt::format("{}/seed-{}", r.name, r.seed);
    CHECK(r.memory[0].loss == Approx(stream_loss(dir, 0)).epsilon(1e-12));
    CHECK(r.memory[1].loss == Approx(stream_loss(dir, 16)).epsilon(1e-12));
    CHECK(r.memory[1].loss != r.memory[0].loss);  // the memory is really used
  }
  // results.csv: the mean over the seeds of each memory point.
  const std::string csv = slurp(out / "results.csv");
  const double mean = (runs[2].memory[1].loss + runs[3].memory[1].loss) / 2;
  CHECK(std::stod(csv_cell(csv, "alibi", "loss_mem_16")) == Approx(mean).margin(1e-6));
  CHECK(csv_cell(csv, "alibi", "loss_mem_16_n") == "2");
  CHECK(csv_cell(csv, "none", "loss_mem_0_n") == "2");
  // results.md: the memory table.
  const std::string md = slurp(out / "results.md");
  INFO(md);
  CHECK(md.find("## With memory") != std::string::npos);
  CHECK(md.find("| variant | train L | mem 0 | mem 16 |") != std::string::npos);
  CHECK(md.find("### Bits/byte with memory on corpus (trained at 16)") != std::string::npos);
  // differences.csv: alibi − none at mem 16, paired by seed, in bits per byte.
  const std::string differences = slurp(out / "differences.csv");
  const double d0 = (runs[0].memory[1].loss - runs[2].memory[1].loss) / std::numbers::ln2;
  const double d1 = (runs[1].memory[1].loss - runs[3].memory[1].loss) / std::numbers::ln2;
  const Stat paired = stat_of({d0, d1});
  CHECK(differences.find(fmt::format("bits_per_byte_mem_16,corpus,16,16,none,alibi,2,{:.6f},{:.6f}",
                                     paired.mean, paired.ci95)) != std::string::npos);

  // A rerun with another memory list re-evaluates the finished runs, without training.
  std::ostringstream rerun;
  const std::vector<VariantResult> again =
      run_sweep(memory_sweep(box, "eval_mem_lengths: [0, 16, 32]\n"), rerun);
  CHECK(rerun.str().find("train ") == std::string::npos);
  CHECK(rerun.str().find("loss with memory mem_32 at 16") != std::string::npos);
  REQUIRE(again[3].memory.size() == 3);
  CHECK(again[3].memory[1].loss == runs[3].memory[1].loss);
}

TEST_CASE("ablation memory: a kNN model is scored one memory at a time",
          "[ablation][memory][knn]") {
  TempDir box("ablation_memory_knn");
  box.write("tiny.yaml", testing::tiny_run_yaml({"data.batch_size=4", "train.keep_checkpoints=0",
                                                 "model.position.scheme=t5"}));
  std::ostringstream log;
  const std::vector<VariantResult> runs = run_sweep(
      load_sweep(box.write(
          "sweep.yaml",
          fmt::format("base: [tiny.yaml]\nout_dir: {}\neval_batches: 3\n"
                      "eval_mem_lengths: [0, 16]\neval_knn_sizes: [8, 0]\n"
                      "variants:\n  - name: knn\n    overrides: [model.knn_memory.layer=0, "
                      "model.knn_memory.size=40, model.knn_memory.top_k=4]\n  - name: plain\n",
                      (box.path() / "out").string()))),
      log);
  INFO(log.str());
  const auto points = [](const VariantResult& r) {
    std::vector<std::pair<std::int64_t, std::int64_t>> out;
    for (const MemoryLoss& p : r.memory) out.emplace_back(p.mem_len, p.knn_size);
    return out;
  };
  // The segment memory with the trained kNN size 40, the kNN sizes without segment memory.
  using Points = std::vector<std::pair<std::int64_t, std::int64_t>>;
  CHECK(points(runs[0]) == Points{{0, 0}, {0, 8}, {0, 40}, {16, 40}});
  CHECK(points(runs[1]) == Points{{0, 0}, {16, 0}});  // no kNN layer: size 0
  RunState run = load_run_for_inference(resolve_checkpoint(box.path() / "out/knn"));
  const auto& corpus = dynamic_cast<const CorpusSource&>(*run.data);
  const auto expected =
      evaluate_streams(*run.model, corpus.corpus().validation, {16}, {0}, 4, 3, {8})[0].loss;
  CHECK(runs[0].memory[1].loss == Approx(expected).epsilon(1e-12));
  CHECK(runs[0].memory[1].loss != runs[0].memory[0].loss);  // the kNN memory is used
  const std::string csv = slurp(box.path() / "out/results.csv");
  CHECK(std::stod(csv_cell(csv, "knn", "loss_mem_16_knn_40")) ==
        Approx(runs[0].memory[3].loss).margin(1e-6));
  CHECK(csv_cell(csv, "plain", "loss_mem_16_knn_40").empty());
  CHECK(std::stod(csv_cell(csv, "plain", "loss_mem_16")) ==
        Approx(runs[1].memory[1].loss).margin(1e-6));
}

TEST_CASE("ablation memory: the copy check in one window, NaN with a note where it cannot run",
          "[ablation][memory][copy_check]") {
  TempDir box("ablation_copy");
  box.write("tiny.yaml", testing::tiny_run_yaml({"data.batch_size=4", "train.keep_checkpoints=0"}));
  std::ostringstream log;
  const std::vector<VariantResult> runs = run_sweep(
      load_sweep(box.write(
          "sweep.yaml",
          fmt::format("base: [tiny.yaml]\nout_dir: {}\neval_batches: 1\n"
                      "eval_copy: {{span: 4, distances: [20, 4], sequences: 6}}\n"
                      "variants:\n  - name: alibi\n    overrides: [model.position.scheme=alibi]\n"
                      "  - name: learned\n    overrides: [model.position.scheme=learned, "
                      "model.position.max_len=16]\n",
                      (box.path() / "out").string()))),
      log);
  INFO(log.str());
  REQUIRE(runs[0].copy.size() == 2);
  CHECK(runs[0].copy[0].distance == 4);
  CHECK_FALSE(runs[0].copy[1].segments);
  RunState run = load_run_for_inference(resolve_checkpoint(box.path() / "out/alibi"));
  const auto& corpus = dynamic_cast<const CorpusSource&>(*run.data);
  const CopyCheckPoint expected =
      copy_check(*run.model, corpus.corpus().validation, 4, {20}, 6, 4, kCopyCheckSeed)[0];
  CHECK(runs[0].copy[1].loss_repeat == Approx(expected.loss_repeat).epsilon(1e-12));
  CHECK(runs[0].copy[1].gain() == Approx(expected.gain()).epsilon(1e-12));
  // learned positions end at 16: the window of 20 + 4 − 1 tokens cannot run.
  CHECK(std::isnan(runs[1].copy[1].gain()));
  CHECK_FALSE(runs[1].copy[1].note.empty());
  CHECK(std::isfinite(runs[1].copy[0].gain()));
  const std::string csv = slurp(box.path() / "out/results.csv");
  CHECK(std::stod(csv_cell(csv, "alibi", "copy_gain_20")) == Approx(expected.gain()).margin(1e-6));
  CHECK(csv_cell(csv, "learned", "copy_gain_20") == "nan");
  const std::string md = slurp(box.path() / "out/results.md");
  CHECK(md.find("## In-context copy check") != std::string::npos);
  CHECK(md.find("- learned copy_gain_20: ") != std::string::npos);
}

TEST_CASE("ablation memory: the keys' errors name the file, line and variant",
          "[ablation][memory]") {
  TempDir box("ablation_memory_errors");
  const auto error_of = [&](const std::string& memory, const std::string& variant) {
    box.write("tiny.yaml", testing::tiny_run_yaml());
    try {
      const AblationSweep sweep = load_sweep(box.write(
          "bad.yaml", "base: [tiny.yaml]\nout_dir: out\n" + memory + "variants:\n" + variant));
      check_variants(sweep, resolve_variant_configs(sweep), false);
    } catch (const UsageError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  const std::string alibi = "  - name: a\n    overrides: [model.position.scheme=alibi]\n";
  CHECK(error_of("eval_mem_lengths: [0, 64]\n", alibi) == "no error");
  CHECK_THAT(error_of("eval_mem_lengths: [0, -1]\n", alibi),
             Catch::Contains("bad.yaml:3: eval_mem_lengths: expected an integer >= 0, got -1"));
  CHECK_THAT(error_of("eval_mem_lengths: 64\n", alibi),
             Catch::Contains("bad.yaml:3: eval_mem_lengths: expected a list of integers"));
  CHECK_THAT(
      error_of("eval_mem_lengths: [64]\n",
               alibi + "  - name: learned\n    overrides: [model.position.scheme=learned]\n"),
      Catch::Contains("bad.yaml:7: variant 'learned': eval_mem_lengths cannot apply to it") &&
          Catch::Contains("absolute 'learned'"));
  CHECK_THAT(
      error_of("eval_mem_lengths: [0]\n", "  - name: copy\n    overrides: [data.source=copy]\n"),
      Catch::Contains("variant 'copy': eval_mem_lengths cannot apply to it") &&
          Catch::Contains("text corpus"));
  CHECK_THAT(error_of("eval_knn_sizes: [256]\n", alibi),
             Catch::Contains("bad.yaml: eval_knn_sizes: no variant has a kNN layer"));
}
