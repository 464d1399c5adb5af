#include "train/trainer.h"

#include <fmt/format.h>

#include <limits>

#include "autograd/precision.h"
#include "train/divergence.h"
#include "train/evaluate.h"
#include "train/run_output.h"
#include "train/schedule.h"
#include "train/stop_signal.h"
#include "train/train_step.h"

namespace relpos {
namespace {

// The validation loss at the training length, in the run's precision, given to
// output.evaluated; a stop request cuts it short (the step's checkpoint is saved next).
void evaluate_now(const RunState& run, const Schedule& schedule, RunOutput& output, bool record) {
  const PrecisionScope precision(run.precision);
  const std::vector<EvalPoint> points =
      evaluate(*run.model, *run.data, {run.config.data.seq_len},
               EvalAmount{.batches = run.config.train.eval_batches},
               [&] { return schedule.stop_requested_here() != 0; });
  if (points.empty())
    return output.say(fmt::format("relpos: the evaluation at step {} was cut short by {}", run.step,
                                  signal_name(schedule.stop_requested_here())));
  output.evaluated(run.step, points.front(), record);
}

}  // namespace

TrainSummary train(RunState& run, RunStart start) {
  TrainStep step(run);  // refuses, on every rank, what these ranks cannot train
  RunOutput output(run, start);
  run.model->set_training(true);
  const Schedule schedule(run.config);
  Divergence divergence(run, output);
  const std::int64_t step_at_start = run.step;
  double loss = std::numeric_limits<double>::quiet_NaN();  // none trained yet
  while (!schedule.done(run.step)) {
    const double lr = schedule.lr(run.step, run.lr_halvings);
    const StepResult result = step.compute();
    loss = result.loss;
    if (const auto why = divergence.in_step(result)) {
      divergence.roll_back(run.step + 1, *why);
      continue;
    }
    run.optimizer->step(lr);
    if (const auto why = divergence.in_update(result)) {
      divergence.roll_back(run.step + 1, *why);
      continue;
    }
    ++run.step;
    output.step_done(run, lr, result, schedule.log(run.step));
    if (schedule.evaluate(run.step)) evaluate_now(run, schedule, output, true);
    const int stop = schedule.stop_signal();
    if (schedule.save(run.step, stop) && !divergence.save_or_roll_back()) continue;
    if (stop != 0) {
      const TrainSummary summary = output.finish(run, loss);
      throw StopRequested(
          stop, fmt::format(
                    "stopped by {} after step {} of {}: saved {} and {}; continue with --resume {}",
                    signal_name(stop), summary.steps, run.config.train.steps,
                    divergence.last_good()->string(), output.summary_path().string(),
                    output.folder().string()));
    }
  }
  if (const auto same = step.confirm_same_state()) output.say(*same);
  // Resumed at or past the last step: nothing trained, but the summary still reports the
  // model's validation loss (metrics.jsonl already holds it).
  if (run.step == step_at_start) evaluate_now(run, schedule, output, false);
  return output.finish(run, loss);
}

}  // namespace relpos
