// The masked-token objective of bidirectional models (data/masking.h): mask
// statistics, the data source's training and evaluation masks, config
// validation, a tiny training run, and sampling's refusal.
#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "autograd/error.h"
#include "data/data_source.h"
#include "data/masking.h"
#include "test_batches.h"
#include "tests/test_files.h"
#include "tests/tiny_run.h"
#include "train/config/config.h"
#include "train/evaluate.h"
#include "train/sample.h"
#include "train/store/checkpoint.h"
#include "train/store/checkpoint_folder.h"
#include "train/trainer.h"

using namespace relpos;
using testing::same_batches;
namespace fs = std::filesystem;
using Catch::Contains;
using testing::TempDir;

namespace {

// A (rows, seq_len) batch whose inputs are arbitrary byte values and whose
// targets are a sentinel that masking must overwrite everywhere.
Batch byte_batch(std::int64_t rows, std::int64_t seq_len) {
  Batch batch = empty_batch(rows, seq_len);
  std::int64_t* inputs = batch.inputs.data<std::int64_t>();
  std::int64_t* targets = batch.targets.data<std::int64_t>();
  for (std::int64_t i = 0; i < rows * seq_len; ++i) {
    inputs[i] = (i * 37 + i / 7) % kByteVocabSize;
    targets[i] = 12345;
  }
  return batch;
}

// How one masked batch relates to the unmasked original it came from.
struct MaskCounts {
  std::int64_t positions = 0;
  std::int64_t scored = 0;
  std::int64_t to_mask_token = 0;  // scored, input replaced by the mask token
  std::int64_t unchanged = 0;      // scored, input kept (or replaced by the same byte)
  std::int64_t to_other_byte = 0;  // scored, input replaced by a different byte
  std::set<std::int64_t> replacement_bytes;
  std::int64_t rows_without_score = 0;
};

// Checks every position of `masked` against `original` (the inputs before
// masking) and accumulates the counts.
void count_masks(const Batch& masked, const Tensor& original, MaskCounts& counts) {
  REQUIRE(masked.inputs.shape() == original.shape());
  REQUIRE(masked.targets.shape() == original.shape());
  const std::int64_t rows = original.size(0), seq_len = original.size(1);
  const std::int64_t* before = original.data<std::int64_t>();
  const std::int64_t* inputs = masked.inputs.data<std::int64_t>();
  const std::int64_t* targets = masked.targets.data<std::int64_t>();
  for (std::int64_t row = 0; row < rows; ++row) {
    std::int64_t scored_in_row = 0;
    for (std::int64_t t = 0; t < seq_len; ++t) {
      const std::int64_t i = row * seq_len + t;
      ++counts.positions;
      if (targets[i] == kIgnoreTarget) {
        REQUIRE(inputs[i] == before[i]);  // not scored: untouched
        continue;
      }
      REQUIRE(targets[i] == before[i]);  // scored: the original token, same position
      ++scored_in_row;
      if (inputs[i] == kMaskToken) {
        ++counts.to_mask_token;
      } else {
        REQUIRE(inputs[i] >= 0);
        REQUIRE(inputs[i] < kByteVocabSize);
        if (inputs[i] == before[i]) {
          ++counts.unchanged;
        } else {
          ++counts.to_other_byte;
          counts.replacement_bytes.insert(inputs[i]);
        }
      }
    }
    counts.scored += scored_in_row;
    counts.rows_without_score += scored_in_row == 0;
  }
}

MaskCounts mask_and_count(std::int64_t rows, std::int64_t seq_len, double mask_prob,
                          std::uint64_t seed) {
  Batch batch = byte_batch(rows, seq_len);
  const Tensor original = batch.inputs.clone();
  Rng rng(seed);
  mask_tokens(batch, mask_prob, rng);
  MaskCounts counts;
  count_masks(batch, original, counts);
  return counts;
}

double share(std::int64_t part, std::int64_t whole) {
  return static_cast<double>(part) / static_cast<double>(whole);
}

// A text file of 20000 bytes covering every byte value.
fs::path write_byte_corpus(const TempDir& dir) {
  std::string text(20000, '\0');
  for (std::size_t i = 0; i < text.size(); ++i)
    text[i] = static_cast<char>((i * 131 + i / 256) % 256);
  return dir.write("bytes.txt", text);
}

DataConfig masked_config(const std::string& source, std::uint64_t seed = 5) {
  DataConfig config;
  config.source = source;
  config.seq_len = 32;
  config.batch_size = 8;
  config.val_fraction = 0.25;
  config.seed = seed;
  config.masked_tokens = true;
  return config;
}

// A tiny bidirectional run on the bundled corpus, in the style of test_trainer.cpp.
RunConfig tiny_bidirectional(const fs::path& out, const std::vector<std::string>& extra = {}) {
  std::vector<std::string> changes = {"model.causal=false",
                                      "model.d_model=32",
                                      "model.n_layers=2",
                                      "model.d_ff=64",
                                      "model.position.scheme=t5",
                                      "data.seq_len=32",
                                      "data.batch_size=8",
                                      "train.steps=40",
                                      "train.eval_every=20",
                                      "train.eval_batches=2",
                                      "train.checkpoint_every=20",
                                      "train.keep_checkpoints=0",
                                      "optim.lr=1e-2",
                                      "schedule.warmup_steps=5",
                                      "train.threads=2",
                                      "train.out_dir=" + out.string()};
  changes.insert(changes.end(), extra.begin(), extra.end());
  return testing::tiny_run_config(changes);
}

std::vector<double> logged_losses(const fs::path& run_dir) {
  std::vector<double> losses;
  std::ifstream in(run_dir / "metrics.jsonl");
  const std::string key = "\"loss\":";
  for (std::string line; std::getline(in, line);) {
    const auto at = line.find(key);
    if (at != std::string::npos) losses.push_back(std::stod(line.substr(at + key.size())));
  }
  return losses;
}

}  // namespace

