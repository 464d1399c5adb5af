// The synthetic tasks' metrics and lengths: answer accuracy and exact match on a hand-made
// batch, the copy/reverse length ranges, right padding that changes nothing (a padded batch
// scores as its sequences one by one, for every position scheme), and randomized positions.
#include <catch2/catch.hpp>
#include <cmath>
#include <set>

#include "autograd/error.h"
#include "autograd/ops/loss.h"
#include "autograd/ops/shape.h"
#include "autograd/tape.h"
#include "data/tasks.h"
#include "layers/position/randomized_positions.h"
#include "layers/transformer.h"
#include "test_helpers.h"
#include "train/answer_accuracy.h"

using namespace relpos;
using relpos::testing::f64;
using relpos::testing::i64;

namespace {

constexpr std::int64_t kIgnore = kIgnoreTarget;

// The string length n of a copy/reverse row: the position of its '|'.
std::int64_t items_of(const Batch& batch, std::int64_t row) {
  const std::int64_t len = batch.inputs.size(1);
  const std::int64_t* in = batch.inputs.data<std::int64_t>() + row * len;
  for (std::int64_t t = 0; t < len; ++t)
    if (in[t] == kSeparator) return t;
  FAIL("row " << row << " has no separator");
  return -1;
}

ModelConfig small_model(const PositionConfig& position) {
  ModelConfig c;
  c.vocab = 128;  // the task alphabet and markers are ASCII
  c.d_model = 16;
  c.n_layers = 2;
  c.n_heads = 2;
  c.d_ff = 32;
  c.position = position;
  return c;
}

}  // namespace

TEST_CASE("answer accuracy and exact match on a hand-made batch", "[tasks][metrics]") {
  // logits (3, 3, 4). Row 0: p1 predicts 2 (target 2, right); p2 ties 1 and 2, the first
  // index (1) is the prediction (target 2, wrong). Row 1: p0 predicts 0, p2 predicts 3,
  // both right. Row 2: nothing scored, so it counts in neither metric.
  const Tensor logits =
      f64({0, 0, 0,      0, /**/ 0, 1, 3, 2, /**/ 0, 5, 5,      1, 4, 1, 2,      3, /**/ 9, 9,
           9, 9, /**/ 0, 0, 1,      2, 1, 0, 0,      0, /**/ 0, 1, 0, 0, /**/ 0, 0, 1,      0},
          {3, 3, 4});
  const Tensor targets =
      i64({kIgnore, 2, 2, /**/ 0, kIgnore, 3, /**/ kIgnore, kIgnore, kIgnore}, {3, 3});
  const AnswerCounts counts = count_answers(logits, targets);
  CHECK(counts.correct == 3);
  CHECK(counts.scored == 4);
  CHECK(counts.exact == 1);
  CHECK(counts.rows == 2);
  CHECK(counts.accuracy() == 0.75);
  CHECK(counts.exact_match() == 0.5);
  // Nothing scored at all: both metrics are NaN.
  const AnswerCounts none =
      count_answers(slice(logits, 0, 2, 3), slice(targets, 0, 2, 3).contiguous());
  CHECK(std::isnan(none.accuracy()));
  CHECK(std::isnan(none.exact_match()));
}

TEST_CASE("copy and reverse draw string lengths from the configured range", "[tasks][data]") {
  for (TaskKind kind : {TaskKind::copy, TaskKind::reverse}) {
    TaskParams params;
    params.min_items = 3;
    params.max_items = 6;
    const TaskGenerator generator(kind, params, 20);
    Rng rng(5);
    std::set<std::int64_t> seen, beyond;
    const Batch train = generator.batch(20, 200, rng);
    for (std::int64_t row = 0; row < 200; ++row) seen.insert(items_of(train, row));
    CHECK(seen == std::set<std::int64_t>{3, 4, 5, 6});
    // Beyond the training length only unseen lengths: (6, 40 / 2].
    const Batch longer = generator.batch(40, 400, rng);
    for (std::int64_t row = 0; row < 400; ++row) beyond.insert(items_of(longer, row));
    CHECK(*beyond.begin() == 7);
    CHECK(*beyond.rbegin() == 20);
    CHECK(beyond.size() == 14);
  }
}

TEST_CASE("bad length ranges are one-line errors naming the parameter", "[tasks][data]") {
  auto make = [](TaskKind kind, std::int64_t min_items, std::int64_t max_items) {
    TaskParams params;
    params.min_items = min_items;
    params.max_items = max_items;
    return TaskGenerator(kind, params, 20);
  };
  CHECK_THROWS_WITH(make(TaskKind::copy, 0, 5), Catch::Contains("min_items must be >= 1, got 0"));
  CHECK_THROWS_WITH(make(TaskKind::copy, 5, 4),
                    Catch::Contains("max_items must be 0 (floor(seq_len / 2)) or >= min_items"));
  CHECK_THROWS_WITH(make(TaskKind::reverse, 1, 11), Catch::Contains("training seq_len 20"));
  CHECK_THROWS_WITH(make(TaskKind::reverse, 11, 0), Catch::Contains("min_items 11"));
  CHECK_THROWS_WITH(make(TaskKind::offset_lookup, 2, 5),
                    Catch::Contains("apply to copy and reverse only"));
  CHECK_NOTHROW(make(TaskKind::copy, 10, 10));
}

