#pragma once
// One training step's loss and gradients, on every rank alike: for each micro-batch of
// optim.grad_accum, this rank's rows of the global batch, the segment and kNN memories,
// the run's precision and attention chunk size, forward, loss and backward; then the
// gradient all-reduce over the ranks and the global gradient norm (clipped). The
// training loop (train/trainer.cpp) sees one step, whatever the number of ranks.
#include <cstdint>
#include <optional>
#include <string>

#include "train/distributed/data_parallel.h"
#include "train/run_state.h"

namespace relpos {

struct StepResult {
  double loss = 0.0;                // the global batch's mean loss, the same on every rank
  double grad_norm = 0.0;           // of the summed gradients, before clipping to optim.grad_clip
  double all_reduce_seconds = 0.0;  // in the gradient all-reduce; 0 with one rank
  std::int64_t tokens = 0;          // of the global batches
};

class TrainStep {
 public:
  // Refuses (alike on every rank) what cannot train on this job's ranks: a batch that
  // does not split evenly, segment or kNN memory under mpirun.
  explicit TrainStep(RunState& run);
  // Zeroes the gradients and computes those of step run.step + 1 into the parameters'
  // .grad (summed over the ranks, then clipped), advancing run.tokens_seen by the
  // global batch's tokens. Changes neither the parameters nor run.step.
  StepResult compute();
  // With several ranks, checks that they all hold the same parameters and optimizer
  // state, and returns the line that says so; nullopt with one rank.
  std::optional<std::string> confirm_same_state() const;

 private:
  void add_micro_batch(std::int64_t micro, StepResult& result);  // its forward and backward

  RunState& run_;
  int world_;
  std::optional<GradientAllReduce> all_reduce_;  // with several ranks
};

}  // namespace relpos
