// The ablation runner: a tiny sweep end to end (report files, values checked
// against the runs themselves), skip / resume on rerun, and sweep-file errors.
#include <fmt/format.h>
#include <sys/wait.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <numbers>
#include <sstream>

#include "autograd/error.h"
#include "layers/position/registry.h"
#include "tests/fixture.h"
#include "tests/test_files.h"
#include "tests/tiny_run.h"
#include "train/ablation/report.h"
#include "train/ablation/sweep.h"
#include "train/evaluate.h"
#include "train/store/checkpoint.h"
#include "train/store/checkpoint_folder.h"
#include "train/trainer.h"

using namespace relpos;
namespace fs = std::filesystem;
using testing::slurp;
using testing::TempDir;

namespace {

std::vector<std::string> split(const std::string& text, char separator) {
  std::vector<std::string> out;
  std::stringstream s(text);
  for (std::string item; std::getline(s, item, separator);) out.push_back(item);
  return out;
}

// results.csv as rows of column -> text, in file order.
std::vector<std::map<std::string, std::string>> read_csv(const fs::path& file,
                                                         std::vector<std::string>& header) {
  const std::vector<std::string> lines = split(slurp(file), '\n');
  header = split(lines.at(0), ',');
  std::vector<std::map<std::string, std::string>> rows;
  for (std::size_t i = 1; i < lines.size(); ++i) {
    const std::vector<std::string> cells = split(lines[i], ',');
    REQUIRE(cells.size() == header.size());
    std::map<std::string, std::string> row;
    for (std::size_t c = 0; c < cells.size(); ++c) row[header[c]] = cells[c];
    rows.push_back(row);
  }
  return rows;
}

double logged_val_loss(const fs::path& run_dir) {
  double last = std::nan("");
  for (const std::string& line : split(slurp(run_dir / "metrics.jsonl"), '\n')) {
    const nlohmann::json j = nlohmann::json::parse(line);
    if (j.contains("val_loss")) last = j["val_loss"].get<double>();
  }
  return last;
}

std::map<fs::path, fs::file_time_type> modification_times(const fs::path& dir) {
  std::map<fs::path, fs::file_time_type> times;
  for (const auto& entry : fs::recursive_directory_iterator(dir))
    if (entry.is_regular_file() &&
        (entry.path().extension() == ".h5" || entry.path().filename() == "ablation.json"))
      times[entry.path()] = fs::last_write_time(entry.path());
  return times;
}

const std::string kTinyConfig =
    testing::tiny_run_yaml({"data.batch_size=4", "train.keep_checkpoints=0", "train.threads=2"});

// Three variants; `learned` cannot run at length 32 (max_len 16).
std::string tiny_sweep(const fs::path& out, const std::string& steps = "4",
                       const std::string& lengths = "[32]") {
  return fmt::format(
      "base: [tiny.yaml]\n"
      "overrides: [train.steps={}]\n"
      "out_dir: {}\n"
      "eval_lengths: {}\n"
      "eval_batches: 1\n"
      "variants:\n"
      "  - name: none\n"
      "    overrides: [model.position.scheme=none]\n"
      "  - name: t5\n"
      "    files: [t5.yaml]\n"
      "  - name: learned\n"
      "    overrides: [model.position.scheme=learned, model.position.max_len=16]\n",
      steps, out.string(), lengths);
}

AblationSweep write_tiny_sweep(const TempDir& box, const std::string& steps = "4",
                               const std::string& lengths = "[32]") {
  box.write("tiny.yaml", kTinyConfig);
  box.write("t5.yaml", "model: {position: {scheme: t5, num_buckets: 8, max_distance: 16}}\n");
  return load_sweep(box.write("sweep.yaml", tiny_sweep(box.path() / "out", steps, lengths)));
}

}  // namespace

