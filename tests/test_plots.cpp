// Figures: tools/plot.py draws an ablation folder and a positions matrix as PNG
// and SVG, rejects bad input in one line, and relpos ablate / positions --png
// print the command to run later when it cannot run. Tests that need matplotlib
// report "SKIPPED:" (ctest: Skipped) without it.
#include <fmt/format.h>
#include <sys/wait.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <sstream>
#include <string>
#include <tuple>

#include "tests/test_files.h"
#include "tests/tiny_run.h"
#include "train/ablation/statistics.h"

namespace fs = std::filesystem;
using relpos::testing::slurp;
using relpos::testing::TempDir;

namespace {

const std::string kPlotScript = std::string(RELPOS_SOURCE_DIR) + "/tools/plot.py";
const std::string kPlot = "/usr/bin/python3 " + kPlotScript;
// The plotter's environment overrides cleared, so relpos uses its defaults.
const std::string kRelpos = std::string("env -u RELPOS_PYTHON -u RELPOS_PLOT_SCRIPT ") + RELPOS_CLI;

struct Result {
  int exit_code = -1;
  std::string out, err;
};

Result run(const TempDir& box, const std::string& command) {
  const std::string redirected = command + " > " + (box.path() / "stdout").string() + " 2> " +
                                 (box.path() / "stderr").string();
  const int status = std::system(redirected.c_str());
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, slurp(box.path() / "stdout"),
          slurp(box.path() / "stderr")};
}

bool has_python() { return std::system("/usr/bin/python3 -c '' >/dev/null 2>&1") == 0; }
bool has_matplotlib() {
  return std::system("/usr/bin/python3 -c 'import matplotlib' >/dev/null 2>&1") == 0;
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

void require_figure(const fs::path& stem) {
  INFO(stem);
  const std::string png = slurp(stem.string() + ".png"), svg = slurp(stem.string() + ".svg");
  REQUIRE(png.compare(0, 8, "\x89PNG\r\n\x1a\n") == 0);
  REQUIRE(contains(svg, "<svg"));
  REQUIRE(contains(svg, "</svg>"));
}

void require_no_tmp_files(const fs::path& dir) {
  for (const auto& entry : fs::recursive_directory_iterator(dir)) {
    INFO(entry.path());
    REQUIRE(entry.path().extension() != ".tmp");
  }
}

// An ablation folder as relpos ablate leaves it, by hand: two data sets, a variant
// that cannot run at 32 (nan), a metrics.jsonl line cut off by a kill.
void write_ablation_folder(const TempDir& box) {
  box.write("results.csv",
            "variant,scheme,data,train_length,steps,params,final_val_loss,final_val_bpb,"
            "loss_at_16,loss_at_32,tokens_per_s,peak_rss_mib,peak_tensor_mib,wall_s\n"
            "none,none,corpus,16,4,100,2.5,3.6,2.5,2.7,100.0,1.0,1.0,1.0\n"
            "t5,t5,corpus,16,4,100,2.4,3.5,2.4,2.45,100.0,1.0,1.0,1.0\n"
            "learned-copy,learned,copy,16,4,100,0.01,0.01,0.01,nan,100.0,1.0,1.0,1.0\n");
  for (const char* variant : {"none", "t5", "learned-copy"}) {
    fs::create_directory(box.path() / variant);
    box.write(
        std::string(variant) + "/metrics.jsonl",
        "{\"step\":1,\"loss\":3.0}\n{\"step\":2,\"loss\":2.6,\"val_loss\":2.7}\n"
        "{\"step\":3,\"loss\":2.5}\n{\"step\":4,\"loss\":2.4,\"val_loss\":2.5}\n{\"step\":5,\"lo");
  }
}

// A seeded ablation folder: two seeds per variant (runs <variant>/seed-<k>), each metric
// with its _std and _n columns, answer accuracy on the copy task.
void write_seeded_ablation_folder(const TempDir& box) {
  box.write("results.csv",
            "variant,scheme,data,train_length,steps,params,seeds,runs,final_val_loss,"
            "final_val_loss_std,final_val_loss_n,final_val_bpb,loss_at_16,loss_at_16_std,"
            "loss_at_16_n,loss_at_32,loss_at_32_std,loss_at_32_n,accuracy_at_16,"
            "accuracy_at_16_std,accuracy_at_16_n,accuracy_at_32,accuracy_at_32_std,"
            "accuracy_at_32_n,turning_point,turning_point_last_evaluated\n"
            "t5,t5,corpus,16,4,100,0 1,t5/seed-0 t5/seed-1,2.4,0.1,2,3.5,2.4,0.1,2,2.45,0.2,2,"
            "nan,nan,0,nan,nan,0,32,true\n"
            "t5-copy,t5,copy,16,4,100,0 1,t5-copy/seed-0 t5-copy/seed-1,0.5,0.1,2,0.7,0.5,0.1,2,"
            "0.9,0.3,2,0.8,0.05,2,0.6,0.1,2,16,false\n");
  for (const char* run : {"t5/seed-0", "t5/seed-1", "t5-copy/seed-0", "t5-copy/seed-1"}) {
    fs::create_directories(box.path() / run);
    box.write(std::string(run) + "/metrics.jsonl",
              "{\"step\":1,\"loss\":3.0}\n{\"step\":2,\"loss\":2.6,\"val_loss\":2.7}\n");
  }
}

// Two seeds whose losses differ by 0.2 at every step (3.0/3.2, 2.6/2.8): the band of the
// mean is +- 1.27 as the 95% t interval (t_0.975,1 = 12.706), +- 0.14 as one std.
void write_diverging_seeds(const TempDir& box) {
  box.write("results.csv",
            "variant,scheme,data,train_length,seeds,runs,loss_at_16,loss_at_16_ci95\n"
            "t5,t5,corpus,16,0 1,t5/seed-0 t5/seed-1,2.7,1.27\n");
  for (const auto& [run, first, second] :
       {std::tuple{"t5/seed-0", "3.0", "2.6"}, std::tuple{"t5/seed-1", "3.2", "2.8"}}) {
    fs::create_directories(box.path() / run);
    box.write(std::string(run) + "/metrics.jsonl",
              fmt::format("{{\"step\":1,\"loss\":{0},\"val_loss\":{0}}}\n"
                          "{{\"step\":2,\"loss\":{1},\"val_loss\":{1}}}\n",
                          first, second));
  }
}

// A tiny sweep of two variants, a few seconds of training.
fs::path write_tiny_sweep(const TempDir& box) {
  box.write("tiny.yaml", relpos::testing::tiny_run_yaml({"train.steps=2", "train.threads=0"}));
  return box.write("sweep.yaml", "base: [tiny.yaml]\nout_dir: " + (box.path() / "out").string() +
                                     "\neval_lengths: [32]\nvariants:\n"
                                     "  - name: none\n    overrides: [model.position.scheme=none]\n"
                                     "  - name: t5\n    overrides: [model.position.scheme=t5]\n");
}

}  // namespace

