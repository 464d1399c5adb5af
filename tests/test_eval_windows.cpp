// How much an evaluation reads and how it scores: the whole validation split at every
// length, a task's sequence count, and sliding windows (--stride) that score every token
// exactly once with at least L - S tokens of context.
#include <catch2/catch.hpp>
#include <numeric>
#include <string>
#include <vector>

#include "data/batch.h"
#include "data/sampler.h"
#include "test_batches.h"
#include "tests/test_files.h"
#include "tests/tiny_run.h"
#include "train/evaluate.h"
#include "train/trainer.h"

using namespace relpos;
using testing::pseudo_random_text;
using testing::TempDir;

namespace {

// A tiny run on a corpus of 40,000 bytes whose last 2,000 are the validation split.
RunState tiny_corpus_run(const TempDir& box, std::int64_t* validation_tokens) {
  const std::string file = box.write("corpus.txt", pseudo_random_text(40000, 99)).string();
  RunState run =
      build_run(testing::tiny_run_config({"data.source=" + file, "data.val_fraction=0.05"}));
  *validation_tokens = 2000;
  return run;
}

}  // namespace

TEST_CASE("sliding windows score every token after the first exactly once", "[eval][data]") {
  std::vector<std::int64_t> tokens(103);
  std::iota(tokens.begin(), tokens.end(), 0);  // token value = its index
  const TokenSequence sequence(tokens, 256);
  for (const auto& [length, stride] : std::vector<std::pair<std::int64_t, std::int64_t>>{
           {10, 10}, {10, 3}, {10, 1}, {7, 5}, {16, 16}}) {
    INFO("length " << length << ", stride " << stride);
    const std::vector<Batch> batches = sequential_windows(sequence, length, 4, 1000, stride);
    const std::int64_t windows = (102 - length) / stride + 1;
    REQUIRE(sequential_window_count(tokens.size(), length, stride) == windows);
    std::vector<std::int64_t> scored;
    std::int64_t window = 0;
    for (const Batch& batch : batches)
      for (std::int64_t row = 0; row < batch.inputs.size(0); ++row, ++window) {
        const std::int64_t* in = batch.inputs.data<std::int64_t>() + row * length;
        const std::int64_t* t = batch.targets.data<std::int64_t>() + row * length;
        REQUIRE(in[0] == window * stride);  // a window every `stride` tokens
        for (std::int64_t p = 0; p < length; ++p) {
          if (t[p] == kIgnoreTarget) continue;
          REQUIRE(t[p] == in[p] + 1);
          // Context of at least L - S tokens, but in the first window.
          if (window > 0) REQUIRE(p >= length - stride);
          scored.push_back(t[p]);
        }
      }
    REQUIRE(window == windows);
    // 1, 2, ..., L + (K - 1) S, each once and in order.
    std::vector<std::int64_t> expected(static_cast<std::size_t>(length + (windows - 1) * stride));
    std::iota(expected.begin(), expected.end(), 1);
    REQUIRE(scored == expected);
  }
  // Stride L is the non-overlapping protocol, batch for batch.
  REQUIRE(testing::same_batches(sequential_windows(sequence, 10, 4, 1000, 10),
                                sequential_windows(sequence, 10, 4, 1000)));
  REQUIRE_THROWS_WITH(sequential_windows(sequence, 10, 4, 1000, 11),
                      Catch::Contains("stride 11 must be in [1, 10]"));
}

TEST_CASE("evaluate reads the whole validation split at every length", "[eval]") {
  const TempDir box("eval_whole");
  std::int64_t n = 0;
  RunState run = tiny_corpus_run(box, &n);
  const std::vector<EvalPoint> points = evaluate(*run.model, *run.data, {16, 48, 100}, {});
  REQUIRE(points.size() == 3);
  for (const EvalPoint& p : points) {
    INFO("length " << p.length);
    CHECK(p.sequences == (n - 1) / p.length);
    CHECK(p.tokens == (n - 1) / p.length * p.length);
    CHECK(p.bytes == p.tokens);
  }
  // A batch limit still limits (2 rows of 16 per batch at the training length).
  REQUIRE(evaluate(*run.model, *run.data, {16}, {.batches = 3})[0].tokens == 3 * 2 * 16);
}

TEST_CASE("evaluate: stride L equals the non-overlapping protocol exactly", "[eval]") {
  const TempDir box("eval_stride");
  std::int64_t n = 0;
  RunState run = tiny_corpus_run(box, &n);
  for (const std::int64_t length : {16, 40}) {
    INFO("length " << length);
    const EvalPoint plain = evaluate(*run.model, *run.data, {length}, {})[0];
    const EvalPoint strided = evaluate(*run.model, *run.data, {length}, {.stride = length})[0];
    REQUIRE(strided.loss == plain.loss);  // bit for bit
    REQUIRE(strided.tokens == plain.tokens);
    REQUIRE(strided.sequences == plain.sequences);
  }
}

TEST_CASE("evaluate: a stride run scores every token once and reports the loss by position",
          "[eval]") {
  const TempDir box("eval_positions");
  std::int64_t n = 0;
  RunState run = tiny_corpus_run(box, &n);
  const std::int64_t length = 32, stride = 8;
  const EvalPoint p =
      evaluate(*run.model, *run.data, {length}, {.stride = stride, .by_position = true})[0];
  const std::int64_t windows = (n - 1 - length) / stride + 1;
  REQUIRE(p.sequences == windows);
  REQUIRE(p.tokens == length + (windows - 1) * stride);  // tokens 1 ... that, once each
  REQUIRE(p.loss_by_position.size() == static_cast<std::size_t>(length));
  double sum = 0.0;
  for (std::int64_t k = 0; k < length; ++k) {
    // The first window scores every position; the others only their last `stride`.
    CHECK(p.tokens_by_position[k] == (k < length - stride ? 1 : windows));
    sum += p.loss_by_position[k] * static_cast<double>(p.tokens_by_position[k]);
  }
  CHECK(sum / static_cast<double>(p.tokens) == Approx(p.loss).epsilon(1e-6));
  // Non-overlapping windows score every position of every window.
  const EvalPoint plain = evaluate(*run.model, *run.data, {length}, {.by_position = true})[0];
  for (std::int64_t k = 0; k < length; ++k) CHECK(plain.tokens_by_position[k] == (n - 1) / length);
}

TEST_CASE("evaluate: a task is scored on at least the sequences asked for", "[eval]") {
  RunState run = build_run(testing::tiny_run_config({"data.source=offset_lookup"}));
  for (const std::int64_t length : {16, 64}) {
    INFO("length " << length);  // 2 rows a batch at 16, 1 at 64
    const EvalPoint p = evaluate(*run.model, *run.data, {length}, {.sequences = 256})[0];
    CHECK(p.sequences == 256);
    CHECK(p.exact_match >= 0.0);
  }
  CHECK(evaluate(*run.model, *run.data, {16}, {.sequences = 5})[0].sequences == 6);
  REQUIRE_THROWS_WITH(evaluate(*run.model, *run.data, {16}, {.stride = 8}),
                      Catch::Contains("synthetic task of independent sequences"));
}