TEST_CASE("ablation: a tiny sweep trains every variant and reports checked values", "[ablation]") {
  TempDir box("ablation_sweep");
  const AblationSweep sweep = write_tiny_sweep(box);
  const fs::path out = box.path() / "out";
  std::ostringstream log;
  const std::vector<VariantResult> results = run_sweep(sweep, log);
  for (const std::string name : {"none", "t5", "learned"}) {
    INFO(log.str());
    REQUIRE(log.str().find("train " + name + " in") != std::string::npos);
    REQUIRE(fs::exists(out / name / "summary.json"));
    REQUIRE(fs::exists(out / name / "ablation.json"));
  }

  std::vector<std::string> header;
  const auto rows = read_csv(out / "results.csv", header);
  // Each metric as mean, sample std, n and the 95% half-width over the seeds (here one).
  const auto stat = [](const std::string& name) {
    return std::vector<std::string>{name, name + "_std", name + "_n", name + "_ci95"};
  };
  std::vector<std::string> expected = {"variant", "scheme", "data",  "train_length",
                                       "steps",   "params", "seeds", "runs"};
  for (const std::string name :
       {"final_val_loss", "", "loss_at_16", "loss_at_32", "accuracy_at_16", "accuracy_at_32",
        "exact_match_at_16", "exact_match_at_32", "", "tokens_per_s", "", "wall_s"}) {
    if (expected.size() == 12) expected.push_back("final_val_bpb");
    if (name.empty()) continue;
    for (const std::string& column : stat(name)) expected.push_back(column);
    if (name == "exact_match_at_32")
      expected.insert(expected.end(), {"turning_point", "turning_point_last_evaluated"});
    if (name == "tokens_per_s")
      expected.insert(expected.end(), {"peak_rss_mib", "peak_tensor_mib"});
  }
  REQUIRE(header == expected);
  REQUIRE(rows.size() == 3);
  REQUIRE(rows[0].at("variant") == "none");
  REQUIRE(rows[1].at("variant") == "t5");
  REQUIRE(rows[2].at("variant") == "learned");
  REQUIRE(rows[1].at("scheme") == "t5");
  REQUIRE(rows[1].at("data") == "corpus");
  for (const auto& row : rows) {
    const std::string name = row.at("variant");
    INFO("variant " << name);
    REQUIRE(row.at("seeds") == "0");
    REQUIRE(row.at("runs") == name);
    REQUIRE(row.at("final_val_loss_n") == "1");
    REQUIRE(row.at("final_val_loss_std") == "nan");  // one run: no deviation
    if (name == "learned") {  // n/a at 32: its turning point is the training length
      REQUIRE(row.at("turning_point") == "16");
      REQUIRE(row.at("turning_point_last_evaluated") == "false");
    }
    for (std::size_t c = 3; c < header.size(); ++c) {
      if (header[c] == "runs" || header[c] == "turning_point_last_evaluated") continue;
      INFO("column " << header[c] << " = '" << row.at(header[c]) << "'");
      REQUIRE_NOTHROW(std::stod(row.at(header[c])));
    }
    REQUIRE(std::stoll(row.at("train_length")) == 16);
    REQUIRE(std::stoll(row.at("steps")) == 4);
    // The final validation loss is the trainer's last logged one, and bits/byte = nats / ln 2.
    const double final_loss = std::stod(row.at("final_val_loss"));
    REQUIRE(final_loss == Approx(logged_val_loss(out / name)).epsilon(1e-5));
    REQUIRE(std::stod(row.at("final_val_bpb")) ==
            Approx(final_loss / std::numbers::ln2).epsilon(1e-5));
    REQUIRE(std::stod(row.at("tokens_per_s")) > 0.0);
    REQUIRE(std::stod(row.at("peak_rss_mib")) > 1.0);
    REQUIRE(std::stod(row.at("wall_s")) > 0.0);
    // Recomputed here from the final checkpoint: parameters and the loss at each length.
    RunState final_model = load_run_for_inference(checkpoint_path(out / name / "checkpoints", 4));
    REQUIRE(std::stoll(row.at("params")) == final_model.model->parameter_count());
    const double at16 =
        evaluate(*final_model.model, *final_model.data, {16}, EvalAmount{.batches = 1})[0].loss;
    REQUIRE(std::stod(row.at("loss_at_16")) == Approx(at16).epsilon(1e-5));
    // Training-time evaluation used the same batch (eval_batches 1 both).
    REQUIRE(std::stod(row.at("loss_at_16")) == Approx(final_loss).epsilon(1e-5));
    const double at32 = std::stod(row.at("loss_at_32"));
    if (name == "learned") {
      REQUIRE(std::isnan(at32));
    } else {
      REQUIRE(at32 == Approx(evaluate(*final_model.model, *final_model.data, {32},
                                      EvalAmount{.batches = 1})[0]
                                 .loss)
                          .epsilon(1e-5));
    }
  }

  const std::string md = slurp(out / "results.md");
  for (const std::string name : {"| none |", "| t5 |", "| learned |"}) {
    INFO(name);
    REQUIRE(md.find(name) != std::string::npos);
  }
  REQUIRE(md.find("loss @32") != std::string::npos);
  REQUIRE(md.find("learned @32: learned positions") != std::string::npos);
  REQUIRE(md.find("max_len=16") != std::string::npos);
  REQUIRE(md.find("## Relative to none") != std::string::npos);
  const double ratio = results[1].final_val_loss / results[0].final_val_loss;
  const double step_time = results[0].tokens_per_second / results[1].tokens_per_second;
  INFO(md);
  REQUIRE(md.find(fmt::format("| t5 | none | {:.2f} | {:.3f} |", step_time, ratio)) !=
          std::string::npos);
  REQUIRE(md.find("| none | none | 1.00 | 1.000 | 1.000 | 1.000 |") != std::string::npos);
}

