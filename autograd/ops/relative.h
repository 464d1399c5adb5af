#pragma once
// Differentiable relative-position ops (docs/relative-kernels.md). Attention
// tensors are (B, H, Lq, Lk); the Lq queries are the last Lq of the Lk positions.
#include "autograd/tensor.h"

namespace relpos {

// bias (H, Lq+Lk-1) over relative distances -> (H, Lq, Lk) with
// out[h, i, j] = bias[h, j - qpos(i) + Lk - 1].
Tensor distance_expand(const Tensor& bias, std::int64_t q_len, std::int64_t k_len);

// Shaw keys: logits (..., Lq, 2k+1) from q·Bᵀ -> (..., Lq, Lk) with
// out[..., i, j] = logits[..., i, clip(j - qpos(i), -k, k) + k].
Tensor clipped_gather(const Tensor& logits, std::int64_t k_len, std::int64_t clip);

// Shaw values: probs (..., Lq, Lk) binned by clipped distance -> (..., Lq, 2k+1)
// (the adjoint of clipped_gather).
Tensor clipped_bin(const Tensor& probs, std::int64_t clip);

// Transformer-XL's rel_shift: raw (..., Lq, Lk) whose column c holds distance
// Lk-1-c -> (..., Lq, Lk) with out[..., i, j] = raw[..., i, j + Lq-1-i] where
// that column exists, 0 elsewhere (the non-causal part, which must be masked).
Tensor rel_shift(const Tensor& raw);

// T5: out[h, n] = table[buckets[n], h]; table (num_buckets, H), buckets i64 (n).
// The gradient reduces into the table by bucket in a fixed order.
Tensor bucket_gather(const Tensor& table, const Tensor& buckets);

// The fused position-aware softmax over keys (see RelativeSoftmaxArgs in
// autograd/backend.h): scores (B, H, Lq, Lk); optional distance_bias (H, Lq+Lk-1),
// clipped (B, H, Lq, 2k+1), shifted (B, H, Lq, Lk). Gradients reach every input.
struct RelativeTerms {
  Tensor distance_bias;
  Tensor clipped;
  std::int64_t clip = 0;
  Tensor shifted;
  double scale = 1.0;       // on the scores
  double term_scale = 1.0;  // on clipped and shifted
  bool causal = false;
};
Tensor relative_softmax(const Tensor& scores, const RelativeTerms& terms);

}  // namespace relpos
