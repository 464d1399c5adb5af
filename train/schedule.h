#pragma once
// When a training run logs, evaluates, saves and stops (train.log_every, eval_every,
// checkpoint_every and steps; SIGINT, SIGTERM and SIGHUP), and its learning rate at each step.
#include <cstdint>

#include "optim/schedule.h"
#include "train/config/config.h"
#include "train/stop_signal.h"

namespace relpos {

class Schedule {
 public:
  // Installs the stop-signal handlers for the life of the schedule (StopSignals).
  explicit Schedule(const RunConfig& config);

  // Steps count from 1: `step` is the number of steps done.
  bool done(std::int64_t step) const { return step >= steps_; }
  // The learning rate of the step after `step`, halved once per rollback.
  double lr(std::int64_t step, std::int64_t lr_halvings) const;
  bool log(std::int64_t step) const { return step % log_every_ == 0 || step == steps_; }
  bool evaluate(std::int64_t step) const { return step % eval_every_ == 0 || step == steps_; }
  // A checkpoint after `step`: periodic, at the end, and before stopping on a signal.
  bool save(std::int64_t step, int stop_signal) const {
    return stop_signal != 0 || step % checkpoint_every_ == 0 || step == steps_;
  }
  // The signal that asked the run to stop after its current step, or 0. Every rank
  // gets the same answer (a request on any rank stops them all at the same step), so
  // every rank calls it once per step.
  int stop_signal() const;
  // The signal that asked this process to stop, or 0: no collective, for a check
  // between the batches of an evaluation (evaluate asks it only in a single process).
  int stop_requested_here() const { return signals_.requested(); }

 private:
  std::int64_t steps_, log_every_, eval_every_, checkpoint_every_;
  bool deterministic_reduce_;
  LrSchedule lr_;
  StopSignals signals_;
};

}  // namespace relpos