TEST_CASE("ablation: a rerun skips finished variants and resumes interrupted ones", "[ablation]") {
  TempDir box("ablation_rerun");
  const AblationSweep sweep = write_tiny_sweep(box);
  const fs::path out = box.path() / "out";
  std::ostringstream first;
  run_sweep(sweep, first);
  const std::string csv = slurp(out / "results.csv");

  // Everything finished: nothing is trained or re-evaluated, the report is rewritten.
  const auto times = modification_times(out);
  REQUIRE(times.size() == 3 * 2 + 3);  // checkpoints at steps 2 and 4, and ablation.json, each
  fs::remove(out / "results.md");
  std::ostringstream second;
  run_sweep(sweep, second);
  INFO(second.str());
  for (const std::string name : {"none", "t5", "learned"})
    REQUIRE(second.str().find("skip " + name + ": finished") != std::string::npos);
  REQUIRE(second.str().find("train ") == std::string::npos);
  REQUIRE(modification_times(out) == times);
  REQUIRE(fs::exists(out / "results.md"));
  REQUIRE(slurp(out / "results.csv") == csv);

  // Interrupted after its step-2 checkpoint: t5 resumes there and ends bit-identical.
  const fs::path t5 = out / "t5";
  const Checkpoint before = load_checkpoint(checkpoint_path(t5 / "checkpoints", 4));
  fs::remove(t5 / "summary.json");
  fs::remove(checkpoint_path(t5 / "checkpoints", 4));
  std::ostringstream third;
  const auto resumed = run_sweep(sweep, third);
  INFO(third.str());
  REQUIRE(third.str().find("resume t5 from step 2") != std::string::npos);
  REQUIRE(third.str().find("skip none: finished") != std::string::npos);
  REQUIRE(third.str().find("skip learned: finished") != std::string::npos);
  REQUIRE(fs::exists(t5 / "summary.json"));
  const Checkpoint after = load_checkpoint(checkpoint_path(t5 / "checkpoints", 4));
  for (const auto& [name, tensor] : before.params) {
    INFO(name);
    REQUIRE(after.params.at(name).to_vector() == tensor.to_vector());
  }
  REQUIRE(resumed[1].final_val_loss == Approx(logged_val_loss(t5)).epsilon(1e-12));
  std::vector<std::string> header;
  const auto rows = read_csv(out / "results.csv", header);
  const auto old_rows = [&] {
    std::vector<std::string> h;
    box.write("old.csv", csv);
    return read_csv(box.path() / "old.csv", h);
  }();
  REQUIRE(rows[1].at("final_val_loss") == old_rows[1].at("final_val_loss"));
  REQUIRE(rows[1].at("loss_at_32") == old_rows[1].at("loss_at_32"));
  REQUIRE(slurp(out / "results.md").find("t5: resumed at step 2") != std::string::npos);

  // Only summary.json lost (killed just before writing it): finished from the final
  // checkpoint, with its speed marked as not measured.
  fs::remove(t5 / "summary.json");
  std::ostringstream fourth;
  const auto finished = run_sweep(sweep, fourth);
  REQUIRE(fourth.str().find("resume t5 from step 4") != std::string::npos);
  REQUIRE(std::isnan(finished[1].tokens_per_second));
  REQUIRE(finished[1].final_val_loss == resumed[1].final_val_loss);
  REQUIRE(slurp(out / "results.md").find("t5: finished from its final checkpoint") !=
          std::string::npos);

  // New evaluation lengths: re-evaluated from the checkpoints, nothing retrained.
  const auto checkpoints_before = modification_times(out);
  const AblationSweep longer = write_tiny_sweep(box, "4", "[32, 64]");
  std::ostringstream fifth;
  run_sweep(longer, fifth);
  REQUIRE(fifth.str().find("train ") == std::string::npos);
  REQUIRE(read_csv(out / "results.csv", header)[0].count("loss_at_64") == 1);
  for (const auto& [path, time] : checkpoints_before)
    if (path.extension() == ".h5") REQUIRE(fs::last_write_time(path) == time);

  // A changed config does not silently reuse the old runs.
  const AblationSweep changed = write_tiny_sweep(box, "5");
  REQUIRE_THROWS_WITH(resolve_variant_configs(changed),
                      Catch::Contains("sweep.yaml:7") && Catch::Contains("variant 'none'") &&
                          Catch::Contains("train.steps=4") && Catch::Contains("now gives 5"));
}