TEST_CASE("masking: about mask_prob of the positions are scored, split 80/10/10", "[masking]") {
  const MaskCounts c = mask_and_count(64, 512, 0.15, 1);
  REQUIRE(c.positions == 64 * 512);
  // Binomial(32768, 0.15): standard deviation 0.002 of the share.
  CHECK(share(c.scored, c.positions) == Approx(0.15).margin(0.01));
  // Of about 4900 scored positions (standard deviation of a share <= 0.007):
  CHECK(share(c.to_mask_token, c.scored) == Approx(0.8).margin(0.03));
  // A random byte equals the original with probability 1/256.
  CHECK(share(c.unchanged, c.scored) == Approx(0.1 + 0.1 / 256).margin(0.02));
  CHECK(share(c.to_other_byte, c.scored) == Approx(0.1 * 255 / 256).margin(0.02));
  // About 490 uniform bytes hit about 220 distinct values: spread over all 256.
  CHECK(c.replacement_bytes.size() > 150);
  CHECK(*c.replacement_bytes.rbegin() > 200);
  CHECK(c.rows_without_score == 0);

  // The probability is the parameter's, not a constant.
  CHECK(share(mask_and_count(64, 512, 0.5, 2).scored, 64 * 512) == Approx(0.5).margin(0.01));
}

TEST_CASE("masking: every row gets at least one scored position", "[masking]") {
  // With mask_prob 0.01 and 4 positions, 96% of the rows draw none and get one forced.
  const MaskCounts c = mask_and_count(2000, 4, 0.01, 3);
  CHECK(c.rows_without_score == 0);
  CHECK(c.scored >= 2000);
  CHECK(c.scored < 2000 + 60);  // almost only the forced ones (about 80 drawn, most in those rows)

  // The forced position is uniform over the row.
  Batch batch = byte_batch(2000, 4);
  Rng rng(4);
  mask_tokens(batch, 0.01, rng);
  std::vector<std::int64_t> per_position(4, 0);
  const std::int64_t* targets = batch.targets.data<std::int64_t>();
  for (std::int64_t i = 0; i < batch.targets.numel(); ++i)
    per_position[i % 4] += targets[i] != kIgnoreTarget;
  for (std::int64_t count : per_position) CHECK(count == Approx(500).margin(100));

  // A single position: always scored.
  CHECK(mask_and_count(10, 1, 0.15, 5).scored == 10);
}