TEST_CASE("plot.py draws an ablation folder: one panel per data set, PNG and SVG", "[plot][slow]") {
  if (!has_matplotlib()) {
    WARN("SKIPPED: matplotlib is not installed for /usr/bin/python3 (python3-matplotlib)");
    return;
  }
  TempDir box("plot_ablation");
  write_ablation_folder(box);
  const Result r = run(box, kPlot + " ablation " + box.path().string());
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  for (const char* figure : {"train_loss", "val_loss", "extrapolation"}) {
    require_figure(box.path() / figure);
    REQUIRE(contains(r.err, "wrote " + (box.path() / figure).string() + ".svg"));
    const std::string svg = slurp(box.path() / (std::string(figure) + ".svg"));
    for (const char* text : {"data: corpus", "data: copy", "none", "t5", "learned-copy"}) {
      INFO(figure << ": " << text);
      REQUIRE(contains(svg, text));
    }
  }
  REQUIRE(contains(slurp(box.path() / "extrapolation.svg"), "training length 16"));
  require_no_tmp_files(box.path());
}

TEST_CASE("plot.py draws seed means with bands and answer accuracy on tasks", "[plot][slow]") {
  if (!has_matplotlib()) {
    WARN("SKIPPED: matplotlib is not installed for /usr/bin/python3 (python3-matplotlib)");
    return;
  }
  TempDir plain("plot_unseeded");
  write_ablation_folder(plain);
  REQUIRE(run(plain, kPlot + " ablation " + plain.path().string()).exit_code == 0);
  REQUIRE_FALSE(fs::exists(plain.path() / "accuracy.png"));  // no accuracy columns
  // The bands are the only shapes drawn at 15% opacity.
  const std::string band = "fill-opacity: 0.15";
  REQUIRE_FALSE(contains(slurp(plain.path() / "extrapolation.svg"), band));

  TempDir box("plot_seeded");
  write_seeded_ablation_folder(box);
  const Result r = run(box, kPlot + " ablation " + box.path().string());
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  for (const char* figure : {"train_loss", "val_loss", "extrapolation", "accuracy"}) {
    require_figure(box.path() / figure);
    INFO(figure);
    REQUIRE(contains(slurp(box.path() / (std::string(figure) + ".svg")), band));
  }
  const std::string accuracy = slurp(box.path() / "accuracy.svg");
  REQUIRE(contains(accuracy, "Answer accuracy vs evaluation length"));
  REQUIRE(contains(accuracy, "data: copy"));
  REQUIRE_FALSE(contains(accuracy, "data: corpus"));  // no answer tokens on text
  require_no_tmp_files(box.path());
}

