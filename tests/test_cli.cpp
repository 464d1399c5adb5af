// The relpos executable on bad input: one line on stderr, exit code 2, nothing
// overwritten. Runs the real binary.
#include <array>
#include <catch2/catch.hpp>
#include <cstdio>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <tuple>
#include <vector>

#include "tests/test_files.h"
#include "tests/test_process.h"
#include "tests/tiny_run.h"

namespace fs = std::filesystem;
using relpos::testing::require_one_line_error;
using relpos::testing::slurp;

namespace {

using Result = relpos::testing::RelposResult;

// A temp dir that runs the relpos binary with its stdout and stderr captured there.
struct Sandbox : relpos::testing::TempDir {
  Sandbox() : TempDir("cli") {}

  // `args`: a command line without quotes (words()); `env`: assignments for the
  // command's environment, e.g. "NAME=value".
  Result run(const std::string& args, const std::vector<std::string>& env = {}) const {
    return relpos::testing::relpos_in(path(), relpos::testing::words(args), 300, env);
  }
};

const std::string kTiny = relpos::testing::tiny_run_yaml({"train.steps=2", "train.threads=0"});

// (step, lr, loss) of every training log line in a run's metrics.jsonl.
std::vector<std::tuple<std::int64_t, double, double>> logged_lr_and_loss(const fs::path& run) {
  std::vector<std::tuple<std::int64_t, double, double>> rows;
  std::istringstream lines(slurp(run / "metrics.jsonl"));
  for (std::string line; std::getline(lines, line);) {
    const auto j = nlohmann::json::parse(line);
    if (j.contains("lr")) rows.emplace_back(j["step"], j["lr"], j["loss"]);
  }
  return rows;
}

}  // namespace

TEST_CASE("cli: config errors are one line with exit code 2", "[cli]") {
  Sandbox box;
  require_one_line_error(box.run("train " + (box.path() / "missing.yaml").string()),
                         {"missing.yaml"});
  const auto bad_yaml = box.write("bad.yaml", "model:\n  d_model: [1, 2\n");
  require_one_line_error(box.run("train " + bad_yaml.string()), {"bad.yaml:"});
  const auto unknown = box.write("unknown.yaml", "model:\n  d_modle: 16\n");
  require_one_line_error(box.run("train " + unknown.string()), {"unknown.yaml:2"});
  const auto wrong_type = box.write("type.yaml", "model:\n  d_model: abc\n");
  require_one_line_error(box.run("train " + wrong_type.string()), {"model.d_model"});
  const auto tiny = box.write("tiny.yaml", kTiny);
  require_one_line_error(box.run("train " + tiny.string() + " model.d_model=15"), {"n_heads"});
  require_one_line_error(box.run("train " + tiny.string() + " optim.lr=0"), {"optim.lr"});
  require_one_line_error(box.run("train " + tiny.string() + " data.seq_len=1"), {"data.seq_len"});
  require_one_line_error(box.run("train " + tiny.string() +
                                 " model.position.scheme=t5 model.position.num_buckets=2 "
                                 "model.position.bidirectional_buckets=true"),
                         {"max_exact=0"});
  require_one_line_error(box.run("train " + tiny.string() +
                                 " model.position.scheme=t5 "
                                 "model.position.max_distance=8"),
                         {"max_distance"});
  require_one_line_error(
      box.run("train " + tiny.string() + " data.source=copy data.task.max_items=9"),
      {"max_items 9"});  // seq_len 16 fits strings up to 8
  require_one_line_error(box.run("train " + tiny.string() +
                                 " model.position.scheme=rope model.position.randomized_max_len=8"),
                         {"model.position.randomized_max_len"});
}

