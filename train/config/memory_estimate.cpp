#include "train/config/memory_estimate.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string_view>
#include <thread>
#include <vector>

#include "autograd/error.h"
#include "data/corpus.h"
#include "data/data_source.h"
#include "layers/position/registry.h"
#include "train/config/config_value.h"
#include "train/process_memory.h"

namespace relpos {
namespace {

constexpr double kF32 = 4, kI64 = 8, kGiB = 1024.0 * 1024.0 * 1024.0;

double d(std::int64_t value) { return static_cast<double>(value); }

// The chosen scheme's table-sizing keys (registry.h, size_keys) with their values.
std::vector<std::pair<std::string, std::int64_t>> position_sizes(const ModelConfig& m) {
  // Each key's largest value over the layers' schemes (per-layer lists may differ).
  std::vector<std::pair<std::string, std::int64_t>> sizes;
  for (std::int64_t l = 0; l < std::max<std::int64_t>(1, m.n_layers); ++l) {
    const PositionConfig& p =
        m.layer_positions.empty() ? m.position : layer_position(m, std::min(l, m.n_layers - 1));
    const PositionSchemeEntry* entry = find_position_scheme(p.scheme);
    if (!entry) continue;
    for (const auto& size_key : entry->size_keys) {
      const std::string& key = size_key.first;  // a plain name: lambdas may capture it
      const std::int64_t value = p.get<std::int64_t>(key);
      auto it = std::find_if(sizes.begin(), sizes.end(), [&](auto& s) { return s.first == key; });
      if (it == sizes.end())
        sizes.emplace_back(key, value);
      else
        it->second = std::max(it->second, value);
    }
  }
  return sizes;
}

// Elements (f32) of the parameters: embeddings, blocks, final norm, LM head, position terms.
double parameter_count(const ModelConfig& m) {
  const double dm = d(m.d_model), ff = d(m.d_ff), layers = d(m.n_layers);
  const double embeddings = d(m.vocab) * dm * (m.tie_embeddings ? 1 : 2);
  const double block = 4 * dm * dm + 2 * dm * ff + ff + 5 * dm;  // q,k,v,o; MLP; two norms
  // Any scheme: up to a d_model x d_model projection and small vectors per layer (XL,
  // KERPLE), plus its tables (size_keys).
  double position = layers * (dm * dm + 4 * dm);
  for (const auto& [key, value] : position_sizes(m))
    position += 2 * (2 * d(value) + 1) * dm * layers;
  return embeddings + layers * block + 2 * dm + position;
}

// f32 elements a pass over `rows` sequences of `length` tokens keeps, as if every layer's
// intermediates were kept for the backward pass.
double pass_elements(const RunConfig& c, double rows, double length) {
  const ModelConfig& m = c.model;
  const double tokens = rows * length, heads = d(m.n_heads);
  double per_layer = tokens * (16 * d(m.d_model) + 3 * d(m.d_ff));
  // The L x L scores of fused and composed attention (flash never forms them).
  if (m.attention_path != AttentionPath::flash) per_layer += 3 * rows * heads * length * length;
  // Relative-position terms (scaled_attention.h): at most (H, 2L) biases and (H, L, D) tables.
  per_layer += 2 * length * (heads + d(m.d_model));
  // The kNN layer: its memory's keys and values, and its (L, S) scores, masks and softmax.
  double knn = 0;
  if (m.knn_memory.enabled()) {
    const double size = d(m.knn_memory.size);
    knn = 2 * rows * size * d(m.d_model) + 4 * rows * heads * length * size;
  }
  return knn + d(m.n_layers) * per_layer + 3 * tokens * d(m.vocab) + tokens * d(m.d_model);
}

double activation_bytes(const RunConfig& c) {
  const DataConfig& data = c.data;
  const double tokens = d(data.batch_size) * d(data.seq_len);
  double bytes = kF32 * pass_elements(c, d(data.batch_size), d(data.seq_len));
  // Segment memory (train.mem_len): per layer the cached states, and the keys and values
  // computed from them with their gradients, (B, M, d_model) each.
  bytes +=
      kF32 * 5 * d(c.model.n_layers) * d(data.batch_size) * d(c.train.mem_len) * d(c.model.d_model);
  for (const std::int64_t length : c.eval.lengths) {
    const double rows = std::max(1.0, tokens / d(length));  // DataSource::eval_rows
    const double batches = kI64 * 2 * d(c.train.eval_batches) * rows * d(length);
    bytes = std::max(bytes, kF32 * pass_elements(c, rows, d(length)) + batches);
  }
  return bytes + kI64 * 2 * d(c.train.eval_batches) * tokens;
}

double optimizer_states(const OptimConfig& o) {
  if (o.name == "sgd") return o.momentum > 0 ? 1 : 0;
  return 2;  // adam, adamw: two moments
}

std::string gib(double bytes) { return fmt::format("{:.3g} GiB", bytes / kGiB); }

std::string model_keys(const ModelConfig& m) {
  std::string keys =
      fmt::format("model.vocab={}, model.d_model={}, model.n_layers={}, model.d_ff={}", m.vocab,
                  m.d_model, m.n_layers, m.d_ff);
  for (const auto& [key, value] : position_sizes(m))
    keys += fmt::format(", model.position.{}={}", key, value);
  return keys;
}

std::string activation_keys(const RunConfig& c) {
  std::string keys = fmt::format("data.batch_size={}, data.seq_len={}, train.eval_batches={}",
                                 c.data.batch_size, c.data.seq_len, c.train.eval_batches);
  if (c.train.mem_len > 0) keys += fmt::format(", train.mem_len={}", c.train.mem_len);
  if (!c.eval.lengths.empty())
    keys += fmt::format(", eval.lengths=[{}]", fmt::join(c.eval.lengths, ", "));
  if (c.model.knn_memory.enabled())
    keys += fmt::format(", model.knn_memory.size={}", c.model.knn_memory.size);
  return keys;
}

}  // namespace

std::string MemoryEstimate::describe(const RunConfig& config) const {
  return fmt::format(
      "about {} (parameters {} and their gradients and optimizer state {}, from {}; "
      "activations {}, from {}{})",
      gib(total()), gib(parameters), gib(training), model_keys(config.model), gib(activations),
      activation_keys(config),
      corpus > 0
          ? fmt::format("; the corpus {}, from data.source={}", gib(corpus), config.data.source)
          : "");
}

MemoryEstimate estimate_memory(const RunConfig& config) {
  MemoryEstimate e;
  const double params = parameter_count(config.model);
  e.parameters = kF32 * params;
  e.training = kF32 * params * (1 + optimizer_states(config.optim));
  e.activations = activation_bytes(config);
  const std::string corpus = corpus_file(config.data);
  std::error_code unknown;  // a file that cannot be sized fails with its own line when read
  const std::uintmax_t file_bytes =
      corpus.empty() ? 0 : std::filesystem::file_size(corpus, unknown);
  if (!corpus.empty() && !unknown)
    e.corpus = corpus_load_bytes(d(file_bytes), config.data.tokenizer_kind == "bytes");
  return e;
}

void require_bounded_sizes(const RunConfig& config) {
  const MemoryEstimate e = estimate_memory(config);
  require(e.total() <= kMaxEstimateBytes,
          "the sizes are too large: a run would need {}, more than any machine has (and more "
          "than the 64-bit sizes can count)",
          e.describe(config));
}

double available_memory_bytes() {
  if (const char* limit = std::getenv("RELPOS_MEMORY_LIMIT")) {
    const std::string_view text = limit;
    std::uint64_t bytes = 0;
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), bytes);
    require(error == std::errc() && end == text.data() + text.size() && !text.empty(),
            "RELPOS_MEMORY_LIMIT: expected a number of bytes, got {}", in_quotes(text));
    return static_cast<double>(bytes);
  }
  std::ifstream meminfo("/proc/meminfo");
  for (std::string line; std::getline(meminfo, line);) {
    std::istringstream fields(line);
    std::string name;
    double kib = 0;
    if (fields >> name >> kib && name == "MemAvailable:") return kib * 1024;
  }
  return static_cast<double>(sysconf(_SC_AVPHYS_PAGES)) *
         static_cast<double>(sysconf(_SC_PAGESIZE));
}

void require_fits_in_memory(const RunConfig& config) {
  const MemoryEstimate e = estimate_memory(config);
  const double available = available_memory_bytes();
  require(e.total() <= available,
          "the run would not fit in memory: it needs {}, but {} is available (MemAvailable, "
          "or RELPOS_MEMORY_LIMIT); reduce those sizes",
          e.describe(config), gib(available));
  const MemoryLimit limit = process_memory_limit();
  const int threads = config.train.threads > 0
                          ? static_cast<int>(config.train.threads)
                          : static_cast<int>(std::thread::hardware_concurrency());
  const double libraries = library_working_bytes(std::max(threads, 1));
  require(e.total() + libraries <= limit.headroom,
          "the run would not fit under {}: it needs {}, and {} more for the libraries' working "
          "buffers at {} threads; raise the limit or reduce those sizes",
          limit.what, e.describe(config), gib(libraries), threads);
}

}  // namespace relpos
