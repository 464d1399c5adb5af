#pragma once
// HDF5 checkpoints: parameters, optimizer state, step counters, the resolved
// config and RNG/sampler states, written atomically, each checked by a digest
// before it is trusted. Layout and guarantees: docs/checkpoint.md.
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "autograd/tensor.h"

namespace relpos {

inline constexpr std::int64_t kCheckpointFormatVersion = 2;

struct Checkpoint {
  std::map<std::string, Tensor> params;  // dotted module names, e.g. "blocks.0.attn.q.weight"
  std::map<std::string, Tensor> optim;   // keys "<param name>/<state>", e.g. "head.weight/exp_avg"
  std::int64_t step = 0;
  std::int64_t tokens_seen = 0;
  std::string config_yaml;                                       // the resolved config
  std::map<std::string, std::vector<std::uint64_t>> rng_states;  // named RNG/sampler states
  // Segment memory of a recurrent run (train.mem_len > 0), keyed by layer index ("0",
  // "1", ...): (B, M, d_model) each. Absent from runs without memory.
  std::map<std::string, Tensor> memory;
  // The kNN memory (model.knn_memory, train/knn_state.h): "keys", "values" (B, H, M, D)
  // and "valid_from" i64 (B). Empty (no /knn_memory group) when the memory is.
  std::map<std::string, Tensor> knn_memory;
  // data.tokenizer sentencepiece: the model file's bytes (/tokenizer); empty for bytes.
  std::string tokenizer_model;
  std::int64_t format_version = kCheckpointFormatVersion;
};

// Removes <path>.digest, writes <path>.tmp, fsyncs it, renames it onto <path>,
// then writes <path>.digest the same way: a present digest means a complete file.
// On failure the .tmp is removed and a UsageError names the path and the reason.
void save_checkpoint(const std::filesystem::path& path, const Checkpoint& checkpoint);

// Called by load_checkpoint with the saved config and the declared shape of every
// parameter, after the file verified and before any tensor is allocated; it throws
// (e.g. check_shapes_match) to refuse the file.
using DeclaredShapeCheck = std::function<void(const std::string& config_yaml,
                                              const std::map<std::string, Shape>& param_shapes)>;

// Reads a checkpoint written by save_checkpoint: first checks the whole file
// against <path>.digest, then parses it from memory, checks every dataset's
// declared size against the file size and its bytes against its own digest.
// Throws a one-line UsageError "checkpoint <path>: ..." for a missing, corrupt,
// truncated or undigested file, or an unsupported format_version.
Checkpoint load_checkpoint(const std::filesystem::path& path,
                           const DeclaredShapeCheck& check_shapes = {});

// Requires `found` to name exactly the parameters of `expected`, with the same
// shapes; the UsageError names `source`, the parameter and both shapes.
void check_shapes_match(const std::map<std::string, Shape>& expected,
                        const std::map<std::string, Shape>& found, const std::string& source);

// check_shapes_match on the shapes of two tensor maps, then the same dtype for each
// (an int64 or uint8 tensor where the model has a float one is refused, not converted).
void check_params_match(const std::map<std::string, Tensor>& expected,
                        const std::map<std::string, Tensor>& loaded, const std::string& source);

// Requires every floating-point parameter to hold only finite values: eval and sample
// of NaN or Inf weights would print nonsense with exit 0.
void require_finite_parameters(const std::map<std::string, Tensor>& params,
                               const std::string& source);

}  // namespace relpos
