#pragma once
// The state of a run and its life cycle: built from a config, restored from a checkpoint
// (resume and rollback), loaded for inference (eval, sample, inspect), snapshotted into a
// checkpoint; and the one config diff, between a checkpoint's saved config and the run's,
// that resume and the ablation runner both use.
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "autograd/precision.h"
#include "data/data_source.h"
#include "layers/knn_memory.h"
#include "layers/transformer.h"
#include "optim/optimizer.h"
#include "train/config/config.h"
#include "train/store/checkpoint.h"

namespace relpos {

// One setting that differs between two configs, as YAML text before and after.
struct ConfigChange {
  std::string key;  // e.g. "optim.lr"
  std::string before, after;
};

// Every key (in schema order) whose value differs between `before` and `after`.
std::vector<ConfigChange> config_changes(const RunConfig& before, const RunConfig& after);

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
  std::filesystem::path initialised_from;    // the checkpoint initialise_from loaded; or empty
  // data.tokenizer sentencepiece: the model's bytes, copied into the run folder and into
  // every checkpoint; empty for bytes.
  std::string tokenizer_model;
};

// Builds a fresh run state (model initialised from train.seed, then placed on
// train.device with its optimizer state). A SentencePiece tokenizer is read from
// data.tokenizer.model, or from `tokenizer_model` (its bytes, named `tokenizer_origin` in
// messages) when that is not empty.
RunState build_run(const RunConfig& config, const std::string& tokenizer_model = "",
                   const std::string& tokenizer_origin = "");
// Builds the run a checkpoint was saved from (its config, optionally with the data
// source replaced) and loads its parameters: for eval, sample and inspect. It runs
// on the CPU whatever train.device the run used, and reads no training stream
// (train.mem_len 0: `relpos eval --mem-len` gives the memory).
// `overrides` (key.path=value, as on the train command line) change the saved config; an
// architecture key among them is a UsageError, and the changes are kept in config_changes.
RunState load_run_for_inference(const std::filesystem::path& checkpoint,
                                const std::string& data_source = "",
                                const std::vector<std::string>& overrides = {});
// Restores parameters, optimizer state (fresh when the resume changes optim.name, with one
// line on stderr), data stream and counters from a checkpoint, after checking that it
// matches the configured architecture (every model.* key but model.dropout,
// model.attention and model.position.rope_scaling.*); records the other changed settings.
void restore_run(RunState& run, const Checkpoint& checkpoint, const std::filesystem::path& source);
// What a rollback reloads: parameters, optimizer state, data stream, segment and kNN
// memories, the step counters and lr_halvings of `checkpoint` (one of this run's);
// the optimizer keeps its state when `optimizer_state` is false. Values out of range
// (a sampler state, lr_halvings) are a UsageError naming `source`.
void restore_training_state(RunState& run, const Checkpoint& checkpoint,
                            const std::filesystem::path& source, bool optimizer_state = true);
// Loads a checkpoint to restore into `run`: its saved architecture and declared
// parameter shapes are checked against run's model before any tensor is allocated.
Checkpoint load_checkpoint_for(const RunState& run, const std::filesystem::path& path);
// `relpos train --init-from`: loads only the parameters of a checkpoint whose architecture
// matches the run's (the rest of its config may differ: records the changes); the run
// keeps its fresh optimizer, data stream and step 0.
void initialise_from(RunState& run, const std::filesystem::path& checkpoint);
Checkpoint snapshot(const RunState& run);

// The model's parameters by name (the tensors themselves, not copies).
std::map<std::string, Tensor> parameter_map(const TransformerLM& model);

// Resolves --resume PATH (or the `option` named): a checkpoint file, or a run directory: its
// newest checkpoint that verifies against its digest; each newer one skipped is one line on
// stderr.
std::filesystem::path resolve_checkpoint(const std::filesystem::path& path,
                                         const std::string& option = "--resume");

}  // namespace relpos
