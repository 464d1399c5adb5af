#include "layers/attention.h"

#include "autograd/error.h"
#include "autograd/ops/shape.h"

namespace relpos {

MultiHeadAttention::MultiHeadAttention(const ModelDims& dims, std::int64_t layer,
                                       const PositionScheme& scheme, AttentionPath path, Rng& rng,
                                       const AttentionChunk* chunk, std::int64_t knn_top_k,
                                       std::int64_t window,
                                       const AttentionTemperatureConfig& temperature)
    : dims_(dims),
      layer_(layer),
      scheme_(scheme),
      path_(path),
      chunk_(chunk),
      window_(window),
      temperature_(temperature) {
  require(window >= 0 && (window == 0 || dims.causal),
          "attention: a sliding window ({}) must be >= 0 and needs causal attention", window);
  require(dims.n_heads > 0 && dims.d_model % dims.n_heads == 0,
          "model.d_model={} must be divisible by model.n_heads={}", dims.d_model, dims.n_heads);
  q_ = &register_module("q", std::make_unique<Linear>(dims.d_model, dims.d_model, false, rng));
  k_ = &register_module("k", std::make_unique<Linear>(dims.d_model, dims.d_model, false, rng));
  v_ = &register_module("v", std::make_unique<Linear>(dims.d_model, dims.d_model, false, rng));
  o_ = &register_module("o", std::make_unique<Linear>(dims.d_model, dims.d_model, false, rng));
  if (temperature.kind == "learned")
    temperature_log_scale_ =
        register_parameter("temperature", Tensor::zeros({dims.n_heads}), false);  // (H)
  if (knn_top_k > 0)
    knn_ = &register_module("knn", std::make_unique<KnnRetrieval>(dims.n_heads, knn_top_k));
}

Tensor MultiHeadAttention::split_heads(const Tensor& x) const {
  return permute(reshape(x, {x.size(0), x.size(1), dims_.n_heads, dims_.head_dim()}), {0, 2, 1, 3});
}

Tensor MultiHeadAttention::forward(const Tensor& x, std::int64_t start, const Tensor& memory,
                                   KvCache* cache, KnnMemory* knn) const {
  const std::int64_t batch = x.size(0), len = x.size(1);
  const std::int64_t mem_len = memory.defined() ? memory.size(1) : 0;
  require(start >= mem_len, "attention: {} memory positions before position {}", mem_len, start);
  // Keys and values come from the memory (detached) followed by x.
  Tensor kv_input = mem_len > 0 ? concat({memory.detach(), x}, 1) : x;  // (B, M+L, d)
  const Tensor q_content = split_heads(q_->forward(x));                 // (B, H, L, D)
  const Tensor k_content = split_heads(k_->forward(kv_input));          // (B, H, M+L, D)
  // The temperature scales the rotated queries; a per-row or per-head factor commutes
  // with the rotation.
  Tensor q = apply_attention_temperature(temperature_, scheme_.rotate(q_content, start), start,
                                         temperature_log_scale_);
  Tensor k = scheme_.rotate(k_content, start - mem_len);
  Tensor v = split_heads(v_->forward(kv_input));  // (B, H, M+L, D)
  require(!(cache && knn), "attention: use either a KV cache or a kNN memory, not both");
  if (cache) {
    require(mem_len == 0, "attention: use either a KV cache or segment memory, not both");
    require(cache->length() == start, "attention: KV cache holds {} positions, expected {}",
            cache->length(), start);
    if (cache->length() > 0) {
      k = concat({cache->k, k}, 2);
      v = concat({cache->v, v}, 2);
    }
    cache->k = k.detach();
    cache->v = v.detach();
  }
  const std::int64_t k_len = k.size(2);
  AttentionChunk chunk = chunk_ ? *chunk_ : AttentionChunk{};
  chunk.key_origin = start - (k_len - len);  // the cache or memory keys come first
  chunk.window = window_;
  Tensor out =
      scaled_attention(q, k, v, scheme_.terms(layer_, len, k_len), dims_.causal, path_, chunk);
  if (knn_ && knn) out = knn_mix(q_content, k_content, v, out, mem_len, *knn);
  out = reshape(permute(out, {0, 2, 1, 3}), {batch, len, dims_.d_model});  // (B, L, d)
  return o_->forward(out);
}

// The kNN layer: the memory is retrieved from without position terms (content
// queries and keys), then extended with this segment's keys and values.
Tensor MultiHeadAttention::knn_mix(const Tensor& q_content, const Tensor& k_content,
                                   const Tensor& v, const Tensor& local, std::int64_t mem_len,
                                   KnnMemory& knn) const {
  Tensor out = knn_->mix(q_content, local, knn);  // (B, H, L, D)
  const std::int64_t end = k_content.size(2);
  knn.append(slice(k_content, 2, mem_len, end), slice(v, 2, mem_len, end));
  return out;
}

}  // namespace relpos