TEST_CASE("ablation: sweep-file errors name the file, line and key", "[ablation]") {
  TempDir box("ablation_errors");
  box.write("tiny.yaml", kTinyConfig);
  const auto error_of = [&](const std::string& text) -> std::string {
    const fs::path file = box.write("bad.yaml", text);
    try {
      run_sweep(load_sweep(file), std::cout);
    } catch (const UsageError& e) {
      return e.what();
    }
    return "no error";
  };
  const std::string out = "out_dir: " + (box.path() / "out").string() + "\n";
  const std::string one = "variants:\n  - name: a\n";

  CHECK_THAT(error_of("base: [tiny.yaml]\n" + out + "variant:\n  - name: a\n"),
             Catch::Contains("bad.yaml:3: unknown key 'variant'") && Catch::Contains("variants"));
  CHECK_THAT(error_of("base: [tiny.yaml]\n" + out + "variants:\n  - name: a\n    overides: []\n"),
             Catch::Contains("bad.yaml:5: unknown key 'overides' in a variant"));
  CHECK_THAT(error_of("base: [tiny.yaml]\n" + one),
             Catch::Contains("bad.yaml:1: missing key 'out_dir'"));
  CHECK_THAT(error_of("base: [tiny.yaml]\n" + out), Catch::Contains("missing key 'variants'"));
  CHECK_THAT(error_of(out + "variants:\n  - files: [tiny.yaml]\n"),
             Catch::Contains("bad.yaml:3: missing key 'name' in a variant"));
  CHECK_THAT(error_of(out + "variants:\n  - name: a/b\n"),
             Catch::Contains("bad.yaml:3: variants: name 'a/b' is invalid"));
  CHECK_THAT(error_of(out + "variants:\n  - name: ..\n"), Catch::Contains("name '..' is invalid"));
  CHECK_THAT(error_of(out + "variants:\n  - name: a\n  - name: a\n"),
             Catch::Contains("bad.yaml:4: variants: duplicate name 'a' (first at ") &&
                 Catch::Contains("bad.yaml:3)"));
  CHECK_THAT(error_of("base: [missing.yaml]\n" + out + one),
             Catch::Contains("bad.yaml:1: base: config file 'missing.yaml' not found"));
  CHECK_THAT(error_of(out + "variants:\n  - name: a\n    files: [nope.yaml]\n"),
             Catch::Contains("bad.yaml:4: variant 'a': files: config file 'nope.yaml' not found"));
  CHECK_THAT(error_of(out + "eval_lengths: [64, 1]\n" + one),
             Catch::Contains("bad.yaml:2: eval_lengths: expected an integer >= 2, got 1"));
  CHECK_THAT(error_of(out + "eval_batches: many\n" + one),
             Catch::Contains("eval_batches: expected an integer >= 1 or all, got 'many'"));
  CHECK_THAT(error_of(out + "variants:\n  - name: a\n    overrides: model.d_model=8\n"),
             Catch::Contains("overrides: expected a list of strings"));
  CHECK_THAT(error_of("base: [tiny.yaml\n"),
             Catch::Contains("bad.yaml:") && Catch::Contains("invalid YAML"));
  CHECK_THAT(error_of(""), Catch::Contains("expected a mapping"));
  REQUIRE_THROWS_WITH(load_sweep(box.path() / "absent.yaml"),
                      Catch::Contains("absent.yaml") && Catch::Contains("cannot open"));

  // An invalid override in the last variant fails before any variant trains.
  CHECK_THAT(
      error_of("base: [tiny.yaml]\n" + out +
               "variants:\n  - name: good\n  - name: bad\n    overrides: [model.d_modle=8]\n"),
      Catch::Contains("bad.yaml:5: variant 'bad'") &&
          Catch::Contains("unknown key 'model.d_modle'"));
  CHECK_THAT(
      error_of("base: [tiny.yaml]\n" + out +
               "variants:\n  - name: good\n  - name: odd\n    overrides: [model.d_model=15]\n"),
      Catch::Contains("variant 'odd'") && Catch::Contains("divisible"));
  REQUIRE_FALSE(fs::exists(box.path() / "out"));
}

