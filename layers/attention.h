#pragma once
// Multi-head attention with a position scheme, causal or bidirectional, with an
// optional KV cache (incremental decoding) and Transformer-XL segment memory.
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
  MultiHeadAttention(const ModelDims& dims, std::int64_t layer, const PositionScheme& scheme,
                     AttentionPath path, Rng& rng, const AttentionChunk* chunk = nullptr);

  // x (B, L, d_model) holds positions start .. start+L-1. `memory` (B, M, d_model),
  // if defined, holds the M positions before them (no gradient flows into it);
  // `cache`, if given, holds keys/values of earlier positions and is extended.
  Tensor forward(const Tensor& x, std::int64_t start, const Tensor& memory = Tensor(),
                 KvCache* cache = nullptr) const;

 private:
  Tensor split_heads(const Tensor& x) const;  // (B, L, d_model) -> (B, H, L, D)

  ModelDims dims_;
  std::int64_t layer_;
  const PositionScheme& scheme_;
  AttentionPath path_;
  const AttentionChunk* chunk_;
  Linear* q_;
  Linear* k_;
  Linear* v_;
  Linear* o_;
};

}  // namespace relpos