TEST_CASE("masking: the same generator state gives the same masks", "[masking]") {
  Batch a = byte_batch(4, 64), b = byte_batch(4, 64), c = byte_batch(4, 64);
  Rng ra(9), rb(9), rc(10);
  mask_tokens(a, 0.15, ra);
  mask_tokens(b, 0.15, rb);
  mask_tokens(c, 0.15, rc);
  CHECK(same_batches({a}, {b}));
  CHECK_FALSE(same_batches({a}, {c}));
  CHECK(ra.state() == rb.state());
}

TEST_CASE("masking: errors name the probability and the shapes", "[masking]") {
  Rng rng(0);
  Batch batch = byte_batch(2, 8);
  REQUIRE_THROWS_WITH(mask_tokens(batch, 0.0, rng), Contains("mask_prob must be in (0, 1), got 0"));
  REQUIRE_THROWS_WITH(mask_tokens(batch, 1.0, rng), Contains("mask_prob must be in (0, 1), got 1"));
  Batch ragged{batch.inputs, Tensor::empty({2, 7}, DType::i64)};
  REQUIRE_THROWS_WITH(mask_tokens(ragged, 0.15, rng),
                      Contains("inputs [2, 8]") && Contains("targets [2, 7]"));
  DataConfig config = masked_config("copy");
  config.mask_prob = 1.5;
  REQUIRE_THROWS_WITH(make_source(config), Contains("mask_prob must be in (0, 1), got 1.5"));
}

TEST_CASE("masked corpus batches score the unshifted window", "[masking]") {
  TempDir dir("masked_corpus");
  const std::string file = write_byte_corpus(dir).string();
  DataConfig plain_config = masked_config(file);
  plain_config.masked_tokens = false;
  const auto plain = make_source(plain_config);
  const auto masked = make_source(masked_config(file));

  // The windows are drawn before the masks, so the first training batches share them.
  const Batch original = plain->next_train();
  MaskCounts train;
  count_masks(masked->next_train(), original.inputs, train);
  CHECK(train.scored > 0);
  CHECK(train.rows_without_score == 0);

  // Evaluation windows are sequential: every batch pairs with the plain one.
  const std::vector<Batch> plain_eval = plain->eval_batches(64, 3);
  const std::vector<Batch> masked_eval = masked->eval_batches(64, 3);
  REQUIRE(masked_eval.size() == 3);
  MaskCounts eval;
  for (std::size_t i = 0; i < masked_eval.size(); ++i)
    count_masks(masked_eval[i], plain_eval[i].inputs, eval);
  CHECK(eval.rows_without_score == 0);
  CHECK(share(eval.scored, eval.positions) == Approx(0.15).margin(0.05));
  CHECK(masked->describe().find("masked-token objective (mask_prob 0.15)") != std::string::npos);
  CHECK(plain->describe().find("objective") == std::string::npos);
}

