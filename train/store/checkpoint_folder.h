#pragma once
// A run's checkpoint folder: checkpoints named by step (ckpt_<step>.h5, each with its
// digest beside it), the newest one, the newest that verifies, and the pruning to the
// last train.keep_checkpoints.
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace relpos {

// <dir>/ckpt_<step, zero-padded to 8 digits>.h5
std::filesystem::path checkpoint_path(const std::filesystem::path& dir, std::int64_t step);

// The checkpoints (ckpt_<step>.h5, regular files) in dir with their steps, by step.
std::vector<std::pair<std::int64_t, std::filesystem::path>> list_checkpoints(
    const std::filesystem::path& dir);

// The checkpoint in dir with the highest step; nullopt when there is none.
std::optional<std::filesystem::path> latest_checkpoint(const std::filesystem::path& dir);

// The checkpoint in dir with the highest step whose whole-file digest verifies;
// each newer one that does not is passed to `skipped` as one line naming it and why.
std::optional<std::filesystem::path> latest_verified_checkpoint(
    const std::filesystem::path& dir, const std::function<void(const std::string&)>& skipped);

// Deletes all but the `keep` highest-step checkpoints in dir, each with its digest
// (the file first: a checkpoint in place always has its digest); keep <= 0 keeps all.
void keep_last_checkpoints(const std::filesystem::path& dir, int keep);

}  // namespace relpos
