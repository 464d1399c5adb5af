// The in-context copy check (train/copy_check.h): the sequences' layout, and that a model
// which cannot see back D tokens (a sliding window, or segments without memory) gains
// exactly nothing from the first occurrence, while the same weights that can see it do.
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "autograd/error.h"
#include "autograd/ops/loss.h"
#include "tests/tiny_run.h"
#include "train/copy_check.h"

using namespace relpos;

namespace {

// 3,000 bytes of varied text: letters drawn from a seeded generator.
TokenSequence varied_text() {
  Rng rng(7);
  std::string text;
  for (int i = 0; i < 3000; ++i) text += static_cast<char>('a' + rng.below(26));
  return TokenSequence::from_bytes(text);
}

TransformerLM tiny_model(const std::vector<std::string>& changes) {
  std::vector<std::string> all = {"model.position.scheme=alibi"};
  all.insert(all.end(), changes.begin(), changes.end());
  Rng init(3);
  return TransformerLM(testing::tiny_run_config(all).model, init);
}

std::vector<std::int64_t> row(const Tensor& t, std::int64_t r) {
  const std::int64_t n = t.size(1);
  const std::int64_t* p = t.data<std::int64_t>() + r * n;
  return {p, p + n};
}

}  // namespace

TEST_CASE("copy check: a span, the text after it, the span again; the control differs first",
          "[copy_check]") {
  const TokenSequence text = varied_text();
  Rng rng(1);
  const CopyBatch b = copy_batch(text, 4, 10, 3, rng);
  REQUIRE(b.repeat.inputs.size(1) == 13);  // D + N − 1
  for (std::int64_t r = 0; r < 3; ++r) {
    const auto in = row(b.repeat.inputs, r), target = row(b.repeat.targets, r);
    const auto control = row(b.control.inputs, r), control_target = row(b.control.targets, r);
    for (int k = 0; k < 3; ++k)
      CHECK(in[10 + k] == in[k]);  // the repeat (its last token is a target)
    CHECK(target[12] == in[3]);
    for (std::size_t i = 0; i < 13; ++i) {
      // Scored: the repeat's tokens 1 .. N − 1, predicted from inputs 10, 11, 12.
      CHECK((target[i] != kIgnoreTarget) == (i >= 10));
      CHECK(control_target[i] == target[i]);
      if (i >= 4) CHECK(control[i] == in[i]);
    }
    CHECK(std::vector<std::int64_t>(control.begin(), control.begin() + 4) !=
          std::vector<std::int64_t>(in.begin(), in.begin() + 4));
  }
  CHECK_THROWS_WITH(copy_batch(text, 4, 3, 1, rng),
                    Catch::Contains("distance 3 must be >= the span 4"));
  CHECK_THROWS_WITH(copy_batch(text, 1, 3, 1, rng), Catch::Contains("span must be >= 2"));
  CHECK_THROWS_WITH(copy_batch(text, 4, 3000, 1, rng),
                    Catch::Contains("cannot hold distance 3000"));
}

TEST_CASE("copy check: no gain where the model cannot see the first occurrence", "[copy_check]") {
  const TokenSequence text = varied_text();
  // A sliding window of 8: the repeat at D = 20 sees nothing of the first span.
  TransformerLM windowed = tiny_model({"model.attention_window=[8]"});
  const auto far = copy_check(windowed, text, 4, {20, 4}, 6, 3, 11);
  REQUIRE(far.size() == 2);
  CHECK(far[0].sequences == 6);
  CHECK(far[0].tokens == 18);
  CHECK(far[0].gain() == Approx(0.0).margin(1e-12));
  CHECK(far[1].gain() != Approx(0.0).margin(1e-4));  // D = 4: within the window
  // The same weights without the window see it at D = 20.
  TransformerLM full = tiny_model({});
  const auto seen = copy_check(full, text, 4, {20}, 6, 3, 11);
  CHECK(seen[0].gain() != Approx(0.0).margin(1e-4));

  // Read as segments of 8: without memory the repeat (inputs 20..22, segment 2) sees
  // nothing before input 16; with a memory of 16 it sees the whole past, as one window does.
  const auto segments = copy_check(full, text, 4, {20}, 6, 3, 11, {8, 0, 0});
  CHECK(segments[0].gain() == Approx(0.0).margin(1e-12));
  const auto memory = copy_check(full, text, 4, {20}, 6, 3, 11, {8, 16, 0});
  CHECK(memory[0].mem_len == 16);
  CHECK(memory[0].loss_repeat == Approx(seen[0].loss_repeat).epsilon(1e-5));
  CHECK(memory[0].loss_control == Approx(seen[0].loss_control).epsilon(1e-5));
  CHECK_THROWS_WITH(copy_check(full, text, 4, {20}, 6, 3, 11, {0, 16, 0}),
                    Catch::Contains("a memory needs the sequences read as segments"));
}