TEST_CASE("cli: a warmup longer than the run is cut to it with a one-line note", "[cli]") {
  Sandbox box;
  const auto tiny = box.write("tiny.yaml", kTiny);  // train.steps: 2, logged at every step
  const fs::path cut = box.path() / "cut", exact = box.path() / "exact";
  const Result r =
      box.run("train " + tiny.string() + " schedule.warmup_steps=5 train.out_dir=" + cut.string());
  INFO("stderr: " << r.err);
  REQUIRE(r.exit_code == 0);
  REQUIRE(r.err ==
          "relpos: note: schedule.warmup_steps=5 is more than train.steps=2; warming up over all 2 "
          "steps\n");
  REQUIRE(r.out.find("warmup_steps: 2") != std::string::npos);  // the resolved config
  REQUIRE(
      box.run("train " + tiny.string() + " schedule.warmup_steps=2 train.out_dir=" + exact.string())
          .exit_code == 0);
  // The same learning rates and losses as a run configured with warmup_steps = train.steps.
  const auto rows = logged_lr_and_loss(cut);
  REQUIRE(rows.size() == 2);
  REQUIRE(rows == logged_lr_and_loss(exact));
}

TEST_CASE("cli: sizes too large for the machine are refused with exit code 2",
          "[cli][bounds][slow]") {
  Sandbox box;
  const std::string tiny = box.write("tiny.yaml", kTiny).string();
  const std::string out_dir = " train.out_dir=" + (box.path() / "run").string();
  // Used to end in std::bad_alloc (exit 1), or SIGSEGV after a wrapped-around count.
  require_one_line_error(box.run("train " + tiny + out_dir + " model.d_model=1000000000"),
                         {"model.d_model=1000000000"});
  require_one_line_error(box.run("train " + tiny + out_dir + " model.vocab=4611686018427387904"),
                         {"model.vocab=4611686018427387904"});
  require_one_line_error(box.run("train " + tiny + out_dir +
                                 " model.position.scheme=t5 model.position.num_buckets=1000000000"),
                         {"model.position.num_buckets must be <= 1048576"});
  // Used to end in std::bad_alloc (exit 1).
  require_one_line_error(box.run("positions t5 --q-len 4000000 --csv"), {"--q-len 4000000"});
  // Evaluation lengths asked for on the command line are bounded too (were exit 1 or a hang).
  REQUIRE(box.run("train " + tiny + out_dir).exit_code == 0);
  const std::string checkpoint = (box.path() / "run" / "checkpoints" / "ckpt_00000002.h5").string();
  require_one_line_error(
      box.run("eval " + checkpoint + " --data copy --lengths 4611686018427387904"),
      {"--lengths, --batches: the run would not fit in memory"});
  require_one_line_error(box.run("eval " + checkpoint + " --data copy --lengths 1000000000"),
                         {"eval.lengths=[1000000000]"});
  // A config that trains on this machine, against a machine with 1 kB free.
  const std::string other_dir = " train.out_dir=" + (box.path() / "refused").string();
  require_one_line_error(box.run("train " + tiny + other_dir, {"RELPOS_MEMORY_LIMIT=1000"}),
                         {"would not fit in memory"});
  REQUIRE_FALSE(fs::exists(box.path() / "refused"));
}

TEST_CASE("cli: train.precision errors are one line with exit code 2 and no run folder",
          "[cli][bf16]") {
  Sandbox box;
  const auto tiny = box.write("tiny.yaml", kTiny);
  const std::string out = " train.out_dir=" + (box.path() / "run").string();
  require_one_line_error(box.run("train " + tiny.string() + out + " train.precision=fp16"),
                         {"train.precision"});
  require_one_line_error(
      box.run("train " + tiny.string() + out + " train.precision=bf16 train.device=cuda"),
      {"train.precision: bf16 runs on the CPU only (train.device=cpu), got train.device=cuda"});
  REQUIRE_FALSE(fs::exists(box.path() / "run"));
}