TEST_CASE("relpos positions --png writes the CSV and has plot.py draw the heatmap",
          "[plot][slow]") {
  if (!has_matplotlib()) {
    WARN("SKIPPED: matplotlib is not installed for /usr/bin/python3 (python3-matplotlib)");
    return;
  }
  TempDir box("plot_positions");
  const std::string args = " positions t5 --q-len 8 --k-len 12 --causal";
  const std::string csv = run(box, kRelpos + args + " --csv").out;
  const Result r = run(box, kRelpos + args + " --png " + (box.path() / "t5.png").string());
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  REQUIRE(contains(r.out, "t5 buckets"));  // the grid on stdout, as without --png
  REQUIRE(slurp(box.path() / "t5.csv") == csv);
  require_figure(box.path() / "t5");
  REQUIRE(contains(slurp(box.path() / "t5.svg"), "q_len 8, k_len 12"));
  require_no_tmp_files(box.path());
}

TEST_CASE("relpos ablate has plot.py draw the figures", "[plot][slow]") {
  if (!has_matplotlib()) {
    WARN("SKIPPED: matplotlib is not installed for /usr/bin/python3 (python3-matplotlib)");
    return;
  }
  TempDir box("plot_ablate");
  const Result r = run(box, kRelpos + " ablate " + write_tiny_sweep(box).string());
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  REQUIRE_FALSE(contains(r.out, "figures not drawn"));
  for (const char* figure : {"train_loss", "val_loss", "extrapolation"})
    require_figure(box.path() / "out" / figure);
}

