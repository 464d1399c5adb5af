#pragma once
// The resolved configuration of a run (docs/config.md). Precedence: defaults <
// YAML files in order < `key.path=value` overrides (each value parsed as YAML).
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "data/data_source.h"
#include "layers/transformer.h"

namespace relpos {

struct OptimConfig {
  std::string name = "adamw";  // sgd | adam | adamw
  double lr = 1e-3;
  double beta1 = 0.9, beta2 = 0.99;
  double eps = 1e-8;
  double weight_decay = 0.1;  // AdamW: decoupled; never on norms, biases or position tables
  double momentum = 0.0;      // sgd
  bool nesterov = false;      // sgd
  double grad_clip = 1.0;     // global L2 norm; 0 disables
  std::int64_t grad_accum = 1;
  // The learning rate of the position parameters (is_position_parameter in
  // layers/transformer.h) is lr × this; 0 freezes them at their initial values.
  double position_lr_scale = 1.0;
};

struct ScheduleConfig {
  std::string name = "warmup_cosine";  // constant | warmup_cosine | warmup_linear
  std::int64_t warmup_steps = 100;
  double min_lr = 1e-4;
};

struct TrainingConfig {
  std::int64_t steps = 1000;
  std::int64_t log_every = 10;
  std::int64_t eval_every = 200;
  std::int64_t eval_batches = 8;
  std::int64_t checkpoint_every = 500;
  std::int64_t keep_checkpoints = 2;
  std::string on_divergence = "stop";  // stop | rollback (to the last good checkpoint, lr / 2)
  std::int64_t max_rollbacks = 3;
  // Segment-recurrent training (Transformer-XL): each layer also attends to this many
  // cached hidden states of the row's previous segments; 0: independent windows.
  std::int64_t mem_len = 0;
  std::uint64_t seed = 0;
  std::int64_t threads = 0;        // 0: all cores
  std::string device = "cpu";      // cpu | cuda
  std::string precision = "fp32";  // fp32 | bf16: of the matrix products (docs/bf16.md)
  // With several MPI ranks: reduce gradients in rank order on rank 0 (bit-identical run to run).
  bool deterministic_reduce = false;
  std::string out_dir = "runs/default";
};

struct EvalConfig {
  std::vector<std::int64_t> lengths;  // extrapolation lengths; empty: the training length only
};

struct RunConfig {
  ModelConfig model;
  DataConfig data;
  OptimConfig optim;
  ScheduleConfig schedule;
  TrainingConfig train;
  EvalConfig eval;
};

// Loads defaults, then each file, then each override; validates the result.
// Throws UsageError with one line naming the file:line (or the override), the
// key and what was expected.
RunConfig load_config(const std::vector<std::string>& files,
                      const std::vector<std::string>& overrides);
// Config and sweep files are read whole, up to this size.
inline constexpr std::size_t kMaxConfigFileBytes = std::size_t{1} << 20;
// The text of a config file; a UsageError naming `what` (e.g. "config file") and the path
// when it cannot be read or is larger than kMaxConfigFileBytes.
std::string read_config_file(const std::string& path, const std::string& what);
// Parses a resolved config saved by to_yaml (e.g. inside a checkpoint);
// `origin` names where it came from for error messages.
// `overrides` (key.path=value) are applied on top, as on the command line.
RunConfig config_from_yaml(const std::string& yaml, const std::string& origin,
                           const std::vector<std::string>& overrides = {});
// The resolved config as YAML, every key present.
std::string to_yaml(const RunConfig& config);
// Cross-field checks (d_model % n_heads, lr > 0, T5 buckets, ...).
void validate(const RunConfig& config);
// train.mem_len > 0 reuses hidden states at distances, so it needs a relative position
// scheme, causal attention and a text corpus: a UsageError naming the keys otherwise.
// Checked when a run is built (build_run), not by validate: a config file may set these
// keys for a run without memory.
void validate_recurrence(const RunConfig& config);
// model.knn_memory reads the data as contiguous streams: a text corpus, not a task.
// Checked by build_run, like validate_recurrence.
void validate_knn_data(const RunConfig& config);

// One key of the schema, as docs/config.md documents it.
struct ConfigKeyInfo {
  std::string path;                  // e.g. "model.position.scheme"
  std::string type;                  // int | uint64 | float | bool | string | enum | list of int
  std::vector<std::string> choices;  // the allowed values of an enum
  std::string default_value;         // as YAML, e.g. "128", "none", "[]"
  std::string meaning;               // one line
};
// Every config key, in schema (and to_yaml) order.
std::vector<ConfigKeyInfo> config_keys();

}  // namespace relpos
