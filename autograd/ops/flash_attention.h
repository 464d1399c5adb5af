#pragma once
// Tiled attention with relative position terms, never forming an (Lq, Lk) matrix
// (the math is FlashAttentionArgs in autograd/backend.h; docs/relative-kernels.md).
#include "autograd/attention_chunk.h"
#include "autograd/fire_terms.h"
#include "autograd/tensor.h"

namespace relpos {

struct FlashTerms {
  Tensor distance_bias;     // (H, Lq+Lk-1): T5 or ALiBi bias by relative distance
  Tensor clipped;           // (B, H, Lq, 2k+1): Shaw key logits q·Bᵀ
  std::int64_t clip = 0;    // Shaw's k
  bool value_bins = false;  // also return Shaw's per-row clipped-distance bins of p
  Tensor xl_query;          // (B, H, Lq, D): Transformer-XL's q + v
  Tensor xl_r;              // (H, Lk, D): W_r R for distances Lk-1 .. 0
  FireTerms fire;           // FIRE's MLP, evaluated per tile (causal only)
  double scale = 1.0;       // on q·k
  double term_scale = 1.0;  // on the Shaw and XL terms
  bool causal = false;
  AttentionChunk chunk;  // streaming chunk band (size 0: none); tiles outside it are skipped
  std::int64_t query_tile = 0, key_tile = 0;  // 0: the backend's defaults (tests set small ones)
};

// q (B, H, Lq, D); k, v (B, H, Lk, D) with Lk >= Lq, queries the last Lq positions.
// Returns (B, H, Lq, D), or (B, H, Lq, D + 2k+1) with value_bins: the attention
// output followed by the bins. Gradients reach q, k, v and every term. A UsageError
// where the backend lacks Kernel::flash_attention (callers ask kernel_supported()).
Tensor flash_attention(const Tensor& q, const Tensor& k, const Tensor& v, const FlashTerms& terms);

}  // namespace relpos
