#pragma once
// The end-of-run summary: printed, and saved as <out_dir>/summary.json by train()
// when a run finishes or stops on a signal (the ablation runner treats a summary
// whose steps reach train.steps as the marker that a run finished).
#include <filesystem>
#include <optional>
#include <string>

#include "train/trainer.h"

namespace relpos {

void write_summary(const std::filesystem::path& out_dir, const TrainSummary& summary);
std::optional<TrainSummary> read_summary(const std::filesystem::path& out_dir);
std::string format_summary(const TrainSummary& summary);

}  // namespace relpos
