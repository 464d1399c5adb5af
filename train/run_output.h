#pragma once
// What a training run writes and prints. Rank 0 alone owns the run folder (train.out_dir,
// held locked for the run) and writes config.yaml, metrics.jsonl, the checkpoints and
// summary.json, and prints progress; every other rank only takes part in the collectives.
#include <chrono>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "train/evaluate.h"
#include "train/metrics.h"
#include "train/run_state.h"
#include "train/run_summary.h"
#include "train/store/checkpoint.h"
#include "train/store/run_folder.h"
#include "train/store/run_start.h"
#include "train/train_step.h"

namespace relpos {

class RunOutput {
 public:
  // Takes the run folder (RunStart::resume when run was restored, unless --overwrite moves
  // aside the run in out_dir for a checkpoint from elsewhere; else `start`), starts its
  // writes (train/store/run_start.h: config.yaml, config.<step>.yaml, metrics.jsonl from
  // run.step with the settings a resume changed; a resume's wait for its first
  // checkpoint), and prints the run's first line. A UsageError on rank 0 is raised on
  // every rank.
  RunOutput(const RunState& run, RunStart start);

  const std::filesystem::path& folder() const { return out_; }
  std::filesystem::path checkpoints() const { return out_ / "checkpoints"; }
  std::filesystem::path summary_path() const { return out_ / "summary.json"; }
  void say(const std::string& line);          // one line, on rank 0
  void record(const nlohmann::json& record);  // one metrics.jsonl line, on rank 0
  void rewind_metrics(std::int64_t step);     // drops the records after `step` (a rollback)

  // A step done: counted into the logging window. `log`: writes the window's record
  // (loss, lr, gradient norm, tokens/s) and the progress line, and starts a new window.
  void step_done(const RunState& run, double lr, const StepResult& step, bool log);
  // An evaluation at the training length: recorded in metrics.jsonl when `record`,
  // printed, and the summary's validation loss.
  void evaluated(std::int64_t step, const EvalPoint& point, bool record);
  // Saves `state` as the checkpoint of `step` (rank 0; a resume's first one also starts
  // its writes), keeps train.keep_checkpoints of them, and returns its path once every
  // rank may read it.
  std::filesystem::path save_checkpoint(const Checkpoint& state, std::int64_t step);

  // Ends the progress display and writes summary.json (rank 0); `loss` is the last
  // step's training loss. Returns the summary.
  TrainSummary finish(const RunState& run, double loss);

 private:
  const RunConfig& config_;
  bool root_;
  std::optional<RunFolder> folder_;          // rank 0
  std::optional<RunStartWrites> run_files_;  // rank 0: metrics.jsonl, config files, summary
  std::filesystem::path out_;
  std::chrono::steady_clock::time_point start_time_;
  Progress progress_;
  TrainSummary summary_;
  std::int64_t step_at_start_, tokens_at_start_;
  double all_reduce_seconds_ = 0.0;  // summed over the steps of this process
  // The logging window: since the last progress line.
  std::chrono::steady_clock::time_point window_start_;
  std::int64_t window_tokens_ = 0, window_steps_ = 0;
  double window_all_reduce_seconds_ = 0.0;
};

}  // namespace relpos
