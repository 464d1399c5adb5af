#pragma once
// A pre-norm Transformer language model: token embedding (+ absolute position
// term), n blocks of [x + attn(norm(x)); x + mlp(norm(x))], a final norm and the
// LM head (optionally tied to the embedding).
#include <memory>
#include <string>
#include <vector>

#include "layers/attention.h"
#include "layers/embedding.h"
#include "layers/norm.h"
#include "layers/position/scheme.h"

namespace relpos {

// Chunked streaming attention for encoders (docs/streaming.md).
struct AttentionChunkConfig {
  std::int64_t size = 0;          // positions per chunk; 0: full attention
  std::int64_t left_chunks = -1;  // earlier chunks each query sees; -1: all
  bool dynamic = false;           // training draws the size per batch from 1..size
};

struct ModelConfig {
  std::int64_t vocab = 256;
  std::int64_t d_model = 128;
  std::int64_t n_layers = 2;
  std::int64_t n_heads = 4;
  std::int64_t d_ff = 512;
  double dropout = 0.0;
  NormKind norm = NormKind::layernorm;
  bool tie_embeddings = true;
  bool causal = true;
  PositionConfig position;  // every layer's scheme (model.position as one mapping)
  AttentionPath attention_path = AttentionPath::flash;
  AttentionChunkConfig attention_chunk;
  KnnMemoryConfig knn_memory;  // off unless knn_memory.layer >= 0
  // model.position as a list (docs/config.md, "Per-layer position schemes"): layer l's
  // scheme; empty: `position` in every layer.
  std::vector<PositionConfig> layer_positions;
  // model.attention_window: causal sliding windows; [] none, [W] every layer, or one entry per
  // layer (0: that layer attends to every earlier position).
  std::vector<std::int64_t> attention_window;
  // model.attention_temperature: a factor on every layer's queries
  // (layers/attention_temperature.h).
  AttentionTemperatureConfig attention_temperature;
};

// The dimensions a position scheme and the attention see.
ModelDims model_dims(const ModelConfig& config);
// Layer l's position scheme and sliding window (0: none).
const PositionConfig& layer_position(const ModelConfig& config, std::int64_t layer);
std::int64_t layer_window(const ModelConfig& config, std::int64_t layer);
// Every layer's scheme name, e.g. "rope" (one scheme everywhere) or "rope+rope+rope+none".
std::string position_label(const ModelConfig& config);

// Per-layer state carried between calls: a KV cache (sampling) or XL memory (training).
struct DecodeState {
  std::vector<KvCache> caches;
  std::vector<Tensor> memory;  // per layer (B, M, d_model), detached
  std::int64_t position = 0;   // absolute position of the next token
  KnnMemory* knn = nullptr;    // with segment memory: the kNN layer's memory, if any
};

class Block : public Module {
 public:
  Block(const ModelConfig& config, std::int64_t layer, const PositionScheme& scheme, Rng& rng,
        const AttentionChunk* chunk = nullptr);
  // x (B, L, d), the residual stream, and h = norm1(x) (B, L, d), made by the op before (the
  // previous block's last residual add, fused with this norm). Returns the block's output and
  // next_norm of it (the next block's norm1 or the final norm), each residual add fused with
  // the norm after it. `attention_input`, if given, receives h (the next memory).
  // `knn`: the kNN memory, for the kNN layer's block.
  ResidualNorm forward(const Tensor& x, const Tensor& h, const Norm& next_norm, std::int64_t start,
                       const Tensor& memory, KvCache* cache, std::uint64_t dropout_seed,
                       Tensor* attention_input = nullptr, KnnMemory* knn = nullptr) const;
  const Norm& norm1() const { return *norm1_; }