TEST_CASE("masked task batches mask every position of the task sequence", "[masking]") {
  DataConfig plain_config = masked_config("offset_lookup");
  plain_config.masked_tokens = false;
  plain_config.task.offset = 4;
  DataConfig config = plain_config;
  config.masked_tokens = true;
  config.mask_prob = 0.3;
  const auto plain = make_source(plain_config);
  const auto masked = make_source(config);
  const Batch original = plain->next_train();
  const Batch batch = masked->next_train();
  MaskCounts counts;
  count_masks(batch, original.inputs, counts);
  CHECK(counts.rows_without_score == 0);
  // Positions the task itself never scores (t < offset) are masked too.
  std::int64_t scored_before_offset = 0;
  const std::int64_t* targets = batch.targets.data<std::int64_t>();
  for (std::int64_t row = 0; row < batch.targets.size(0); ++row)
    for (std::int64_t t = 0; t < 4; ++t)
      scored_before_offset += targets[row * 32 + t] != kIgnoreTarget;
  CHECK(scored_before_offset > 0);

  MaskCounts eval;
  const std::vector<Batch> plain_eval = plain->eval_batches(64, 2);
  const std::vector<Batch> masked_eval = masked->eval_batches(64, 2);
  for (std::size_t i = 0; i < masked_eval.size(); ++i)
    count_masks(masked_eval[i], plain_eval[i].inputs, eval);
  CHECK(share(eval.scored, eval.positions) == Approx(0.3).margin(0.05));
}

TEST_CASE("masked evaluation batches are fixed and leave the training stream alone", "[masking]") {
  TempDir dir("masked_eval");
  const std::string file = write_byte_corpus(dir).string();
  for (const std::string& source : {file, std::string("associative_recall")}) {
    INFO(source);
    const auto data = make_source(masked_config(source));
    const SamplerState before = data->sampler_state();
    const std::vector<Batch> first = data->eval_batches(32, 3);
    REQUIRE(data->sampler_state() == before);
    data->next_train();
    CHECK(same_batches(data->eval_batches(32, 3), first));
    // A fresh source from the same config evaluates on the same masks; another seed does not.
    CHECK(same_batches(make_source(masked_config(source))->eval_batches(32, 3), first));
    CHECK_FALSE(same_batches(make_source(masked_config(source, 6))->eval_batches(32, 3), first));
  }
}

TEST_CASE("the masked training stream is deterministic and resumes bit-exactly", "[masking]") {
  TempDir dir("masked_resume");
  const std::string file = write_byte_corpus(dir).string();
  for (const std::string& source : {file, std::string("copy")}) {
    INFO(source);
    const auto straight = make_source(masked_config(source));
    const auto twin = make_source(masked_config(source));
    for (int i = 0; i < 3; ++i)
      REQUIRE(same_batches({straight->next_train()}, {twin->next_train()}));
    const SamplerState at3 = straight->sampler_state();
    std::vector<Batch> rest;
    for (int i = 0; i < 3; ++i) rest.push_back(straight->next_train());

    const auto resumed = make_source(masked_config(source));
    resumed->set_sampler_state(SamplerState::from_words(at3.to_words()));
    std::vector<Batch> continued;
    for (int i = 0; i < 3; ++i) continued.push_back(resumed->next_train());
    CHECK(same_batches(continued, rest));
    CHECK(resumed->sampler_state() == straight->sampler_state());
    // Consecutive batches differ (the masks are not reused).
    CHECK_FALSE(same_batches({rest[0]}, {rest[1]}));
  }
}

TEST_CASE("config: a bidirectional model gets the mask token in its vocabulary", "[masking]") {
  CHECK(load_config({}, {}).model.vocab == 256);
  const RunConfig bidirectional = load_config({}, {"model.causal=false"});
  CHECK(bidirectional.model.vocab == kMaskedVocabSize);
  CHECK(kMaskedVocabSize == 257);
  CHECK(bidirectional.data.mask_prob == 0.15);
  // The saved config reads back to the same vocabulary.
  CHECK(config_from_yaml(to_yaml(bidirectional), "saved").model.vocab == 257);
  CHECK(load_config({}, {"model.causal=false", "model.vocab=300"}).model.vocab == 300);
  CHECK(load_config({}, {"data.mask_prob=0.3"}).data.mask_prob == 0.3);

  REQUIRE_THROWS_WITH(load_config({}, {"model.causal=false", "model.vocab=256"}),
                      Contains("model.vocab=256 is too small for model.causal=false") &&
                          Contains("mask token id 256") && Contains(">= 257"));
  REQUIRE_THROWS_WITH(load_config({}, {"data.mask_prob=0"}),
                      Contains("data.mask_prob must be in (0, 1), got 0"));
  REQUIRE_THROWS_WITH(load_config({}, {"model.causal=false", "data.mask_prob=1"}),
                      Contains("data.mask_prob must be in (0, 1), got 1"));
}

