// SentencePiece tokenizers (data.tokenizer): training a model, the lossless round trip
// and per-byte accounting, and a run that trains, resumes bit-exactly, evaluates and
// samples from its checkpoint alone, with one-line errors for bad model files.
#include <fmt/format.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <numbers>
#include <numeric>
#include <string>
#include <vector>

#include "autograd/error.h"
#include "data/sentencepiece_tokenizer.h"
#include "tests/test_command.h"
#include "tests/test_files.h"
#include "tests/test_metrics.h"

namespace fs = std::filesystem;
using relpos::testing::run_command;
using relpos::testing::slurp;
using relpos::testing::TempDir;

namespace {

// The first `bytes` bytes of the bundled KJV, cut at a line end.
std::string kjv_start(std::size_t bytes) {
  const std::string text = slurp(std::string(RELPOS_SOURCE_DIR) + "/data/corpus/kjv.txt");
  return text.substr(0, text.rfind('\n', bytes) + 1);
}

std::string relpos_cli(const std::string& args) { return std::string(RELPOS_CLI) + " " + args; }

void require_one_line_error(const relpos::testing::CommandResult& r, const std::string& needle) {
  INFO("stderr: " << r.err);
  REQUIRE(r.exit_code == 2);
  REQUIRE(r.err.find(needle) != std::string::npos);
  REQUIRE(std::count(r.err.begin(), r.err.end(), '\n') == 1);
}

// The loss and validation records of a run's metrics.jsonl, without timing.
std::vector<std::string> loss_records(const fs::path& run) {
  std::vector<std::string> out;
  for (const std::string& line : relpos::testing::metrics_without_timing(run / "metrics.jsonl"))
    if (line.find("loss") != std::string::npos) out.push_back(line);
  return out;
}

}  // namespace

