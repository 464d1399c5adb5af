#pragma once
// Bounds on a config's sizes, checked before anything is allocated: an estimate of the
// memory a run needs (parameters, gradients, optimizer state, activations), computed in
// floating point so that no product of sizes can overflow, and the machine's free memory.
#include <cstdint>
#include <string>

#include "train/config/config.h"

namespace relpos {

// Hard caps, whatever the machine (docs/config.md).
inline constexpr std::int64_t kMaxLayers = 1024;   // model.n_layers
inline constexpr std::int64_t kMaxThreads = 1024;  // train.threads
// No estimate may exceed this many bytes (2^62): every tensor's element count and byte
// size, both products of config sizes, then fit an int64 with room to spare.
inline constexpr double kMaxEstimateBytes = 4611686018427387904.0;

// Bytes, as doubles: exact enough for a bound, and never wrapping around.
struct MemoryEstimate {
  double parameters = 0;   // the model's parameters (f32) and position tables
  double training = 0;     // gradients and optimizer state
  double activations = 0;  // the larger of a training step and the longest evaluation
  double corpus = 0;       // loading data.source's file (corpus_load_bytes); 0 for a task
  double total() const { return parameters + training + activations + corpus; }
  // "about 1.2 GiB (parameters 0.4 GiB from model.vocab=..., ...; activations ...)"
  std::string describe(const RunConfig& config) const;
};

// An upper-bound estimate for a validated config (docs/config.md, "Memory").
MemoryEstimate estimate_memory(const RunConfig& config);

// Throws a UsageError naming the keys when the estimate exceeds kMaxEstimateBytes
// (sizes whose products overflow); called by validate().
void require_bounded_sizes(const RunConfig& config);

// Bytes this process may use: $RELPOS_MEMORY_LIMIT (bytes) when set, else MemAvailable of
// /proc/meminfo, else the free physical pages.
double available_memory_bytes();

// Throws a UsageError naming the keys and the estimate when the run would not fit in
// available_memory_bytes(), or, with the libraries' working buffers added
// (library_working_bytes), under the process's tightest memory limit
// (process_memory_limit, train/process_memory.h). Called before a run allocates its
// model or data.
void require_fits_in_memory(const RunConfig& config);

}  // namespace relpos