TEST_CASE("ablation: the CLI checks a sweep with --dry-run and reports errors in one line",
          "[ablation][cli]") {
  TempDir box("ablation_cli");
  const AblationSweep sweep = write_tiny_sweep(box);
  const auto run = [&](const std::string& args, std::string& out, std::string& err) {
    const std::string cmd = std::string(RELPOS_CLI) + " ablate " + args + " > " +
                            (box.path() / "stdout").string() + " 2> " +
                            (box.path() / "stderr").string();
    const int status = std::system(cmd.c_str());
    out = slurp(box.path() / "stdout");
    err = slurp(box.path() / "stderr");
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  };
  std::string out, err;
  REQUIRE(run("--dry-run " + (box.path() / "sweep.yaml").string(), out, err) == 0);
  REQUIRE(out.find("3 variants are valid (3 runs)") != std::string::npos);
  REQUIRE_FALSE(fs::exists(box.path() / "out"));
  box.write("bad.yaml", "out_dir: x\nvariants: []\n");
  REQUIRE(run((box.path() / "bad.yaml").string(), out, err) == 2);
  REQUIRE(err.rfind("relpos: error: ", 0) == 0);
  REQUIRE(err.find("bad.yaml:2: variants: expected a non-empty list") != std::string::npos);
  REQUIRE(std::count(err.begin(), err.end(), '\n') == 1);
}

TEST_CASE("ablation: a missing data file in the last variant fails before any variant trains",
          "[ablation][bounds]") {
  TempDir box("ablation_data");
  write_tiny_sweep(box);
  const fs::path missing = box.path() / "no_such_corpus.txt";
  const std::string text =
      tiny_sweep(box.path() / "out") +
      fmt::format("  - name: typo\n    overrides: [data.source={}]\n", missing.string());
  const fs::path file = box.write("sweep.yaml", text);
  const std::string expected = file.string() + ":13: variant 'typo': ";
  std::ostringstream log;
  REQUIRE_THROWS_WITH(run_sweep(load_sweep(file), log),
                      Catch::StartsWith(expected) && Catch::Contains(missing.string()));
  REQUIRE_FALSE(fs::exists(box.path() / "out" / "none"));

  // --dry-run opens every variant's data too, and checks every memory estimate.
  const auto dry_run = [&](const std::string& env, const fs::path& sweep_file) {
    const std::string cmd = env + " " + std::string(RELPOS_CLI) + " ablate --dry-run " +
                            sweep_file.string() + " > " + (box.path() / "stdout").string() +
                            " 2> " + (box.path() / "stderr").string();
    const int status = std::system(cmd.c_str());
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  };
  REQUIRE(dry_run("", file) == 2);
  const std::string err = slurp(box.path() / "stderr");
  INFO(err);
  REQUIRE(err.rfind("relpos: error: " + expected, 0) == 0);
  REQUIRE(err.find(missing.string()) != std::string::npos);
  REQUIRE(std::count(err.begin(), err.end(), '\n') == 1);

  const fs::path good = box.write("good.yaml", tiny_sweep(box.path() / "out"));
  REQUIRE(dry_run("", good) == 0);
  REQUIRE(slurp(box.path() / "stdout").find("GiB)") != std::string::npos);
  REQUIRE(dry_run("RELPOS_MEMORY_LIMIT=1000", good) == 2);
  const std::string memory = slurp(box.path() / "stderr");
  REQUIRE(memory.rfind("relpos: error: " + good.string() + ":7: variant 'none': ", 0) == 0);
  REQUIRE(memory.find("would not fit in memory") != std::string::npos);
  REQUIRE_FALSE(fs::exists(box.path() / "out"));
}

