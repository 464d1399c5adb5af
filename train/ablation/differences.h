#pragma once
// Differences between the variants of a sweep, paired by seed: for every two variants
// trained on the same data at the same length, and every evaluation length, the mean of
// (metric of A − metric of B) over the seeds both ran, with its 95% t interval
// (statistics.h). A difference is called one only where that interval excludes 0.
#include <cstdint>
#include <string>
#include <vector>

#include "train/ablation/report.h"

namespace relpos {

// The metrics compared: bits per byte (loss / ln 2; lower is better) and, on the tasks,
// exact match (higher is better).
enum class PairedMetric { bits_per_byte, exact_match };

// What is compared: a metric at an evaluation length on windows, or (mem_len >= 0) bits
// per byte on the validation streams at the training length with the memory point
// (mem_len, knn_size) of VariantResult::memory.
struct PairedMeasure {
  PairedMetric metric = PairedMetric::bits_per_byte;
  std::int64_t length = 0;
  std::int64_t mem_len = -1;
  std::int64_t knn_size = 0;
  bool with_memory() const { return mem_len >= 0; }
};

struct PairedDifference {
  PairedMetric metric = PairedMetric::bits_per_byte;
  std::string data;
  std::int64_t train_length = 0;
  std::int64_t length = 0;                  // evaluation length (the training length with memory)
  std::int64_t mem_len = -1, knn_size = 0;  // the memory point; mem_len -1: windows
  const VariantStats* a = nullptr;
  const VariantStats* b = nullptr;
  Stat difference;  // of a − b over the shared seeds
};

// Every pair (a before b in sweep order) of variants with the same data and training
// length, at every length and memory point both evaluated, for each metric with a value;
// pairs without a shared seed are left out.
std::vector<PairedDifference> paired_differences(const std::vector<VariantStats>& variants);

// The markdown section: per data set and metric, each variant against the best one (by
// mean) at every length, bold where the interval excludes 0. Empty without seeds.
std::string differences_markdown(const std::vector<VariantStats>& variants);

// differences.csv: every pair, metric,data,train_length,length,variant_a,variant_b,n,
// mean,ci95,low,high,excludes_zero. A memory point's metric is bits_per_byte_<memory_label>
// (e.g. bits_per_byte_mem_256), its length the training length.
std::string differences_csv(const std::vector<VariantStats>& variants);

}  // namespace relpos
