#pragma once
// HDF5 checkpoints: parameters, optimizer state, step counters, the resolved
// config and RNG/sampler states, written atomically. Layout: docs/checkpoint.md.
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "autograd/tensor.h"

namespace relpos {

inline constexpr std::int64_t kCheckpointFormatVersion = 1;

struct Checkpoint {
  std::map<std::string, Tensor> params;  // dotted module names, e.g. "blocks.0.attn.q.weight"
  std::map<std::string, Tensor> optim;   // keys "<param name>/<state>", e.g. "head.weight/exp_avg"
  std::int64_t step = 0;
  std::int64_t tokens_seen = 0;
  std::string config_yaml;  // the resolved config
  std::map<std::string, std::vector<std::uint64_t>> rng_states;  // named RNG/sampler states
  std::int64_t format_version = kCheckpointFormatVersion;
};

// Writes <path>.tmp, fsyncs it, renames it onto <path> and fsyncs the directory.
// On failure the .tmp is removed, whatever was at <path> is untouched, and a
// UsageError names the path and the reason.
void save_checkpoint(const std::filesystem::path& path, const Checkpoint& checkpoint);

// Reads a checkpoint written by save_checkpoint (or by any HDF5 writer using
// the same layout). Throws a one-line UsageError for a missing, non-HDF5,
// truncated or incomplete file, or an unsupported format_version.
Checkpoint load_checkpoint(const std::filesystem::path& path);

// <dir>/ckpt_<step, zero-padded to 8 digits>.h5
std::filesystem::path checkpoint_path(const std::filesystem::path& dir, std::int64_t step);

// The checkpoint in dir with the highest step; nullopt when there is none.
std::optional<std::filesystem::path> latest_checkpoint(const std::filesystem::path& dir);

// Deletes all but the `keep` highest-step checkpoints in dir; keep <= 0 keeps all.
void keep_last_checkpoints(const std::filesystem::path& dir, int keep);

// Requires `loaded` to hold exactly the names of `expected`, with the same
// shapes; the UsageError names `source` (the checkpoint file), the parameter
// and both shapes.
void check_params_match(const std::map<std::string, Tensor>& expected,
                        const std::map<std::string, Tensor>& loaded, const std::string& source);

}  // namespace relpos
