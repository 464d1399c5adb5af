#pragma once
// The kNN memory of a training run (model.knn_memory) in its checkpoints: saved with
// every checkpoint, restored on resume and on a rollback (docs/knn-memory.md); and the
// layer's gates, logged as training goes.
#include <filesystem>
#include <vector>

#include "layers/knn_memory.h"
#include "layers/transformer.h"
#include "train/config/config.h"
#include "train/store/checkpoint.h"

namespace relpos {

// Stores the memory in checkpoint.knn_memory; nothing when it is empty.
void save_knn_memory(const KnnMemory& memory, Checkpoint& checkpoint);

// Replaces `memory` by the one saved in `checkpoint` (an empty memory when it holds
// none), on `device`. The shapes must be the run's: (data.batch_size, model.n_heads,
// M <= model.knn_memory.size, head dim); a UsageError names `source` otherwise.
void restore_knn_memory(KnnMemory& memory, const Checkpoint& checkpoint, const RunConfig& config,
                        Device device, const std::filesystem::path& source);

// The kNN layer's gates g_h = sigmoid(b_h), one per head, from its parameter
// blocks.<layer>.attn.knn.gate; empty for a model without a kNN layer.
std::vector<double> knn_gates(const TransformerLM& model);

}  // namespace relpos
