#pragma once
// Scaled dot-product attention with the contributions of a position scheme
// (docs/position-schemes.md). q (B, H, Lq, D); k, v (B, H, Lk, D), Lk >= Lq, the
// queries being the last Lq positions.
#include "autograd/attention_chunk.h"
#include "autograd/fire_terms.h"
#include "autograd/tensor.h"

namespace relpos {

// What a position scheme adds to one attention call. Undefined tensors add nothing.
struct PositionTerms {
  Tensor distance_bias;  // (H, Lq+Lk-1) logit bias by relative distance (T5, ALiBi)
  Tensor shaw_keys;      // (2k+1, D) or (H, 2k+1, D): logits q·B[clip(j-i)] / sqrt(D)
  Tensor shaw_values;    // (2k+1, D) or (H, 2k+1, D): outputs + Σ_j p_ij A[clip(j-i)]
  std::int64_t shaw_clip = 0;
  Tensor xl_r;               // (H, Lk, D): W_r R for distances Lk-1 .. 0
  Tensor xl_u, xl_v;         // (H, D) global content and position biases
  FireTerms fire;            // FIRE's MLP: a bias by (query position, distance); causal only
  bool scale_scores = true;  // false: q·k is not divided by sqrt(D) (a T5 option)
};

// flash: tiled attention that never forms an (Lq, Lk) matrix (the default; where the
// backend lacks Kernel::flash_attention, fused is used instead). fused: (Lq, Lk)
// scores with one position-aware softmax kernel. composed: the same math from
// separate differentiable ops, kept as the independent reference. The order is the
// config's (model.attention).
enum class AttentionPath { flash, fused, composed };
const char* name_of(AttentionPath path);

// `chunk` (size 0: none) restricts each query to its chunk band (streaming encoders,
// docs/streaming.md), and chunk.window (0: none) to its sliding window: flash applies
// both per tile, fused and composed as a mask.
Tensor scaled_attention(const Tensor& q, const Tensor& k, const Tensor& v,
                        const PositionTerms& terms, bool causal,
                        AttentionPath path = AttentionPath::flash,
                        const AttentionChunk& chunk = {});

}  // namespace relpos