TEST_CASE("a right-padded task batch scores exactly as its sequences one by one",
          "[tasks][metrics][positions]") {
  // Causal attention never looks right, and the filler after each answer is not scored:
  // the loss and the answer counts of the batch equal the sums over its rows, each run
  // alone at its own length 2n (string, '|', answer but its last symbol).
  for (const std::string& scheme : position_scheme_names())
    for (const PositionConfig& position : test_position_configs(scheme)) {
      Rng init(3);
      TransformerLM model(small_model(position), init);
      model.set_training(false);
      NoGradGuard no_grad;
      TaskParams params;
      params.min_items = 1;
      params.max_items = 6;
      const TaskGenerator generator(TaskKind::reverse, params, 14);
      Rng rng(9);
      const Batch batch = generator.batch(14, 6, rng);
      const Tensor logits = model.forward(batch.inputs);  // (6, 14, V)
      const double batch_loss =
          cross_entropy(logits, batch.targets, kIgnoreTarget, Reduction::sum).item();
      const AnswerCounts batch_counts = count_answers(logits, batch.targets);
      double row_loss = 0.0;
      AnswerCounts row_counts;
      for (std::int64_t row = 0; row < 6; ++row) {
        const std::int64_t len = 2 * items_of(batch, row);
        const Tensor in = slice(slice(batch.inputs, 0, row, row + 1), 1, 0, len).contiguous();
        const Tensor tg = slice(slice(batch.targets, 0, row, row + 1), 1, 0, len).contiguous();
        const Tensor row_logits = model.forward(in);  // (1, 2n, V)
        row_loss += cross_entropy(row_logits, tg, kIgnoreTarget, Reduction::sum).item();
        row_counts.add(count_answers(row_logits, tg));
      }
      INFO(scheme);
      CHECK(batch_loss == Approx(row_loss).epsilon(1e-5));
      CHECK(batch_counts.correct == row_counts.correct);
      CHECK(batch_counts.scored == row_counts.scored);
      CHECK(batch_counts.exact == row_counts.exact);
      CHECK(batch_counts.rows == row_counts.rows);
      CHECK(batch_counts.rows == 6);
    }
}

TEST_CASE("randomized positions: sorted, distinct, in range, reproducible from the seed",
          "[positions][randomized]") {
  for (const std::uint64_t seed : {1u, 2u, 3u}) {
    const auto a = window_positions(0, 10, 50, true, seed);
    CHECK(a == window_positions(0, 10, 50, true, seed));
    REQUIRE(a.size() == 10);
    CHECK(a.front() >= 0);
    CHECK(a.back() < 50);
    for (std::size_t i = 1; i < a.size(); ++i) CHECK(a[i - 1] < a[i]);
    // A window further on is the tail of the same draw, so q and k agree.
    const auto tail = window_positions(4, 6, 50, true, seed);
    CHECK(std::vector<std::int64_t>(a.begin() + 4, a.end()) == tail);
  }
  CHECK(window_positions(0, 10, 50, true, 1) != window_positions(0, 10, 50, true, 2));
  // max_len == L leaves nothing to choose; out of training, or off, positions are ordinary.
  const std::vector<std::int64_t> ordinary = {3, 4, 5, 6, 7, 8, 9};
  CHECK(window_positions(3, 7, 10, true, 7) == ordinary);
  CHECK(window_positions(3, 7, 50, false, 7) == ordinary);
  CHECK(window_positions(3, 7, 0, true, 7) == ordinary);
  CHECK_THROWS_WITH(window_positions(0, 11, 10, true, 7),
                    Catch::Contains("randomized_max_len >= 11, got 10"));
  // Every position of the range is reachable, and each subset size comes out exact.
  Rng rng(4);
  std::set<std::int64_t> used;
  for (int i = 0; i < 200; ++i)
    for (std::int64_t p : sorted_random_positions(3, 12, rng)) used.insert(p);
  CHECK(used.size() == 12);
  CHECK(sorted_random_positions(12, 12, rng).size() == 12);
  CHECK(sorted_random_positions(0, 12, rng).empty());
}

TEST_CASE(
    "randomized positions change training forwards only, and equal ordinary ones at "
    "max_len == L",
    "[positions][randomized]") {
  Rng tokens_rng(2);
  Tensor tokens = Tensor::empty({2, 8}, DType::i64);
  for (std::int64_t i = 0; i < tokens.numel(); ++i)
    tokens.data<std::int64_t>()[i] = static_cast<std::int64_t>(tokens_rng.below(128));
  for (const std::string scheme : {"sinusoidal", "learned", "rope"}) {
    INFO(scheme);
    PositionConfig plain_position;
    plain_position.scheme = scheme;
    PositionConfig same = plain_position, wide = plain_position;
    same.set("randomized_max_len", std::int64_t{8});
    wide.set("randomized_max_len", std::int64_t{64});
    Rng a(1), b(1), c(1);
    TransformerLM plain(small_model(plain_position), a), at_l(small_model(same), b),
        randomized(small_model(wide), c);
    NoGradGuard no_grad;
    for (TransformerLM* m : {&plain, &at_l, &randomized}) m->set_dropout_seed(11);
    const auto reference = plain.forward(tokens).to_vector();
    CHECK(at_l.forward(tokens).to_vector() == reference);
    CHECK(randomized.forward(tokens).to_vector() != reference);
    randomized.set_dropout_seed(12);  // another step, another draw
    const auto other = randomized.forward(tokens).to_vector();
    randomized.set_dropout_seed(11);
    CHECK(randomized.forward(tokens).to_vector() != other);
    randomized.set_training(false);  // evaluation: positions 0..L-1
    CHECK(randomized.forward(tokens).to_vector() == reference);
  }
}
