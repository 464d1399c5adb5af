#pragma once
// The attention layer keeps heads in the (B, L, H, C) layout of its projections
// and views them as (B, H, L, C). Ops that produce per-head tensors allocate in
// that layout so that splitting and merging heads never copies.
#include "autograd/tensor.h"

namespace relpos {

// The strides of a (B, H, L, C) view of a contiguous (B, L, H, C) tensor.
inline Shape head_layout_strides(std::int64_t heads, std::int64_t len, std::int64_t cols) {
  return {len * heads * cols, cols, heads * cols, 1};
}

// Whether x (B, H, L, C) views the (B, L, H, C) layout.
inline bool in_head_layout(const Tensor& x) {
  return x.strides() == head_layout_strides(x.size(1), x.size(2), x.size(3));
}

// An uninitialised (B, H, L, C) tensor stored as (B, L, H, C).
inline Tensor empty_heads(std::int64_t batch, std::int64_t heads, std::int64_t len,
                          std::int64_t cols, const Tensor& like) {
  Tensor t = Tensor::empty({batch, len, heads, cols}, like.dtype(), like.device());
  return Tensor::view_of(t, {batch, heads, len, cols}, head_layout_strides(heads, len, cols), 0);
}

// empty_heads shaped like x (B, H, L, C).
inline Tensor empty_heads_like(const Tensor& x) {
  return empty_heads(x.size(0), x.size(1), x.size(2), x.size(3), x);
}

// x itself when its last axis is contiguous (what the per-head kernels need), else a copy.
inline Tensor rows_contiguous(const Tensor& x) {
  return x.strides().back() == 1 ? x : x.contiguous();
}

}  // namespace relpos