TEST_CASE("plot.py: bad input is one line on stderr and exit code 2", "[plot]") {
  if (!has_python()) {
    WARN("SKIPPED: /usr/bin/python3 is not installed");
    return;
  }
  TempDir box("plot_errors");
  const auto require_error = [&](const std::string& args, const std::string& needle) {
    const Result r = run(box, kPlot + " " + args);
    INFO(args << "\nstderr: " << r.err);
    REQUIRE(r.exit_code == 2);
    REQUIRE(r.err.rfind("plot.py: error: ", 0) == 0);
    REQUIRE(contains(r.err, needle));
    REQUIRE(std::count(r.err.begin(), r.err.end(), '\n') == 1);
  };
  const std::string dir = box.path().string();
  require_error("draw " + dir, "invalid choice: 'draw'");
  require_error("ablation " + dir + "/missing", "missing: not a folder");
  require_error("ablation " + dir, "results.csv: cannot read it");
  write_ablation_folder(box);
  fs::remove(box.path() / "t5" / "metrics.jsonl");
  require_error("ablation " + dir, "t5/metrics.jsonl: cannot read it");
  box.write("results.csv", "variant,scheme,train_length,loss_at_16\nnone,none,16,2.5\n");
  require_error("ablation " + dir, "results.csv: missing column 'data'");
  box.write("results.csv", "variant,scheme,data,train_length,loss_at_16\nnone,none,corpus,16\n");
  require_error("ablation " + dir, "results.csv:2: 4 cells, the header has 5");
  box.write("results.csv", "variant,scheme,data,train_length,loss_at_16\nnone,none,corpus,16,x\n");
  require_error("ablation " + dir, "results.csv:2: loss_at_16: expected a number, got 'x'");
  box.write("grid.csv", "row,k0\n0,1\n");
  require_error("positions " + dir + "/grid.csv " + dir + "/grid.png", "expected a header 'query");
  box.write("grid.csv", "query,k0,k1\n0,1\n");
  require_error("positions " + dir + "/grid.csv " + dir + "/grid.png", "grid.csv:2: 2 cells");
  require_error("positions " + dir + "/grid.csv " + dir + "/grid.pdf", "ending in .png");
  box.write("knn.csv", "model,size,loss\n");
  require_error("knn-memory " + dir + "/knn.csv " + dir + "/knn.png", "'model,memory_size,loss'");
  box.write("knn.csv", "model,memory_size,loss\nknn,-4,2.0\n");
  require_error("knn-memory " + dir + "/knn.csv " + dir + "/knn.png",
                "knn.csv:2: memory_size must be a whole number >= 0, got -4");
  box.write("knn.csv", "model,memory_size,loss\nknn,64,two\n");
  require_error("knn-memory " + dir + "/knn.csv " + dir + "/knn.png",
                "knn.csv:2: loss: expected a number, got 'two'");
  box.write("pos.csv", "length,position,loss\n");
  require_error("position-loss " + dir + "/pos.csv " + dir + "/pos.png",
                "expected the header length,position,loss,tokens");
  box.write("pos.csv", "length,position,loss,tokens\n64,0,x,1\n");
  require_error("position-loss " + dir + "/pos.csv " + dir + "/pos.png",
                "pos.csv:2: expected a number, got 'x'");
  require_no_tmp_files(box.path());
}

TEST_CASE("plot.py draws the loss by position in the window (relpos eval --by-position)",
          "[plot][slow]") {
  if (!has_matplotlib()) {
    WARN("SKIPPED: matplotlib is not installed for /usr/bin/python3 (python3-matplotlib)");
    return;
  }
  TempDir box("plot_positions");
  // Length 8 under --stride 4: positions 0-3 scored once (the first window), 4-7 often.
  std::string csv = "length,position,loss,tokens\n";
  for (int p = 0; p < 8; ++p) csv += fmt::format("8,{},{},{}\n", p, 2.0 - 0.1 * p, p < 4 ? 1 : 500);
  box.write("pos.csv", csv);
  const Result r = run(box, kPlot + " position-loss " + (box.path() / "pos.csv").string() + " " +
                                (box.path() / "pos.png").string() + " --title 'by position'");
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  require_figure(box.path() / "pos");
  const std::string svg = slurp(box.path() / "pos.svg");
  CHECK(contains(svg, "by position"));
  CHECK(contains(svg, "length 8"));
  require_no_tmp_files(box.path());
}

TEST_CASE("plot.py draws loss against the kNN memory size", "[plot][slow]") {
  if (!has_matplotlib()) {
    WARN("SKIPPED: matplotlib is not installed for /usr/bin/python3 (python3-matplotlib)");
    return;
  }
  TempDir box("plot_knn");
  box.write("knn.csv",
            "model,memory_size,loss\ntrained S=256,0,2.1\ntrained S=256,64,2.0\n"
            "trained S=256,256,1.9\nno kNN layer,0,2.05\n");
  const Result r = run(box, kPlot + " knn-memory " + (box.path() / "knn.csv").string() + " " +
                                (box.path() / "knn.png").string() + " --title 'kNN memory'");
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  require_figure(box.path() / "knn");
  const std::string svg = slurp(box.path() / "knn.svg");
  for (const char* text : {"kNN memory", "trained S=256", "no kNN layer: no memory"}) {
    INFO(text);
    REQUIRE(contains(svg, text));
  }
  require_no_tmp_files(box.path());
}

