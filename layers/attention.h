#pragma once
// Multi-head attention with a position scheme, causal or bidirectional, with an
// optional KV cache (incremental decoding) and Transformer-XL segment memory.
#include "layers/attention_temperature.h"
#include "layers/knn_memory.h"
#include "layers/linear.h"
#include "layers/position/scheme.h"

namespace relpos {

// Keys and values of earlier positions (B, H, Lc, D), kept without gradient.
struct KvCache {
  Tensor k, v;
  std::int64_t length() const { return k.defined() ? k.size(2) : 0; }
};

class MultiHeadAttention : public Module {
 public:
  // `chunk`, if given, is read at every call (its size may change between batches).
  // `window` > 0: query p sees keys p - window < j <= p only (a causal sliding window).
  // `temperature` scales the queries (layers/attention_temperature.h); kind learned
  // registers the parameter "temperature" (H), zero-initialised.
  MultiHeadAttention(const ModelDims& dims, std::int64_t layer, const PositionScheme& scheme,
                     AttentionPath path, Rng& rng, const AttentionChunk* chunk = nullptr,
                     std::int64_t knn_top_k = 0, std::int64_t window = 0,
                     const AttentionTemperatureConfig& temperature = {});

  // x (B, L, d_model) holds positions start .. start+L-1 (absolute: log_length
  // temperature reads them). `memory` (B, M, d_model),
  // if defined, holds the M positions before them (no gradient flows into it);
  // `cache`, if given, holds keys/values of earlier positions and is extended.
  // `knn`, if given (a kNN layer: knn_top_k > 0), is retrieved from, then extended
  // with x's keys and values (layers/knn_memory.h).
  Tensor forward(const Tensor& x, std::int64_t start, const Tensor& memory = Tensor(),
                 KvCache* cache = nullptr, KnnMemory* knn = nullptr) const;

 private:
  Tensor split_heads(const Tensor& x) const;  // (B, L, d_model) -> (B, H, L, D)
  Tensor knn_mix(const Tensor& q_content, const Tensor& k_content, const Tensor& v,
                 const Tensor& local, std::int64_t mem_len, KnnMemory& knn) const;

  ModelDims dims_;
  std::int64_t layer_;
  const PositionScheme& scheme_;
  AttentionPath path_;
  const AttentionChunk* chunk_;
  std::int64_t window_;
  AttentionTemperatureConfig temperature_;
  Tensor temperature_log_scale_;  // (H): learned temperature's t, the factor is exp(t)
  Linear* q_;
  Linear* k_;
  Linear* v_;
  Linear* o_;
  KnnRetrieval* knn_ = nullptr;  // the kNN layer's retrieval and gate
};

}  // namespace relpos