TEST_CASE("cli: a key or value holding a newline gives a one-line error", "[cli]") {
  Sandbox box;
  const auto key = box.write("key.yaml", "model:\n  \"d_mo\\ndel\": 16\n");
  require_one_line_error(box.run("train " + key.string()), {"unknown key 'model.d_mo\\ndel'"});
  const auto value = box.write("value.yaml", "model:\n  norm: \"layer\\nnorm\"\n");
  require_one_line_error(box.run("train " + value.string()), {"got 'layer\\nnorm'"});
  const auto twice = box.write("twice.yaml", "model:\n  d_model: 16\nmodel:\n  n_heads: 2\n");
  require_one_line_error(box.run("train " + twice.string()), {"key 'model' is set twice"});
}

TEST_CASE("cli: checkpoint errors are one line with exit code 2", "[cli]") {
  Sandbox box;
  require_one_line_error(box.run("eval " + (box.path() / "none.h5").string()), {"none.h5"});
  const auto text = box.write("text.h5", "this is not HDF5");
  require_one_line_error(box.run("inspect " + text.string()), {"text.h5"});
  require_one_line_error(box.run("sample " + text.string() + " --prompt x"), {"text.h5"});
}

TEST_CASE("cli: train, inspect, eval and sample work on a tiny run; resume keeps files",
          "[cli][slow]") {
  Sandbox box;
  const auto tiny = box.write("tiny.yaml", kTiny);
  const std::string out = (box.path() / "run").string();
  Result r = box.run("train " + tiny.string() + " train.out_dir=" + out);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  REQUIRE(r.out.find("summary:") != std::string::npos);
  const std::string ckpt = out + "/checkpoints/ckpt_00000002.h5";
  REQUIRE(fs::exists(ckpt));
  REQUIRE(fs::exists(out + "/metrics.jsonl"));
  REQUIRE(fs::exists(out + "/config.yaml"));
  REQUIRE(fs::exists(out + "/summary.json"));
  r = box.run("inspect " + ckpt);
  REQUIRE(r.exit_code == 0);
  REQUIRE(r.out.find("blocks.0.attn.q.weight") != std::string::npos);
  r = box.run("eval " + ckpt + " --lengths 16,32 --batches 1");
  REQUIRE(r.exit_code == 0);
  REQUIRE(fs::exists(out + "/checkpoints/ckpt_00000002.eval.json"));
  // A corpus has no answer tokens: accuracy and exact match are null; a task has both.
  auto eval_json = nlohmann::json::parse(slurp(out + "/checkpoints/ckpt_00000002.eval.json"));
  REQUIRE(eval_json["results"].size() == 2);
  CHECK(eval_json["results"][0]["accuracy"].is_null());
  CHECK(eval_json["results"][0]["exact_match"].is_null());
  r = box.run("eval " + ckpt + " --data copy --lengths 16,32 --batches 1");
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("exact_match") != std::string::npos);
  eval_json = nlohmann::json::parse(slurp(out + "/checkpoints/ckpt_00000002.eval.json"));
  for (const auto& point : eval_json["results"]) {
    CHECK(point["accuracy"].get<double>() >= 0.0);
    CHECK(point["accuracy"].get<double>() <= 1.0);
    CHECK(point["exact_match"].get<double>() >= 0.0);
    CHECK(point["exact_match"].get<double>() <= 1.0);
  }
  r = box.run("sample " + ckpt + " --prompt And --tokens 8 --seed 3");
  REQUIRE(r.exit_code == 0);
  REQUIRE(r.out.rfind("And", 0) == 0);
  const Result again = box.run("sample " + ckpt + " --prompt And --tokens 8 --seed 3 --no-cache");
  REQUIRE(again.out == r.out);  // the KV cache gives the same tokens as full recompute
  // A resume with a changed architecture fails and leaves the checkpoint intact.
  const std::string before = slurp(ckpt);
  require_one_line_error(box.run("train " + tiny.string() + " train.out_dir=" + out +
                                 " train.steps=4 model.d_ff=48 --resume " + out),
                         {"architecture"});
  REQUIRE(slurp(ckpt) == before);
  r = box.run("train " + tiny.string() + " train.out_dir=" + out + " train.steps=4 --resume " +
              out);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  REQUIRE(r.out.find("resumed from") != std::string::npos);
}

