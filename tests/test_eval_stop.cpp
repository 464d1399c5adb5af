// A stop request during an evaluation is honoured between its batches: the trainer's
// periodic evaluation asks before each batch, so SIGTERM never waits for a long one.
#include <catch2/catch.hpp>

#include "tests/tiny_run.h"
#include "train/config/config.h"
#include "train/evaluate.h"
#include "train/trainer.h"

using namespace relpos;

TEST_CASE("evaluate: a stop request ends the evaluation before its next batch",
          "[evaluate][stop]") {
  RunState run = build_run(testing::tiny_run_config());
  run.model->set_training(true);
  int asked = 0;
  const auto stop_at_fourth = [&] { return ++asked == 4; };
  REQUIRE(evaluate(*run.model, *run.data, {16}, EvalAmount{.batches = 50}, stop_at_fourth).empty());
  REQUIRE(asked == 4);             // three batches evaluated, the fourth never started
  REQUIRE(run.model->training());  // the model is left as it was found
  asked = 0;
  const auto points =
      evaluate(*run.model, *run.data, {16}, EvalAmount{.batches = 5}, [&] { return ++asked < 0; });
  REQUIRE(points.size() == 1);
  REQUIRE(asked == 5);
  REQUIRE(points.front().tokens == 5 * 2 * 16);
}
