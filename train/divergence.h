#pragma once
// Keeping NaN and Inf out of the optimizer step and out of checkpoints, and what a run
// does when a step diverges: it stops with an error naming the step and the last good
// checkpoint, or (train.on_divergence=rollback) reloads that checkpoint and halves the
// learning rate, up to train.max_rollbacks times.
#include <filesystem>
#include <map>
#include <optional>
#include <string>

#include "autograd/tensor.h"
#include "train/run_output.h"
#include "train/run_state.h"
#include "train/train_step.h"

namespace relpos {

// The name of the first floating tensor (in name order) holding a NaN or an
// infinity; nullopt when every one is finite. Integer tensors are skipped.
std::optional<std::string> first_non_finite(const std::map<std::string, Tensor>& tensors);

class Divergence {
 public:
  // The last good checkpoint is run.resumed_from until the run saves one.
  Divergence(RunState& run, RunOutput& output);

  // What is not finite in a step's loss and gradient norm, or after the optimizer's
  // update of it; nullopt when all is finite. Every rank finds the same (the values
  // are global).
  std::optional<std::string> in_step(const StepResult& step) const;
  std::optional<std::string> in_update(const StepResult& step) const;
  // Saves run.step's checkpoint unless a parameter or optimizer state is not finite;
  // then rolls back (see roll_back) and returns false.
  bool save_or_roll_back();
  // Step `step` (counting from 1) diverged for the reason `what`: throws a
  // CollectiveError (alike on every rank), or rolls run back to the last good checkpoint.
  void roll_back(std::int64_t step, const std::string& what);
  const std::optional<std::filesystem::path>& last_good() const { return last_good_; }

 private:
  RunState& run_;
  RunOutput& output_;
  std::optional<std::filesystem::path> last_good_;  // a checkpoint known to be finite
};

}  // namespace relpos