// The loss of each length in an eval JSON file.
std::map<std::int64_t, double> eval_losses(const fs::path& json) {
  std::map<std::int64_t, double> losses;
  const auto parsed = nlohmann::json::parse(slurp(json));
  for (const auto& point : parsed["results"])
    losses[point["length"].get<std::int64_t>()] = point["loss"].get<double>();
  return losses;
}

TEST_CASE("cli: a RoPE checkpoint evaluated with rope_scaling (--set) and fine-tuned (--init-from)",
          "[cli][rope_scaling]") {
  Sandbox box;
  const auto tiny = box.write("tiny.yaml", kTiny);
  const std::string out = (box.path() / "run").string();
  Result r = box.run("train " + tiny.string() + " model.position.scheme=rope train.out_dir=" + out);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const std::string ckpt = out + "/checkpoints/ckpt_00000002.h5";
  const std::string eval = "eval " + ckpt + " --lengths 16,64 --batches 1 --json ";
  const auto plain_json = box.path() / "plain.json";
  REQUIRE(box.run(eval + plain_json.string()).exit_code == 0);
  const auto plain = eval_losses(plain_json);
  // Dynamic NTK leaves the training length as it was and changes the longer one.
  const std::string dynamic_args =
      " --set model.position.rope_scaling.kind=dynamic_ntk --set "
      "model.position.rope_scaling.original_len=16";
  const auto dynamic_json = box.path() / "dynamic.json";
  r = box.run(eval + dynamic_json.string() + dynamic_args);
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("--set model.position.rope_scaling.kind: none -> dynamic_ntk") !=
        std::string::npos);
  const auto dynamic = eval_losses(dynamic_json);
  CHECK(dynamic.at(16) == plain.at(16));
  CHECK(dynamic.at(64) != plain.at(64));
  CHECK(nlohmann::json::parse(slurp(dynamic_json))["changes"].contains(
      "model.position.rope_scaling.kind"));
  // An architecture key, or a bad value, is refused in one line.
  require_one_line_error(box.run(eval + dynamic_json.string() + " --set model.d_ff=48"),
                         {"--set cannot change the architecture"});
  require_one_line_error(
      box.run(eval + dynamic_json.string() + " --set model.position.rope_scaling.kind=cubic"),
      {"rope_scaling.kind"});
  require_one_line_error(
      box.run(eval + dynamic_json.string() + " --set model.position.rope_scaling.kind=yarn"),
      {"rope_scaling.original_len"});
  // --init-from: the checkpoint's weights in a new run at twice the length, with a fresh
  // optimizer from step 0. With a negligible learning rate its weights stay the
  // checkpoint's: its own checkpoint evaluates as the original at the original length
  // (and data.seq_len, which sets the evaluation batches).
  const std::string tuned = (box.path() / "tuned").string();
  r = box.run("train " + tiny.string() +
              " model.position.scheme=rope data.seq_len=32 optim.lr=1e-12 schedule.min_lr=0 "
              "train.out_dir=" +
              tuned +
              " model.position.rope_scaling.kind=linear model.position.rope_scaling.factor=2 "
              "model.position.rope_scaling.original_len=16 --init-from " +
              out);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("initialised the weights from " + ckpt) != std::string::npos);
  CHECK(r.err.find("model.position.rope_scaling.kind none -> linear") != std::string::npos);
  CHECK(std::get<0>(logged_lr_and_loss(tuned).front()) == 1);
  const auto tuned_json = box.path() / "tuned.json";
  REQUIRE(box.run("eval " + tuned +
                  "/checkpoints/ckpt_00000002.h5 --lengths 16 --batches 1 "
                  "--set model.position.rope_scaling.kind=none --set data.seq_len=16 --json " +
                  tuned_json.string())
              .exit_code == 0);
  CHECK(eval_losses(tuned_json).at(16) == Approx(plain.at(16)).epsilon(1e-6));
  // A dynamic_ntk model samples by recomputing (nothing to cache) and refuses segment memory.
  const std::string dynamic_run = (box.path() / "dynamic").string();
  const std::string dynamic_train = "train " + tiny.string() +
                                    " model.position.scheme=rope train.out_dir=" + dynamic_run +
                                    " model.position.rope_scaling.kind=dynamic_ntk "
                                    "model.position.rope_scaling.original_len=8";
  r = box.run(dynamic_train);
  REQUIRE(r.exit_code == 0);
  const std::string dynamic_ckpt = dynamic_run + "/checkpoints/ckpt_00000002.h5";
  r = box.run("sample " + dynamic_ckpt + " --prompt And --tokens 8 --seed 3");
  REQUIRE(r.exit_code == 0);
  CHECK(box.run("sample " + dynamic_ckpt + " --prompt And --tokens 8 --seed 3 --no-cache").out ==
        r.out);
  require_one_line_error(box.run(dynamic_train + "2 train.mem_len=8"),
                         {"train.mem_len=8: model.position.rope_scaling.kind=dynamic_ntk"});
  require_one_line_error(box.run("eval " + dynamic_ckpt + " --mem-len 8 --batches 1"),
                         {"--mem-len: model.position.rope_scaling.kind=dynamic_ntk"});
  // Its architecture must match, and it does not combine with --resume.
  require_one_line_error(box.run("train " + tiny.string() + " model.position.scheme=rope " +
                                 "model.d_ff=48 train.out_dir=" + tuned + "2 --init-from " + out),
                         {"--init-from cannot change the architecture"});
  require_one_line_error(
      box.run("train " + tiny.string() + " model.position.scheme=rope " + "train.out_dir=" + tuned +
              " --init-from " + out + " --resume " + tuned),
      {"not both"});
}

