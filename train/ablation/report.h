#pragma once
// The ablation report: runs grouped by variant (mean, its 95% t interval, sample standard
// deviation and n over seeds; statistics.h), each variant's turning point, differences
// between variants paired by seed (differences.h), the sweep's progress line, and
// results.md, results.csv and differences.csv.
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "train/ablation/results.h"
#include "train/ablation/statistics.h"
#include "train/ablation/sweep_file.h"

namespace relpos {

// The longest evaluated length, going up from the training length, before the loss first
// rises more than 1% above its training-length value (or cannot be computed). length 0
// where the training-length loss is unknown; `last_evaluated` when it never left the band.
struct TurningPoint {
  std::int64_t length = 0;
  bool last_evaluated = false;
};
TurningPoint turning_point(const std::vector<std::pair<std::int64_t, double>>& loss_by_length,
                           std::int64_t train_length);

// One variant over its seeds.
struct LengthStats {
  std::int64_t length = 0;
  Stat loss, accuracy, exact_match;
};
struct MemoryStats {
  std::int64_t mem_len = 0, knn_size = 0;
  Stat loss;
};
struct CopyStats {
  CopyGain point;  // distance and reading; its losses unused
  Stat gain;       // loss_control − loss_repeat, nats per token
};
struct VariantStats {
  const VariantResult* first = nullptr;  // name, scheme, data, lengths, steps, parameters
  std::vector<const VariantResult*> runs;
  Stat final_val_loss, tokens_per_second, wall_seconds;
  std::size_t peak_rss_bytes = 0, peak_tensor_bytes = 0;  // the largest of the runs'
  std::vector<LengthStats> lengths;                       // ascending
  std::vector<MemoryStats> memory;                        // by mem_len, then knn_size
  std::vector<CopyStats> copy;                            // in the first run's order
  TurningPoint turning;                                   // of the mean loss curve
};
// The run's loss at memory point (mem_len, knn_size); NaN where it has none.
double memory_loss(const VariantResult& r, std::int64_t mem_len, std::int64_t knn_size);

// Groups runs by variant name, in order of first appearance.
std::vector<VariantStats> aggregate(const std::vector<VariantResult>& runs);

// "progress: 4/27 runs, 1/9 variants done, 2m 05s elapsed, ETA 11m 40s": the ETA
// extrapolates the time of the runs this process trained or evaluated (`measured`;
// skipped ones take none) to the runs left; "ETA n/a" before the first one.
struct SweepProgress {
  std::size_t runs_done = 0, runs_total = 0, variants_done = 0, variants_total = 0;
  std::size_t measured = 0;
  double elapsed_seconds = 0.0;
};
std::string progress_line(const SweepProgress& p);

// `text` as one CSV field: quoted (quotes doubled) where it holds a comma, quote or newline.
std::string csv_field(const std::string& text);

// Writes results.md and results.csv into sweep.out_dir, each atomically.
void write_ablation_report(const AblationSweep& sweep, const std::vector<VariantResult>& results);

}  // namespace relpos
