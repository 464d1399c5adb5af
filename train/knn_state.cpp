#include "train/knn_state.h"

#include <fmt/format.h>

#include <cmath>
#include <vector>

#include "autograd/error.h"

namespace relpos {

void save_knn_memory(const KnnMemory& memory, Checkpoint& checkpoint) {
  if (memory.length() == 0) return;
  checkpoint.knn_memory["keys"] = memory.keys().clone();
  checkpoint.knn_memory["values"] = memory.values().clone();
  std::vector<double> starts(memory.valid_from().begin(), memory.valid_from().end());
  checkpoint.knn_memory["valid_from"] =
      Tensor::from_data(starts, {static_cast<std::int64_t>(starts.size())}, DType::i64);
}

void restore_knn_memory(KnnMemory& memory, const Checkpoint& checkpoint, const RunConfig& config,
                        Device device, const std::filesystem::path& source) {
  const auto& saved = checkpoint.knn_memory;
  if (saved.empty()) {
    memory.clear();
    return;
  }
  const auto get = [&](const char* name) -> const Tensor& {
    const auto found = saved.find(name);
    require(found != saved.end(), "checkpoint {}: /knn_memory has no '{}'", source.string(), name);
    return found->second;
  };
  const Tensor &keys = get("keys"), &values = get("values"), &valid_from = get("valid_from");
  require(saved.size() == 3,
          "checkpoint {}: /knn_memory holds {} entries, expected keys, values "
          "and valid_from",
          source.string(), saved.size());
  const ModelConfig& m = config.model;
  const std::int64_t rows = config.data.batch_size;
  const bool shaped = keys.dim() == 4 && keys.size(0) == rows && keys.size(1) == m.n_heads &&
                      keys.size(2) <= m.knn_memory.size && keys.size(3) == m.d_model / m.n_heads &&
                      values.shape() == keys.shape() && is_floating(keys.dtype()) &&
                      values.dtype() == keys.dtype() && valid_from.dim() == 1 &&
                      valid_from.size(0) == rows && valid_from.dtype() == DType::i64;
  require(shaped,
          "checkpoint {}: /knn_memory holds keys {}, values {} and valid_from {}; expected "
          "(data.batch_size={}, model.n_heads={}, M <= model.knn_memory.size={}, {}) and an i64 "
          "({})",
          source.string(), keys.describe(), values.describe(), valid_from.describe(), rows,
          m.n_heads, m.knn_memory.size, m.d_model / m.n_heads, rows);
  std::vector<std::int64_t> starts;
  for (const double first : valid_from.to_vector())
    starts.push_back(static_cast<std::int64_t>(first));
  memory = KnnMemory(m.knn_memory.size);
  try {
    memory.restore(keys.to(device), values.to(device), std::move(starts));
  } catch (const UsageError& e) {
    fail("checkpoint {}: {}", source.string(), e.what());
  }
}

std::vector<double> knn_gates(const TransformerLM& model) {
  const KnnMemoryConfig& knn = model.config().knn_memory;
  if (!knn.enabled()) return {};
  const std::string name = fmt::format("blocks.{}.attn.knn.gate", knn.layer);
  for (const NamedParameter& p : model.parameters()) {
    if (p.name != name) continue;
    std::vector<double> gates = p.tensor.to(Device::cpu).to_vector();  // b (H)
    for (double& g : gates) g = 1.0 / (1.0 + std::exp(-g));
    return gates;
  }
  fail("the kNN layer's gate parameter '{}' is missing", name);
}

}  // namespace relpos