TEST_CASE("cli: relpos positions prints each scheme's index with its keys as options", "[cli]") {
  Sandbox box;
  // Shaw, k = 1: clip(j - i, -1, 1) + 1 for 3 queries against 4 keys (one memory key).
  Result r = box.run("positions shaw --q-len 3 --k-len 4 --max-relative 1 --csv");
  REQUIRE(r.exit_code == 0);
  CHECK(r.out == "query,k0,k1,k2,k3\n0,0,1,2,2\n1,0,0,1,2\n2,0,0,0,1\n");
  // T5, 8 bidirectional buckets, max_distance 12: keys to the right use the upper half.
  r = box.run(
      "positions t5 --q-len 1 --k-len 1 --num-buckets 8 --max-distance 12 "
      "--bidirectional-buckets --csv");
  REQUIRE(r.exit_code == 0);
  CHECK(r.out == "query,k0\n0,0\n");
  r = box.run(
      "positions t5 --q-len 2 --num-buckets 8 --max-distance 12 --bidirectional-buckets "
      "--csv");
  CHECK(r.out == "query,k0,k1\n0,0,5\n1,1,0\n");
  // Causal-only schemes mask the future without --causal.
  r = box.run("positions xl --q-len 2 --clamp-len 1 --csv");
  CHECK(r.out == "query,k0,k1\n0,0,\n1,1,0\n");
  // FIRE: its MLP input log(1 + c (i - j)) / log(1 + c max(i, L_thr)) depends on the query.
  r = box.run("positions fire --q-len 2 --k-len 3 --fire-c 1 --fire-threshold 2 --csv");
  CHECK(r.out == "query,k0,k1,k2\n0,0.631,0.000,\n1,1.000,0.631,0.000\n");
  // A key's own validation, and a scheme without a distance table, are one-line errors.
  require_one_line_error(box.run("positions shaw --max-relative 0"),
                         {"model.position.max_relative must be >= 1, got 0"});
  require_one_line_error(box.run("positions rope"), {"scheme: rope not in {none,shaw,t5"});
  require_one_line_error(box.run("trian"), {"A subcommand is required"});
  CHECK(box.run("positions --help").exit_code == 0);
}