TEST_CASE("plot.py draws the kNN gates' trajectory from metrics.jsonl", "[plot][slow]") {
  if (!has_matplotlib()) {
    WARN("SKIPPED: matplotlib is not installed for /usr/bin/python3 (python3-matplotlib)");
    return;
  }
  TempDir box("plot_knn_gates");
  fs::create_directories(box.path() / "knn");
  fs::create_directories(box.path() / "plain");
  box.write("knn/metrics.jsonl",
            "{\"step\": 10, \"loss\": 2.0, \"knn_gate\": [0.5, 0.49]}\n"
            "{\"step\": 10, \"val_loss\": 2.1}\n"
            "{\"step\": 20, \"loss\": 1.9, \"knn_gate\": [0.52, 0.45]}\n{\"step\": 3");
  box.write("plain/metrics.jsonl", "{\"step\": 10, \"loss\": 2.0}\n");
  const std::string knn = "long=" + (box.path() / "knn").string();
  const Result r = run(box, kPlot + " knn-gates " + (box.path() / "gates.png").string() + " " +
                                knn + " --title 'gates'");
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  require_figure(box.path() / "gates");
  const std::string svg = slurp(box.path() / "gates.svg");
  for (const char* text : {"gates", "long head 0", "long head 1"}) {
    INFO(text);
    REQUIRE(contains(svg, text));
  }
  const Result bad = run(box, kPlot + " knn-gates " + (box.path() / "g.png").string() +
                                  " plain=" + (box.path() / "plain").string());
  CHECK(bad.exit_code == 2);
  CHECK(contains(bad.err, "plain/metrics.jsonl: no knn_gate entries"));
  require_no_tmp_files(box.path());
}

TEST_CASE("without matplotlib, plot.py exits 3 and relpos prints the command to run later",
          "[plot]") {
  if (!has_python()) {
    WARN("SKIPPED: /usr/bin/python3 is not installed");
    return;
  }
  TempDir box("plot_no_matplotlib");
  // A matplotlib package that fails to import stands for a missing one.
  fs::create_directories(box.path() / "fake" / "matplotlib");
  box.write("fake/matplotlib/__init__.py", "raise ImportError('simulated: not installed')\n");
  const std::string no_matplotlib = "PYTHONPATH=" + (box.path() / "fake").string() + " ";
  box.write("grid.csv", "query,k0,k1\n0,0,\n1,1,0\n");
  const std::string plot_args =
      "positions " + (box.path() / "grid.csv").string() + " " + (box.path() / "grid.png").string();
  const Result direct = run(box, no_matplotlib + kPlot + " " + plot_args);
  REQUIRE(direct.exit_code == 3);
  REQUIRE(contains(direct.err, "matplotlib is not installed for /usr/bin/python3"));

  const Result r = run(box, no_matplotlib + kRelpos + " positions shaw --q-len 2 --png " +
                                (box.path() / "shaw.png").string());
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  REQUIRE(contains(r.err, "figures not drawn: matplotlib is not installed"));
  REQUIRE(contains(r.err, "\n  " + kPlot + " positions " + (box.path() / "shaw.csv").string() +
                              " " + (box.path() / "shaw.png").string() + " --title 'shaw index"));
  REQUIRE(fs::exists(box.path() / "shaw.csv"));
  REQUIRE_FALSE(fs::exists(box.path() / "shaw.png"));
}

TEST_CASE("relpos ablate and positions --png without a plotter print the command and exit 0",
          "[plot][cli]") {
  TempDir box("plot_unavailable");
  const fs::path out = box.path() / "out";
  const Result ablate = run(box, "RELPOS_PYTHON=/nonexistent/python3 " + std::string(RELPOS_CLI) +
                                     " ablate " + write_tiny_sweep(box).string());
  INFO(ablate.out << ablate.err);
  REQUIRE(ablate.exit_code == 0);
  REQUIRE(contains(ablate.out, "wrote " + (out / "results.csv").string()));
  REQUIRE(contains(ablate.out,
                   "relpos: figures not drawn: no python at /nonexistent/python3; to "
                   "draw them later, run:\n  /nonexistent/python3 " +
                       kPlotScript + " ablation " + out.string() + "\n"));
  REQUIRE_FALSE(fs::exists(out / "val_loss.png"));

  const Result positions =
      run(box, "RELPOS_PLOT_SCRIPT=/nonexistent/plot.py " + std::string(RELPOS_CLI) +
                   " positions t5 --png " + (box.path() / "t5.png").string());
  INFO(positions.err);
  REQUIRE(positions.exit_code == 0);
  REQUIRE(contains(positions.err, "figures not drawn: no plot script at /nonexistent/plot.py"));
  REQUIRE(contains(positions.err, "\n  /usr/bin/python3 /nonexistent/plot.py positions " +
                                      (box.path() / "t5.csv").string() + " " +
                                      (box.path() / "t5.png").string() + " --title 't5 buckets"));
  REQUIRE(fs::exists(box.path() / "t5.csv"));

  const Result bad = run(box, std::string(RELPOS_CLI) + " positions t5 --png t5.pdf");
  REQUIRE(bad.exit_code == 2);
  REQUIRE(bad.err == "relpos: error: --png 't5.pdf': expected a file name ending in .png\n");
}

