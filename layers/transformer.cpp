#include "layers/transformer.h"

#include <algorithm>

#include "autograd/error.h"
#include "autograd/ops/dropout.h"
#include "autograd/ops/matmul.h"
#include "autograd/ops/shape.h"
#include "autograd/random.h"

namespace relpos {

ModelDims model_dims(const ModelConfig& config) {
  return {config.d_model, config.n_heads, config.n_layers, config.causal};
}

const PositionConfig& layer_position(const ModelConfig& config, std::int64_t layer) {
  if (config.layer_positions.empty()) return config.position;
  require(layer >= 0 && layer < static_cast<std::int64_t>(config.layer_positions.size()),
          "model.position: {} entries, no layer {}", config.layer_positions.size(), layer);
  return config.layer_positions[static_cast<std::size_t>(layer)];
}

std::int64_t layer_window(const ModelConfig& config, std::int64_t layer) {
  const auto& w = config.attention_window;
  if (w.empty()) return 0;
  if (w.size() == 1) return w.front();
  require(layer >= 0 && layer < static_cast<std::int64_t>(w.size()),
          "model.attention_window: {} entries, no layer {}", w.size(), layer);
  return w[static_cast<std::size_t>(layer)];
}

std::string position_label(const ModelConfig& config) {
  if (config.layer_positions.empty()) return config.position.scheme;
  std::string label;
  for (const PositionConfig& p : config.layer_positions)
    label += (label.empty() ? "" : "+") + p.scheme;
  return label;
}

Block::Block(const ModelConfig& config, std::int64_t layer, const PositionScheme& scheme, Rng& rng,
             const AttentionChunk* chunk)
    : config_(config) {
  const ModelDims dims = model_dims(config);
  norm1_ =
      &register_module("norm1", std::make_unique<Norm>(config.norm, config.d_model, 1e-5, true));
  const std::int64_t knn_top_k = layer == config.knn_memory.layer ? config.knn_memory.top_k : 0;
  attn_ = &register_module(
      "attn", std::make_unique<MultiHeadAttention>(dims, layer, scheme, config.attention_path, rng,
                                                   chunk, knn_top_k, layer_window(config, layer),
                                                   config.attention_temperature));
  norm2_ =
      &register_module("norm2", std::make_unique<Norm>(config.norm, config.d_model, 1e-5, true));
  fc1_ =
      &register_module("mlp.fc1", std::make_unique<Linear>(config.d_model, config.d_ff, true, rng));
  fc2_ =
      &register_module("mlp.fc2", std::make_unique<Linear>(config.d_ff, config.d_model, true, rng));
}

ResidualNorm Block::forward(const Tensor& x, const Tensor& h, const Norm& next_norm,
                            std::int64_t start, const Tensor& memory, KvCache* cache,
                            std::uint64_t dropout_seed, Tensor* attention_input,
                            KnnMemory* knn) const {
  const double p = config_.dropout;
  if (attention_input) *attention_input = h.detach();
  Tensor a = attn_->forward(h, start, memory, cache, knn);  // (B, L, d): the projection o's output
  // y = x + attention, and norm2(y). A delta that is the linear layer's output itself (no
  // dropout mask between) gets its gradient's bf16 rounding from the norm's backward pass.
  const Tensor a_kept = dropout(a, p, mix64(dropout_seed, 0), 0, training());
  ResidualNorm y = norm2_->forward(x, a_kept, a_kept.storage() == a.storage());
  Tensor m = fc2_->forward(fc1_->forward(y.normed, Activation::gelu_tanh));  // (B, L, d)
  const Tensor m_kept = dropout(m, p, mix64(dropout_seed, 1), 0, training());
  return next_norm.forward(y.sum, m_kept, m_kept.storage() == m.storage());
}

TransformerLM::TransformerLM(const ModelConfig& config, Rng& rng)
    : config_(config),
      chunk_(std::make_unique<AttentionChunk>(
          AttentionChunk{config.attention_chunk.size, config.attention_chunk.left_chunks, 0})) {
  require(config.vocab > 0, "model.vocab must be positive, got {}", config.vocab);
  require(config.n_layers > 0, "model.n_layers must be positive, got {}", config.n_layers);
  require(config.n_heads > 0 && config.d_model % config.n_heads == 0,
          "model.d_model={} must be divisible by model.n_heads={}", config.d_model, config.n_heads);
  require(config.d_ff > 0, "model.d_ff must be positive, got {}", config.d_ff);
  require(config.dropout >= 0.0 && config.dropout < 1.0, "model.dropout must be in [0, 1), got {}",
          config.dropout);
  const AttentionChunkConfig& chunk = config.attention_chunk;
  require(chunk.size >= 0 && chunk.left_chunks >= -1 && !(chunk.size > 0 && config.causal),
          "model.attention_chunk (size {}, left_chunks {}) needs size >= 0, left_chunks >= -1 and "
          "a bidirectional model (model.causal: false)",
          chunk.size, chunk.left_chunks);
  require(config.layer_positions.empty() ||
              static_cast<std::int64_t>(config.layer_positions.size()) == config.n_layers,
          "model.position: a list of {} entries, expected one per layer (model.n_layers={})",
          config.layer_positions.size(), config.n_layers);
  const auto n_windows = static_cast<std::int64_t>(config.attention_window.size());
  require(n_windows <= 1 || n_windows == config.n_layers,
          "model.attention_window: a list of {} entries, expected 0, 1 or model.n_layers={}",
          n_windows, config.n_layers);
  for (std::int64_t l = 0; l < config.n_layers; ++l)
    require(layer_window(config, l) == 0 || config.causal,
            "model.attention_window: a sliding window needs causal attention (model.causal: true)");
  validate_attention_temperature(config.attention_temperature, config.causal);
  const ModelDims dims = model_dims(config);
  embed_ =
      &register_module("embed", std::make_unique<Embedding>(config.vocab, config.d_model, rng));
  // The distinct layer configs, in order of first use; layer l uses group layer_group[l].
  std::vector<const PositionConfig*> groups;
  std::vector<std::size_t> layer_group;
  for (std::int64_t l = 0; l < config.n_layers; ++l) {
    const PositionConfig& p = layer_position(config, l);
    auto it = std::find_if(groups.begin(), groups.end(), [&](auto* g) { return *g == p; });
    if (it == groups.end()) it = groups.insert(groups.end(), &p);
    layer_group.push_back(static_cast<std::size_t>(it - groups.begin()));
  }
  for (std::size_t g = 0; g < groups.size(); ++g) {
    const std::string name =
        config.layer_positions.empty() ? "position" : "position." + std::to_string(g);
    schemes_.push_back(&register_module(name, make_position_scheme(*groups[g], dims, rng)));
  }
  for (std::int64_t l = 0; l < config.n_layers; ++l) {
    const PositionScheme& scheme = *schemes_[layer_group[static_cast<std::size_t>(l)]];
    blocks_.push_back(
        &register_module("blocks." + std::to_string(l),
                         std::make_unique<Block>(config_, l, scheme, rng, chunk_.get())));
  }
  // The head reads the final norm's bf16 rounding: a linear layer, or with tied embeddings a
  // matmul with the table, which reads a kept rounding of its operand too.
  final_norm_ = &register_module("final_norm",
                                 std::make_unique<Norm>(config.norm, config.d_model, 1e-5, true));
  if (!config.tie_embeddings)
    head_ = &register_module("head",
                             std::make_unique<Linear>(config.d_model, config.vocab, false, rng));
}

bool TransformerLM::positions_depend_on_length() const {
  return std::any_of(schemes_.begin(), schemes_.end(),
                     [](const PositionScheme* s) { return s->rotation_depends_on_length(); });
}

std::int64_t TransformerLM::max_positions() const {
  std::int64_t limit = 0;
  for (const PositionScheme* s : schemes_)
    if (s->max_length() > 0)
      limit = limit == 0 ? s->max_length() : std::min(limit, s->max_length());
  return limit;
}

void TransformerLM::set_attention_chunk_size(std::int64_t size) {
  require(size >= 0, "model: attention chunk size must be >= 0, got {}", size);
  chunk_->size = size;
}

Tensor TransformerLM::run(const Tensor& tokens, std::int64_t start, std::vector<Tensor>* memory,
                          std::vector<KvCache>* caches, std::int64_t mem_len,
                          KnnMemory* knn) const {
  require(tokens.dim() == 2 && tokens.dtype() == DType::i64,
          "model: tokens must be an i64 (B, L) tensor, got {}", tokens.describe());
  Tensor x = embed_->forward(tokens);  // (B, L, d)
  for (const PositionScheme* scheme : schemes_) x = scheme->embed(x, start);
  Tensor h = blocks_.front()->norm1().forward(x);  // (B, L, d); later norms: fused in the blocks
  for (std::size_t l = 0; l < blocks_.size(); ++l) {
    const std::uint64_t seed = mix64(dropout_seed_, l);
    const Norm& next_norm = l + 1 < blocks_.size() ? blocks_[l + 1]->norm1() : *final_norm_;
    Tensor mem = memory && !memory->empty() ? (*memory)[l] : Tensor();
    KvCache* cache = caches ? &(*caches)[l] : nullptr;
    Tensor attention_input;
    KnnMemory* block_knn = static_cast<std::int64_t>(l) == config_.knn_memory.layer ? knn : nullptr;
    ResidualNorm out = blocks_[l]->forward(x, h, next_norm, start, mem, cache, seed,
                                           memory ? &attention_input : nullptr, block_knn);
    x = out.sum;
    h = out.normed;
    if (memory) {
      // The new memory: the last mem_len attention inputs, without gradient.
      Tensor all = mem.defined() ? concat({mem, attention_input}, 1) : attention_input;
      const std::int64_t keep = std::min(mem_len, all.size(1));
      attention_input = slice(all, 1, all.size(1) - keep, all.size(1)).contiguous();
      if (memory->size() < blocks_.size()) memory->resize(blocks_.size());
      (*memory)[l] = attention_input;
    }
  }
  // h: final_norm(x), from the last block
  return head_ ? head_->forward(h) : matmul(h, transpose(embed_->table(), 0, 1));  // (B, L, V)
}

Tensor TransformerLM::forward(const Tensor& tokens, std::int64_t start) const {
  return run(tokens, start, nullptr, nullptr, 0);
}

Tensor TransformerLM::forward(const Tensor& tokens, std::int64_t start, KnnMemory& knn) const {
  return run(tokens, start, nullptr, nullptr, 0, &knn);
}

Tensor TransformerLM::forward(const Tensor& tokens, DecodeState& state, bool use_cache,
                              std::int64_t mem_len) const {
  require(!positions_depend_on_length(),
          "model.position: a rotation that depends on the sequence length (rope_scaling.kind="
          "dynamic_ntk) changes every earlier position's hidden state as the sequence grows, so "
          "neither a KV cache nor segment memory can be reused; recompute the whole sequence");
  Tensor logits;
  if (use_cache) {
    if (state.caches.empty()) state.caches.resize(blocks_.size());
    logits = run(tokens, state.position, nullptr, &state.caches, 0);
  } else {
    require(mem_len > 0, "model: segment memory needs mem_len > 0");
    logits = run(tokens, state.position, &state.memory, nullptr, mem_len, state.knn);
  }
  state.position += tokens.size(1);
  return logits;
}

Tensor forward_segment(const TransformerLM& model, const Tensor& tokens,
                       std::vector<Tensor>& memory, std::int64_t mem_len, KnnMemory* knn) {
  if (mem_len == 0) return knn ? model.forward(tokens, 0, *knn) : model.forward(tokens);
  // Positions here count from the oldest memory entry, not from the start of the stream.
  require(!model.config().attention_temperature.reads_positions(),
          "model.attention_temperature.kind=log_length reads each query's absolute position, "
          "which segment-recurrent training and evaluation do not keep (their positions count "
          "from the oldest memory entry); use kind none or learned, or no segment memory");
  DecodeState state;
  state.knn = knn;
  state.memory = std::move(memory);
  state.position = state.memory.empty() ? 0 : state.memory.front().size(1);
  Tensor logits = model.forward(tokens, state, false, mem_len);
  memory = std::move(state.memory);
  return logits;
}

}  // namespace relpos
