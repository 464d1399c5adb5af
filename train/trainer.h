#pragma once
// The training loop: data -> model -> loss -> backward -> clip -> optimizer, with
// periodic logging, evaluation and checkpoints, and bit-exact resume. Its rooms: the
// run's state (train/run_state.h), one step's loss and gradients on every rank
// (train/train_step.h), when to log, evaluate, save and stop (train/schedule.h), what
// the run writes (train/run_output.h) and divergence rollback (train/divergence.h).
#include "train/run_state.h"
#include "train/run_summary.h"
#include "train/store/run_folder.h"

namespace relpos {

// Trains from run.step to config.train.steps in train.out_dir, holding its lock
// (RunFolder: RunStart::resume after restore_run, else `start`), and writes
// summary.json. When the loss, the gradient norm, the parameters or (before a
// save) the optimizer state turn NaN or Inf, it throws UsageError naming the step
// and the last good checkpoint, or (train.on_divergence=rollback) reloads that
// checkpoint and halves the learning rate. On SIGINT or SIGTERM it finishes the
// step, saves, writes summary.json and throws StopRequested.
TrainSummary train(RunState& run, RunStart start = RunStart::fresh);

}  // namespace relpos
