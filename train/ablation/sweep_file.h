#pragma once
// The sweep file of `relpos ablate SWEEP.yaml` (docs/ablation.md): the config variants
// to train, their seeds and evaluation lengths, and the runs they resolve to.
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "train/config/config.h"

namespace relpos {

struct AblationVariant {
  std::string name;                    // [A-Za-z0-9_.-]+, unique in the sweep
  std::string where;                   // "sweep.yaml:12", for error messages
  std::vector<std::string> files;      // extra config files, resolved against the sweep file
  std::vector<std::string> overrides;  // key.path=value, after the sweep's own
};

struct AblationSweep {
  std::filesystem::path file;              // the sweep file itself
  std::vector<std::string> base;           // config files, resolved against the sweep file
  std::vector<std::string> overrides;      // applied to every variant, before its own
  std::filesystem::path out_dir;           // relative to the current directory
  std::vector<std::int64_t> eval_lengths;  // sorted, unique; each variant adds its training length
  std::int64_t eval_batches = 0;           // batches per length; 0: each run's train.eval_batches
  // eval_batches: all — the whole validation split of a corpus at every length, and
  // eval_sequences sequences of a task (EvalAmount in train/evaluate.h).
  bool eval_whole = false;
  std::int64_t eval_sequences = 256;
  // Memory evaluation: each run is also scored on the validation text read as streams at
  // its training length, with each segment memory length of eval_mem_lengths (a kNN layer
  // keeping its trained size) and, where the model has a kNN layer, each kNN memory size of
  // eval_knn_sizes without segment memory (VariantResult::memory). Both sorted and unique;
  // eval_knn_sizes alone implies eval_mem_lengths [0].
  std::vector<std::int64_t> eval_mem_lengths;
  std::vector<std::int64_t> eval_knn_sizes;
  // eval_copy: {span, distances, sequences}: the in-context copy check (train/copy_check.h)
  // of every run at each distance, in one window, or with eval_mem_lengths as segments of
  // the training length at each memory point. copy_span 0: none.
  std::int64_t copy_span = 0;
  std::vector<std::int64_t> copy_distances;  // sorted, unique, each >= copy_span
  std::int64_t copy_sequences = 256;
  std::vector<AblationVariant> variants;
  std::vector<std::uint64_t> seeds;  // empty: one run per variant, with its own train.seed
  std::int64_t jobs = 1;             // runs trained at once, each in a child process

  std::size_t runs_per_variant() const { return seeds.empty() ? 1 : seeds.size(); }
  std::size_t run_count() const { return variants.size() * runs_per_variant(); }
  // Run i is variant i / runs_per_variant() with seed i % runs_per_variant(): its label
  // ("t5", or "t5/seed-1" with seeds) and its folder relative to out_dir (the same text).
  std::string run_label(std::size_t run) const;
};

// Reads and checks a sweep file. Throws a one-line UsageError naming the file,
// the line where yaml-cpp knows it, and the key.
AblationSweep load_sweep(const std::filesystem::path& file);

// Every run's resolved config (base files, the variant's files, the sweep's
// overrides, the variant's overrides; train.out_dir = <out_dir>/<run label>, and
// train.seed = the run's seed where the sweep has seeds), in run order (see run_label). Throws on
// the first invalid one, naming the sweep file:line and the variant, and when a variant's folder
// holds a run of a different config.
std::vector<RunConfig> resolve_variant_configs(const AblationSweep& sweep);

}  // namespace relpos