TEST_CASE("plot.py's t quantiles are the report's (Boost.Math), never narrower", "[plot]") {
  if (!has_python()) {
    WARN("SKIPPED: /usr/bin/python3 is not installed");
    return;
  }
  TempDir box("plot_t_quantiles");
  const Result r = run(box, "/usr/bin/python3 -B -c 'import sys; sys.path.insert(0, \"" +
                                std::string(RELPOS_SOURCE_DIR) +
                                "/tools\"); from plots.statistics import t_quantile_975; "
                                "print(*(t_quantile_975(df) for df in range(1, 2001)))'");
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  std::istringstream values(r.out);
  for (std::size_t df = 1; df <= 2000; ++df) {
    double t = 0.0;
    REQUIRE(values >> t);
    INFO("df " << df << ": plot.py " << t);
    REQUIRE(t >= relpos::t_quantile_975(df) - 5e-4);  // rounded to 3 decimals
    REQUIRE(t <= relpos::t_quantile_975(df) * 1.01);
  }
}

TEST_CASE("plot.py's loss curves band the 95% t interval of the seed mean", "[plot][slow]") {
  if (!has_matplotlib()) {
    WARN("SKIPPED: matplotlib is not installed for /usr/bin/python3 (python3-matplotlib)");
    return;
  }
  TempDir box("plot_t_bands");
  write_diverging_seeds(box);
  const Result r = run(box, kPlot + " ablation " + box.path().string());
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  for (const char* figure : {"train_loss", "val_loss", "extrapolation"}) {
    INFO(figure);
    const std::string svg = slurp(box.path() / (std::string(figure) + ".svg"));
    REQUIRE(contains(svg, "bands: 95% t interval of the mean"));
    REQUIRE(contains(svg, "fill-opacity: 0.15"));
  }
  // The band reaches 3.1 + 1.27 = 4.37 at step 1 (one std would stop at 3.24): a tick at 4.0.
  REQUIRE(contains(slurp(box.path() / "val_loss.svg"), ">4.0</text>"));
}

TEST_CASE("plot.py draws chance lines: 1/num_symbols on accuracy, a uniform byte on text",
          "[plot][slow]") {
  if (!has_matplotlib()) {
    WARN("SKIPPED: matplotlib is not installed for /usr/bin/python3 (python3-matplotlib)");
    return;
  }
  TempDir box("plot_chance");
  write_seeded_ablation_folder(box);
  REQUIRE(run(box, kPlot + " ablation " + box.path().string()).exit_code == 0);
  // No config.yaml: data/tasks.h's default of 16 symbols; text losses near 2.5: ln 256 is
  // off the scale and the legend says so.
  CHECK(contains(slurp(box.path() / "accuracy.svg"), "chance (1/16)"));
  CHECK(contains(slurp(box.path() / "val_loss.svg"), "5.55 nats): off the scale"));
  CHECK_FALSE(contains(slurp(box.path() / "extrapolation.svg"), "ln 256 = 5.55 nats"));

  // A run's resolved config with 10 symbols; a text run whose loss starts at 5.4.
  box.write("t5-copy/seed-0/config.yaml", "data:\n  source: copy\n  task:\n    num_symbols: 10\n");
  box.write("t5/seed-0/metrics.jsonl", "{\"step\":1,\"loss\":5.4}\n{\"step\":2,\"loss\":2.6}\n");
  box.write("t5/seed-1/metrics.jsonl", "{\"step\":1,\"loss\":5.4}\n{\"step\":2,\"loss\":2.6}\n");
  const Result r = run(box, kPlot + " ablation " + box.path().string());
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const std::string accuracy = slurp(box.path() / "accuracy.svg");
  CHECK(contains(accuracy, "chance (1/10)"));
  CHECK_FALSE(contains(accuracy, "chance (1/16)"));
  CHECK(
      contains(slurp(box.path() / "train_loss.svg"), "chance (uniform byte: ln 256 = 5.55 nats)"));
  require_no_tmp_files(box.path());
}

