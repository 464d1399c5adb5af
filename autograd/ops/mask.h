#pragma once
// Masking ops. Masks are u8 tensors: nonzero means "true".
#include <cstdint>

#include "autograd/attention_chunk.h"
#include "autograd/tensor.h"

namespace relpos {

// out = mask ? a : b elementwise. mask (u8), a and b broadcast together (NumPy
// rules) to the output shape; a and b share one floating dtype. Gradients flow
// to a where the mask is set and to b elsewhere, summed over broadcast axes.
Tensor where(const Tensor& mask, const Tensor& a, const Tensor& b);

// x with `value` wherever mask (u8, broadcastable to x's shape) is set; the
// gradient is 0 at masked positions and passes through elsewhere.
Tensor masked_fill(const Tensor& x, const Tensor& mask, double value);

// The u8 (q_len, k_len) causal mask: 1 where key j is in the future of query i
// and must be hidden. The queries are the last q_len of the k_len positions, so
// query i sits at absolute position (k_len - q_len) + i and
//   mask[i][j] = j > i + (k_len - q_len).
// With q_len == k_len this is the usual strictly upper triangle; with
// q_len < k_len (cached keys, or memory in front) the earlier keys are visible
// to every query. q_len must not exceed k_len (earlier queries would see no
// key at all).
Tensor causal_mask(std::int64_t q_len, std::int64_t k_len, Device device = Device::cpu);

// The u8 (q_len, k_len) chunk mask (autograd/attention_chunk.h): 1 where key j lies
// outside the chunk band or the sliding window of query i, which sits at key index
// (k_len - q_len) + i.
Tensor chunk_mask(std::int64_t q_len, std::int64_t k_len, const AttentionChunk& chunk,
                  Device device = Device::cpu);

}  // namespace relpos