TEST_CASE("cli: recurrent training, eval --mem-len, and their one-line errors",
          "[cli][recurrence][slow]") {
  Sandbox box;
  const auto tiny = box.write("tiny.yaml", kTiny);
  const std::string out = (box.path() / "run").string();
  Result r = box.run("train " + tiny.string() + " train.mem_len=16 train.out_dir=" + out);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const std::string ckpt = out + "/checkpoints/ckpt_00000002.h5";
  r = box.run("eval " + ckpt + " --lengths 16 --mem-len 0,16,32 --batches 2");
  REQUIRE(r.exit_code == 0);
  REQUIRE(r.out.find("memory") != std::string::npos);
  const auto json = nlohmann::json::parse(slurp(out + "/checkpoints/ckpt_00000002.eval.json"));
  REQUIRE(json["results"].size() == 3);
  REQUIRE(json["results"][2]["mem_len"] == 32);
  require_one_line_error(box.run("eval " + ckpt + " --mem-len=-1"), {"--mem-len"});
  require_one_line_error(box.run("eval " + ckpt + " --data copy --mem-len 16"),
                         {"--mem-len: needs a text corpus"});
  const std::string absolute = (box.path() / "absolute").string();
  require_one_line_error(box.run("train " + tiny.string() +
                                 " train.mem_len=16 model.position.scheme=sinusoidal "
                                 "train.out_dir=" +
                                 absolute),
                         {"train.mem_len=16 needs a relative model.position.scheme"});
  REQUIRE_FALSE(fs::exists(absolute));
  REQUIRE(
      box.run("train " + tiny.string() + " model.position.scheme=learned train.out_dir=" + absolute)
          .exit_code == 0);
  require_one_line_error(box.run("eval " + absolute + "/checkpoints/ckpt_00000002.h5 --mem-len 16"),
                         {"absolute"});

  // The in-context copy check, in one window and as segments with memory.
  const std::string copy_json = (box.path() / "copy.json").string();
  r = box.run("eval " + ckpt + " --copy-span 4 --copy-distances 8,20 --sequences 4 --mem-len 0,16" +
              " --json " + copy_json);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  REQUIRE(r.out.find("control loss") != std::string::npos);
  const auto copy = nlohmann::json::parse(slurp(copy_json))["results"];
  REQUIRE(copy.size() == 4);  // 2 memories x 2 distances
  REQUIRE(copy[1]["distance"] == 20);
  REQUIRE(copy[1]["segment"] == 16);
  REQUIRE(copy[1]["gain"] == 0.0);  // the repeat's segment sees nothing of the first span
  require_one_line_error(box.run("eval " + ckpt + " --copy-span 1 --copy-distances 8"),
                         {"--copy-span 1: expected a span >= 2"});
  require_one_line_error(box.run("eval " + ckpt + " --copy-span 4 --copy-distances 2"),
                         {"--copy-distances: each must be in [--copy-span, 2^20], got 2"});
  require_one_line_error(box.run("eval " + ckpt + " --copy-span 4 --copy-distances 8 --stride 4"),
                         {"--copy-span: the copy check sets its own lengths"});
  require_one_line_error(box.run("eval " + absolute +
                                 "/checkpoints/ckpt_00000002.h5 --copy-span 4 "
                                 "--copy-distances 8 --mem-len 16"),
                         {"absolute"});
}