 private:
  const ModelConfig& config_;
  Norm* norm1_;
  MultiHeadAttention* attn_;
  Norm* norm2_;
  Linear* fc1_;
  Linear* fc2_;
};

// The position parameters of a model are those of its position scheme, the module named
// "position", or "position.<g>" for per-layer schemes (every layer's share of a scheme
// lives there): T5's bias tables, Shaw's key and value tables, Transformer-XL's W_r
// projections and u, v, KERPLE's r1, r2 and the learned absolute table. Sinusoidal, RoPE,
// ALiBi and none have none. optim.position_lr_scale multiplies their learning rate.
inline bool is_position_parameter(const std::string& name) { return name.starts_with("position."); }

class TransformerLM : public Module {
 public:
  TransformerLM(const ModelConfig& config, Rng& rng);

  // tokens i64 (B, L) at positions start.. -> logits (B, L, vocab).
  Tensor forward(const Tensor& tokens, std::int64_t start = 0) const;
  // Like forward, using and updating the state: the KV cache when `use_cache`,
  // else segment memory of up to mem_len positions per layer (Transformer-XL).
  Tensor forward(const Tensor& tokens, DecodeState& state, bool use_cache,
                 std::int64_t mem_len = 0) const;
  // Like forward(tokens, start), with the kNN layer (model.knn_memory) retrieving from
  // `knn` and then appending this segment's keys and values to it. Without a kNN
  // layer, `knn` is unused. With segment memory, DecodeState::knn plays this part;
  // the KV-cache path and forward(tokens, start) leave the kNN layer its local attention.
  Tensor forward(const Tensor& tokens, std::int64_t start, KnnMemory& knn) const;

  const ModelConfig& config() const { return config_; }
  // True when some layer's rotation depends on the sequence length (RoPE's dynamic NTK
  // scaling): no KV cache or segment memory is then reusable.
  bool positions_depend_on_length() const;
  // The most positions every layer's scheme can place (PositionScheme::max_length); 0 for
  // no limit.
  std::int64_t max_positions() const;
  // Dropout masks and randomized positions are drawn from (seed, step): set once per step
  // by the trainer.
  void set_dropout_seed(std::uint64_t seed) {
    dropout_seed_ = seed;
    for (PositionScheme* scheme : schemes_) scheme->set_position_seed(seed);
  }
  // The chunk size of the attention from now on (dynamic chunk training draws one per
  // batch); starts as model.attention_chunk.size, 0 meaning full attention.
  void set_attention_chunk_size(std::int64_t size);
  std::int64_t attention_chunk_size() const { return chunk_->size; }

 private:
  Tensor run(const Tensor& tokens, std::int64_t start, std::vector<Tensor>* memory,
             std::vector<KvCache>* caches, std::int64_t mem_len, KnnMemory* knn = nullptr) const;

  ModelConfig config_;
  std::unique_ptr<AttentionChunk> chunk_;  // read by every attention layer at each call
  Embedding* embed_;
  // One scheme per distinct layer config, so layers that share a config share its tables
  // (T5's one table for all layers): "position" with one scheme everywhere, else
  // "position.<g>" in order of first use.
  std::vector<PositionScheme*> schemes_;
  std::vector<Block*> blocks_;
  Norm* final_norm_;
  Linear* head_ = nullptr;  // absent when tied
  std::uint64_t dropout_seed_ = 0;
};

// One segment of segment-recurrent training or evaluation: tokens (B, L) after the
// per-layer `memory` (B, M, d_model each, M <= mem_len; empty before the first
// segment), which is replaced by the last mem_len hidden states, detached. Positions
// count from the oldest memory entry: every scheme it is used with reads distances
// only. mem_len 0: a plain forward, memory left empty. `knn`, if given, is the kNN
// layer's memory (model.knn_memory), retrieved from and extended. -> logits (B, L, V).
Tensor forward_segment(const TransformerLM& model, const Tensor& tokens,
                       std::vector<Tensor>& memory, std::int64_t mem_len, KnnMemory* knn = nullptr);

}  // namespace relpos