TEST_CASE("sentencepiece: trained models keep every byte and count bytes per token",
          "[tokenizer]") {
  const TempDir dir("tokenizer");
  const fs::path text = dir.write("train.txt", kjv_start(60'000));
  for (const std::string type : {"bpe", "unigram"}) {
    const std::string model = relpos::train_sentencepiece({text.string(), 400, type});
    const auto tokenizer = relpos::load_sentencepiece(model, "test model");
    CHECK(tokenizer->vocab_size() == 400);
    // Newlines, double spaces, a character never seen (£) and control bytes round-trip
    // through byte fallback; the tokens' byte lengths add up to the text's size.
    const std::string sample = "In the beginning God\n\ncreated  £5 \x01\x7f the earth.\n";
    const std::vector<std::int64_t> ids = tokenizer->encode(sample);
    CHECK(ids.size() < sample.size());
    CHECK(tokenizer->decode(ids) == sample);
    std::int64_t bytes = 0;
    for (const std::int64_t id : ids) bytes += tokenizer->byte_length(id);
    CHECK(bytes == static_cast<std::int64_t>(sample.size()));
    REQUIRE_THROWS_WITH(tokenizer->decode(std::vector<std::int64_t>{400}),
                        Catch::Contains("token 400 at index 0 is outside"));
  }
  REQUIRE_THROWS_WITH(relpos::load_sentencepiece("not a model", "m.model"),
                      Catch::Contains("m.model: not a SentencePiece model"));
  REQUIRE_THROWS_WITH(relpos::train_sentencepiece({text.string(), 100, "bpe"}),
                      Catch::Contains("--vocab-size must be in [260, 2^20]"));
}

TEST_CASE(
    "sentencepiece run: trains, resumes bit-exactly, evaluates and samples from its "
    "checkpoint alone",
    "[tokenizer][cli][slow]") {
  const TempDir dir("tokenizer_run");
  const fs::path text = dir.write("train.txt", kjv_start(200'000));
  const fs::path model = dir.path() / "kjv.model";
  auto r = run_command(dir.path(), relpos_cli(fmt::format("tokenizer train {} --vocab-size 400 "
                                                          "--type unigram -o {}",
                                                          text.string(), model.string())));
  INFO("stderr: " << r.err);
  REQUIRE(r.exit_code == 0);
  const fs::path config =
      dir.write("tiny.yaml",
                "model: {d_model: 16, n_layers: 1, n_heads: 2, d_ff: 32}\n"
                "data: {seq_len: 16, batch_size: 4, tokenizer: {kind: sentencepiece, model: " +
                    model.string() +
                    "}}\n"
                    "train: {steps: 40, eval_every: 20, eval_batches: 2, checkpoint_every: 10, "
                    "keep_checkpoints: 0, log_every: 5, threads: 1}\n"
                    "schedule: {warmup_steps: 2}\n");
  const auto train = [&](const std::string& out, const std::string& extra) {
    return run_command(dir.path(), relpos_cli(fmt::format("train {} train.out_dir={} {}",
                                                          config.string(), out, extra)));
  };
  const fs::path straight = dir.path() / "straight", split = dir.path() / "split";
  r = train(straight.string(), "");
  REQUIRE(r.exit_code == 0);
  // The vocabulary follows the model; the run folder and each checkpoint hold a copy.
  CHECK(slurp(straight / "config.yaml").find("vocab: 400") != std::string::npos);
  CHECK(slurp(straight / "tokenizer.model") == slurp(model));

  // Stopped at step 20 (the later checkpoints removed), then resumed: the same losses.
  fs::copy(straight, split, fs::copy_options::recursive);
  for (const int step : {30, 40}) {
    fs::remove(split / "checkpoints" / fmt::format("ckpt_{:08d}.h5", step));
    fs::remove(split / "checkpoints" / fmt::format("ckpt_{:08d}.h5.digest", step));
  }
  r = train(split.string(), "--resume " + split.string());
  INFO("stderr: " << r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(loss_records(split) == loss_records(straight));

  // Another tokenizer at resume is refused.
  const fs::path other = dir.path() / "other.model";
  REQUIRE(
      run_command(dir.path(), relpos_cli(fmt::format("tokenizer train {} --vocab-size 400 -o {}",
                                                     text.string(), other.string())))
          .exit_code == 0);
  require_one_line_error(train(split.string(), "data.tokenizer.model=" + other.string() +
                                                   " train.steps=50 --resume " + split.string()),
                         "its tokenizer model differs from data.tokenizer.model");

  // Without the model file or the run folder's copy, the checkpoint evaluates and samples.
  fs::remove(model);
  const fs::path ckpt = dir.path() / "alone.h5";
  fs::copy_file(straight / "checkpoints" / "ckpt_00000040.h5", ckpt);
  fs::copy_file(straight / "checkpoints" / "ckpt_00000040.h5.digest",
                dir.path() / "alone.h5.digest");
  fs::remove_all(straight);
  const fs::path eval_json = dir.path() / "eval.json";
  r = run_command(dir.path(), relpos_cli(fmt::format("eval {} --lengths 16 --json {}",
                                                     ckpt.string(), eval_json.string())));
  INFO("stderr: " << r.err);
  REQUIRE(r.exit_code == 0);
  const auto point = nlohmann::json::parse(slurp(eval_json)).at("results").at(0);
  const double loss = point.at("loss"), bits = point.at("bits_per_byte");
  const std::int64_t tokens = point.at("tokens"), bytes = point.at("bytes");
  CHECK(bytes > tokens);  // pieces of several bytes
  CHECK(bits ==
        Approx(loss * static_cast<double>(tokens) / static_cast<double>(bytes) / std::numbers::ln2)
            .epsilon(1e-12));
  r = run_command(dir.path(),
                  relpos_cli(fmt::format("sample {} --prompt 'And God said' --tokens 12 --seed 1",
                                         ckpt.string())));
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.rfind("And God said", 0) == 0);
  CHECK(r.out.size() > std::string("And God said\n").size());

  // A missing or broken model file, or a vocabulary that does not match: one line, exit 2.
  require_one_line_error(
      train((dir.path() / "e1").string(), ""),
      "data.tokenizer.model '" + model.string() + "': cannot open: No such file");
  require_one_line_error(
      train((dir.path() / "e2").string(), "data.tokenizer.model=" + config.string()),
      "not a SentencePiece model");
  require_one_line_error(train((dir.path() / "e3").string(),
                               "data.tokenizer.model=" + other.string() + " model.vocab=256"),
                         "model.vocab=256 but the SentencePiece model");
  require_one_line_error(train((dir.path() / "e4").string(),
                               "data.tokenizer.model=" + other.string() + " model.causal=false"),
                         "data.tokenizer.kind=sentencepiece needs model.causal=true");
}