TEST_CASE("plot.py ablation draws loss against memory and the copy check's gain", "[plot][slow]") {
  if (!has_matplotlib()) {
    WARN("SKIPPED: matplotlib is not installed for /usr/bin/python3 (python3-matplotlib)");
    return;
  }
  TempDir plain("plot_no_memory");
  write_seeded_ablation_folder(plain);
  REQUIRE(run(plain, kPlot + " ablation " + plain.path().string()).exit_code == 0);
  REQUIRE_FALSE(fs::exists(plain.path() / "memory.png"));     // no loss_mem_* columns
  REQUIRE_FALSE(fs::exists(plain.path() / "copy_gain.png"));  // no copy_gain_* columns

  TempDir box("plot_memory_copy");
  write_seeded_ablation_folder(box);
  // Memory columns as eval_mem_lengths [0, 64] and eval_knn_sizes [256, 1024] write them
  // (t5-knn trained with S = 64), copy columns as eval_copy at distances 64 and 256, in one
  // window and in segments.
  box.write("results.csv",
            "variant,scheme,data,train_length,seeds,runs,loss_at_16,loss_at_16_ci95,"
            "loss_mem_0,loss_mem_0_ci95,loss_mem_64,loss_mem_64_ci95,loss_mem_0_knn_64,"
            "loss_mem_0_knn_64_ci95,loss_mem_64_knn_64,loss_mem_64_knn_64_ci95,"
            "loss_mem_0_knn_256,loss_mem_0_knn_256_ci95,loss_mem_0_knn_1024,"
            "loss_mem_0_knn_1024_ci95,copy_gain_64,copy_gain_64_ci95,copy_gain_256,"
            "copy_gain_256_ci95,copy_gain_64_mem_64,copy_gain_64_mem_64_ci95\n"
            "t5,t5,corpus,16,0 1,t5/seed-0 t5/seed-1,2.4,0.1,2.4,0.1,2.3,0.1,,,,,,,,,0.5,0.2,"
            "0.1,0.2,0.6,0.3\n"
            "t5-knn,t5,corpus,16,0 1,t5-copy/seed-0 t5-copy/seed-1,2.4,0.1,2.4,0.1,2.35,0.1,"
            "2.3,0.1,2.25,0.1,2.2,0.1,2.1,0.1,0.4,0.2,0.3,0.1,,\n");
  const Result r = run(box, kPlot + " ablation " + box.path().string());
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  for (const char* figure : {"memory", "memory_knn", "copy_gain"})
    require_figure(box.path() / figure);
  const std::string memory = slurp(box.path() / "memory.svg");
  for (const char* text : {"Loss vs memory length", "memory length M", "t5-knn, kNN memory 64",
                           "bands: 95% t interval of the mean", "fill-opacity: 0.15"}) {
    INFO(text);
    CHECK(contains(memory, text));
  }
  CHECK_FALSE(contains(memory, "kNN memory 256"));  // the size sweep: in memory_knn
  const std::string sizes = slurp(box.path() / "memory_knn.svg");
  for (const char* text : {"Loss vs kNN memory size (M = 0)", ">64</text>", ">1024</text>"}) {
    INFO(text);
    CHECK(contains(sizes, text));
  }
  CHECK(contains(sizes, ">t5-knn</text>"));
  CHECK_FALSE(contains(sizes, ">t5</text>"));  // no kNN layer, no size sweep
  const std::string copy = slurp(box.path() / "copy_gain.svg");
  for (const char* text : {"gain vs distance", "t5, one window", "t5, segments, memory 64",
                           "t5-knn, one window", "no gain (0)", "fill-opacity: 0.15"}) {
    INFO(text);
    CHECK(contains(copy, text));
  }
  CHECK_FALSE(contains(copy, "t5-knn, segments"));  // its cells are empty
  require_no_tmp_files(box.path());
}