TEST_CASE("ablation: configs/ablate_positions.yaml compares every scheme on text and two tasks",
          "[ablation]") {
  const AblationSweep sweep =
      load_sweep(testing::source_dir() / "configs" / "ablate_positions.yaml");
  const std::vector<RunConfig> configs = resolve_variant_configs(sweep);
  const std::vector<std::string> schemes = position_scheme_names();  // every registered scheme
  const std::vector<std::string> data = {"corpus", "offset_lookup", "copy"};
  // Then randomized positions (Ruoss et al. 2023) on copy for these schemes.
  const std::vector<std::string> randomized = {"sinusoidal", "learned", "rope"};
  const std::size_t grid = data.size() * schemes.size();
  REQUIRE(sweep.seeds == std::vector<std::uint64_t>{0, 1, 2});
  REQUIRE(sweep.jobs == 2);
  REQUIRE(sweep.variants.size() == grid + randomized.size());
  REQUIRE(configs.size() == 3 * sweep.variants.size());
  for (std::size_t i = 0; i < configs.size(); ++i) {
    const RunConfig& c = configs[i];
    const std::size_t v = i / 3;
    const bool is_randomized = v >= grid;
    const std::string& scheme = is_randomized ? randomized[v - grid] : schemes[v % schemes.size()];
    const std::string& source = is_randomized ? data[2] : data[v / schemes.size()];
    INFO(sweep.run_label(i));
    REQUIRE(c.model.position.scheme == scheme);
    REQUIRE(c.data.source == source);
    const std::string name = is_randomized        ? scheme + "-randomized-copy"
                             : source == "corpus" ? scheme
                                                  : scheme + "-" + source;
    REQUIRE(sweep.variants[v].name == name);
    REQUIRE(c.model.position.get<std::int64_t>("randomized_max_len") == (is_randomized ? 1024 : 0));
    // copy trains on 1-20 items; the longer lengths see longer strings.
    REQUIRE(c.data.task.max_items == (source == "copy" ? 20 : 0));
    REQUIRE(c.train.seed == i % 3);
    REQUIRE(c.train.threads == 1);
    REQUIRE(c.train.out_dir ==
            (sweep.out_dir / sweep.variants[v].name / fmt::format("seed-{}", i % 3)).string());
    // Extrapolation to 2x, 4x, 8x and 16x the training length.
    REQUIRE(sweep.eval_lengths == std::vector<std::int64_t>{2 * c.data.seq_len, 4 * c.data.seq_len,
                                                            8 * c.data.seq_len,
                                                            16 * c.data.seq_len});
  }
}

TEST_CASE("ablation: configs/ablate_rope_extension.yaml trains RoPE at 64, plain and dynamic NTK",
          "[ablation][rope_scaling]") {
  const AblationSweep sweep =
      load_sweep(testing::source_dir() / "configs" / "ablate_rope_extension.yaml");
  const std::vector<RunConfig> configs = resolve_variant_configs(sweep);
  REQUIRE(sweep.variants.size() == 2);
  REQUIRE(configs.size() == 6);
  for (std::size_t i = 0; i < configs.size(); ++i) {
    const PositionConfig& p = configs[i].model.position;
    INFO(sweep.run_label(i));
    REQUIRE(p.scheme == "rope");
    REQUIRE(configs[i].data.seq_len == 64);
    REQUIRE(p.get<std::string>("rope_scaling.kind") == (i < 3 ? "none" : "dynamic_ntk"));
    if (i >= 3) REQUIRE(p.get<std::int64_t>("rope_scaling.original_len") == 64);
  }
  REQUIRE(sweep.eval_lengths == std::vector<std::int64_t>{128, 256, 512, 1024});
}