TEST_CASE("a tiny bidirectional model learns the masked-token objective",
          "[masking][trainer][slow]") {
  TempDir dir("masked_train");
  const fs::path out = dir.path() / "run";
  RunState run = build_run(tiny_bidirectional(out));
  REQUIRE(run.data->config().masked_tokens);
  REQUIRE(run.model->config().vocab == 257);
  const TrainSummary summary = train(run);

  const std::vector<double> losses = logged_losses(out);
  REQUIRE(losses.size() == 40);
  // The first step predicts 257 classes about uniformly.
  CHECK(losses.front() == Approx(std::log(257.0)).margin(0.3));
  const double first = (losses[0] + losses[1] + losses[2]) / 3;
  const double last = (losses[37] + losses[38] + losses[39]) / 3;
  INFO("first losses " << first << ", last " << last);
  CHECK(last < first - 1.5);  // below the uniform 5.55 toward the unigram entropy 3.02

  REQUIRE(std::isfinite(summary.final_val_loss));
  CHECK(summary.final_val_loss < std::log(257.0) - 1.0);
  // Evaluation is deterministic: a second call and the reloaded checkpoint agree exactly.
  const std::vector<EvalPoint> again =
      evaluate(*run.model, *run.data, {32, 64}, EvalAmount{.batches = 2});
  CHECK(again[0].loss == summary.final_val_loss);
  CHECK(std::isfinite(again[1].loss));
  CHECK(again[0].tokens > 0);
  const fs::path ckpt = checkpoint_path(out / "checkpoints", 40);
  RunState loaded = load_run_for_inference(ckpt);
  CHECK(evaluate(*loaded.model, *loaded.data, {32}, EvalAmount{.batches = 2})[0].loss ==
        summary.final_val_loss);

  // Sampling refuses the bidirectional model, in memory and from its checkpoint.
  REQUIRE_THROWS_WITH(generate(*run.model, {65, 66}, SampleOptions{}),
                      Contains("sampling needs a causal model (model.causal: true)"));
  REQUIRE_THROWS_AS(generate(*loaded.model, {65}, SampleOptions{}), UsageError);
}

TEST_CASE("a bidirectional run resumes bit-exactly", "[masking][trainer]") {
  TempDir straight("masked_straight"), resumed("masked_resumed");
  const std::vector<std::string> shorter = {"train.steps=6", "train.checkpoint_every=3",
                                            "train.eval_every=3", "model.dropout=0.1"};
  RunState a = build_run(tiny_bidirectional(straight.path(), shorter));
  train(a);
  RunState b = build_run(tiny_bidirectional(resumed.path(), shorter));
  const fs::path at3 = checkpoint_path(straight.path() / "checkpoints", 3);
  restore_run(b, load_checkpoint(at3), at3);
  train(b);
  const auto pa = a.model->parameters(), pb = b.model->parameters();
  REQUIRE(pa.size() == pb.size());
  for (std::size_t i = 0; i < pa.size(); ++i) {
    INFO(pa[i].name);
    REQUIRE(pa[i].tensor.to_vector() == pb[i].tensor.to_vector());
  }
  const std::vector<double> la = logged_losses(straight.path()), lb = logged_losses(resumed.path());
  REQUIRE(la.size() == 6);
  REQUIRE(lb.size() == 3);
  CHECK(std::vector<double>(la.begin() + 3, la.end()) == lb);
}
