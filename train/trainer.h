#pragma once
// The training loop: data -> model -> loss -> backward -> clip -> optimizer,
// with periodic logging, evaluation and checkpoints, and bit-exact resume.
#include <filesystem>
#include <memory>
#include <optional>

#include "autograd/precision.h"
#include "data/data_source.h"
#include "layers/transformer.h"
#include "optim/optimizer.h"
#include "train/config/config.h"
#include "train/store/checkpoint.h"
#include "train/store/run_folder.h"

namespace relpos {

struct TrainSummary {
  std::int64_t steps = 0;
  double final_train_loss = 0.0;
  double final_val_loss = 0.0;
  double tokens_per_second = 0.0;
  double wall_seconds = 0.0;
  std::size_t peak_rss_bytes = 0;
  std::size_t peak_tensor_bytes = 0;
  std::int64_t parameters = 0;
  int world_size = 1;                        // MPI ranks that trained it
  double all_reduce_seconds_per_step = 0.0;  // in the gradient all-reduce; 0 with one rank
};

// One setting a resume changed, as YAML text before and after.
struct ConfigChange {
  std::string key;  // e.g. "optim.lr"
  std::string before, after;
};

// The model, optimizer and data of a run, built from a config (and restored
// from a checkpoint when resuming). Shared by train, eval and sample.
struct RunState {
  RunConfig config;
  Device device = Device::cpu;            // train.device: parameters, optimizer buffers and batches
  Precision precision = Precision::fp32;  // train.precision: of the forward's matrix products
  std::unique_ptr<TransformerLM> model;
  std::unique_ptr<Optimizer> optimizer;
  std::unique_ptr<DataSource> data;
  std::int64_t step = 0;
  std::int64_t tokens_seen = 0;
  // train.mem_len > 0: each layer's segment memory (B, M, d_model), detached, that the
  // next training batch attends to; saved in checkpoints. Empty before the first step.
  std::vector<Tensor> memory;
  // model.knn_memory: the kNN layer's memory of earlier training batches, saved in
  // checkpoints (train/knn_state.h). Empty before the first step.
  KnnMemory knn_memory;
  // Rollbacks after divergence so far: the learning rate is scaled by 0.5^lr_halvings.
  std::int64_t lr_halvings = 0;
  std::filesystem::path resumed_from;        // the checkpoint restore_run loaded; empty if none
  std::vector<ConfigChange> config_changes;  // settings that differ from resumed_from's
};

// Builds a fresh run state (model initialised from train.seed, then placed on
// train.device with its optimizer state).
RunState build_run(const RunConfig& config);
// Builds the run a checkpoint was saved from (its config, optionally with the data
// source replaced) and loads its parameters: for eval, sample and inspect. It runs
// on the CPU whatever train.device the run used, and reads no training stream
// (train.mem_len 0: `relpos eval --mem-len` gives the memory).
RunState load_run_for_inference(const std::filesystem::path& checkpoint,
                                const std::string& data_source = "");
// Restores parameters, optimizer state, data stream and counters from a
// checkpoint, after checking that it matches the configured architecture (every
// model.* key but model.dropout and model.attention); records the other changed settings.
void restore_run(RunState& run, const Checkpoint& checkpoint, const std::filesystem::path& source);
// Loads a checkpoint to restore into `run`: its saved architecture and declared
// parameter shapes are checked against run's model before any tensor is allocated.
Checkpoint load_checkpoint_for(const RunState& run, const std::filesystem::path& path);
Checkpoint snapshot(const RunState& run);

// Trains from run.step to config.train.steps in train.out_dir, holding its lock
// (RunFolder: RunStart::resume after restore_run, else `start`), and writes
// summary.json. When the loss, the gradient norm, the parameters or (before a
// save) the optimizer state turn NaN or Inf, it throws UsageError naming the step
// and the last good checkpoint, or (train.on_divergence=rollback) reloads that
// checkpoint and halves the learning rate. On SIGINT or SIGTERM it finishes the
// step, saves, writes summary.json and throws StopRequested.
TrainSummary train(RunState& run, RunStart start = RunStart::fresh);

// Resolves --resume PATH: a checkpoint file, or a run directory: its newest checkpoint
// that verifies against its digest; each newer one skipped is one line on stderr.
std::filesystem::path resolve_checkpoint(const std::filesystem::path& path);

}  // namespace relpos
