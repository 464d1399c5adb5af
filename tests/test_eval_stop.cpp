// A stop request during an evaluation is honoured between its batches: the trainer's
// periodic evaluation asks before each batch, so SIGTERM never waits for a long one.
#include <catch2/catch.hpp>

#include "train/config/config.h"
#include "train/evaluate.h"
#include "train/trainer.h"

using namespace relpos;

TEST_CASE("evaluate: a stop request ends the evaluation before its next batch",
          "[evaluate][stop]") {
  const RunConfig config =
      load_config({}, {"model.d_model=16", "model.n_layers=1", "model.n_heads=2", "model.d_ff=32",
                       "data.seq_len=16", "data.batch_size=2", "train.threads=1"});
  RunState run = build_run(config);
  run.model->set_training(true);
  int asked = 0;
  const auto stop_at_fourth = [&] { return ++asked == 4; };
  REQUIRE(evaluate(*run.model, *run.data, {16}, 50, stop_at_fourth).empty());
  REQUIRE(asked == 4);             // three batches evaluated, the fourth never started
  REQUIRE(run.model->training());  // the model is left as it was found
  asked = 0;
  const auto points = evaluate(*run.model, *run.data, {16}, 5, [&] { return ++asked < 0; });
  REQUIRE(points.size() == 1);
  REQUIRE(asked == 5);
  REQUIRE(points.front().tokens == 5 * 2 * 16);
}
