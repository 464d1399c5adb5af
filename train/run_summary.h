#pragma once
// The end-of-run summary: printed, and saved as <out_dir>/summary.json by train()
// when a run finishes or stops on a signal (the ablation runner treats a summary
// whose steps reach train.steps as the marker that a run finished).
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

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

void write_summary(const std::filesystem::path& out_dir, const TrainSummary& summary);
std::optional<TrainSummary> read_summary(const std::filesystem::path& out_dir);
std::string format_summary(const TrainSummary& summary);

}  // namespace relpos