TEST_CASE("cli: a kNN memory run trains, evaluates by memory size, and refuses bad sizes",
          "[cli][knn][slow]") {
  Sandbox box;
  const auto tiny = box.write("tiny.yaml", kTiny);
  const std::string knn =
      " model.position.scheme=t5 model.knn_memory.layer=0 "
      "model.knn_memory.size=32 model.knn_memory.top_k=4";
  require_one_line_error(box.run("train " + tiny.string() + knn + " model.knn_memory.top_k=33"),
                         {"model.knn_memory.top_k=33 must be <= model.knn_memory.size=32"});
  require_one_line_error(box.run("train " + tiny.string() + knn + " data.source=copy"),
                         {"model.knn_memory.layer=0 needs a text corpus"});
  const std::string out = (box.path() / "knn").string();
  Result r = box.run("train " + tiny.string() + knn + " train.out_dir=" + out);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  REQUIRE(r.out.find("read as contiguous streams") != std::string::npos);
  const std::string ckpt = out + "/checkpoints/ckpt_00000002.h5";
  const std::string json = (box.path() / "knn.json").string();
  r = box.run("eval " + ckpt + " --knn-size 0,32 --batches 3 --json " + json);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const auto results = nlohmann::json::parse(slurp(json))["results"];
  REQUIRE(results.size() == 2);
  REQUIRE(results[0]["knn_size"] == 0);
  REQUIRE(results[1]["knn_size"] == 32);
  REQUIRE(results[0]["loss"] != results[1]["loss"]);  // the memory is used
  require_one_line_error(box.run("eval " + ckpt + " --knn-size -1"), {"--knn-size"});
  const std::string plain = (box.path() / "plain").string();
  REQUIRE(box.run("train " + tiny.string() + " train.out_dir=" + plain).exit_code == 0);
  require_one_line_error(box.run("eval " + plain + "/checkpoints/ckpt_00000002.h5 --knn-size 8"),
                         {"--knn-size: the model has no kNN layer"});
}

TEST_CASE(
    "cli: eval reads the whole split, slides windows with --stride and writes the loss by "
    "position",
    "[cli][eval][slow]") {
  Sandbox box;
  const auto tiny = box.write("tiny.yaml", kTiny);
  const std::string out = (box.path() / "run").string();
  REQUIRE(box.run("train " + tiny.string() + " train.out_dir=" + out).exit_code == 0);
  const std::string ckpt = out + "/checkpoints/ckpt_00000002.h5";
  const std::string csv = (box.path() / "by_position.csv").string();
  const std::string json = (box.path() / "eval.json").string();
  Result r = box.run("eval " + ckpt + " --lengths 16,32 --stride 8 --by-position " + csv +
                     " --json " + json);
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("length  bits/byte") != std::string::npos);  // bits/byte first
  CHECK(r.err.find("eval at 32: ") != std::string::npos);       // a progress line
  const auto parsed = nlohmann::json::parse(slurp(json));
  const std::int64_t validation = 206892;  // the bundled corpus's validation bytes
  for (const auto& point : parsed["results"]) {
    const auto length = point["length"].get<std::int64_t>();
    INFO("length " << length);
    CHECK(point["stride"].get<std::int64_t>() == 8);
    // Every window of the whole split: tokens 1 ... L + (K - 1) S, once each.
    const std::int64_t windows = (validation - 1 - length) / 8 + 1;
    CHECK(point["sequences"].get<std::int64_t>() == windows);
    CHECK(point["tokens"].get<std::int64_t>() == length + (windows - 1) * 8);
    CHECK(point["loss_by_position"].size() == static_cast<std::size_t>(length));
  }
  const std::string rows = slurp(csv);
  CHECK(rows.rfind("length,position,loss,tokens\n16,0,", 0) == 0);
  require_one_line_error(box.run("eval " + ckpt + " --lengths 16,32 --stride 20"),
                         {"--stride 20", "<= every length"});
  require_one_line_error(box.run("eval " + ckpt + " --data copy --stride 8"),
                         {"synthetic task", "sliding windows need a text corpus"});
}
