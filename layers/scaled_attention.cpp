#include "layers/scaled_attention.h"

#include <cmath>
#include <limits>

#include "autograd/error.h"
#include "autograd/kernel.h"
#include "autograd/ops/elementwise.h"
#include "autograd/ops/fire_bias.h"
#include "autograd/ops/flash_attention.h"
#include "autograd/ops/head_layout.h"
#include "autograd/ops/mask.h"
#include "autograd/ops/matmul.h"
#include "autograd/ops/relative.h"
#include "autograd/ops/shape.h"
#include "autograd/ops/softmax.h"

namespace relpos {
namespace {

// A (2k+1, D) table, or (H, 2k+1, D) per head, as an operand against (B, H, ...).
Tensor per_head_operand(const Tensor& table, std::int64_t batch) {
  if (table.dim() == 2) return table;
  return expand(unsqueeze(table, 0), {batch, table.size(0), table.size(1), table.size(2)});
}

// A constant term (e.g. ALiBi's bias) in q's dtype and device; learned terms already match.
Tensor like(const Tensor& term, const Tensor& q) {
  if (!term.defined() || term.requires_grad()) return term;
  return term.to(q.dtype()).to(q.device());
}

// (H, D) -> (1, H, 1, D) so it broadcasts against q.
Tensor head_bias(const Tensor& b) { return reshape(b, {1, b.size(0), 1, b.size(1)}); }

// q + b for a per-head bias b (H, D), stored as (B, L, H, D) like the projections' rows
// that q views: the flash kernel reads it and writes its gradient in that layout, so
// neither the gradient's way back to the projection nor b's gradient (a sum over the
// leading (B, L) axes) needs a copy into another layout.
Tensor plus_head_bias(const Tensor& q, const Tensor& b) {
  const Tensor rows = permute(q, {0, 2, 1, 3});  // (B, L, H, D)
  return permute(add(rows, reshape(b, {1, 1, b.size(0), b.size(1)})), {0, 2, 1, 3});
}

// x (B, H, L, C) in that layout as the (B·L·H, C) matrix of its rows: a view, no copy.
Tensor rows_of_heads(const Tensor& x) {
  return reshape(permute(x, {0, 2, 1, 3}), {x.size(0) * x.size(2) * x.size(1), x.size(3)});
}

// (B·L·H, C) rows back to (B, H, L, C), viewing the (B, L, H, C) layout.
Tensor heads_of_rows(const Tensor& rows, std::int64_t batch, std::int64_t heads, std::int64_t len) {
  return permute(reshape(rows, {batch, len, heads, rows.size(1)}), {0, 2, 1, 3});
}

// Shaw's key logits q·Bᵀ (B, H, Lq, 2k+1). With one table shared by the heads and q in the
// projections' layout, one (B·Lq·H, D)·(D, 2k+1) product whose operands and result are views
// in that layout (what the kernel reads): neither q nor its gradient is copied into another.
Tensor shaw_key_logits(const Tensor& q, const Tensor& keys) {
  if (keys.dim() == 3 || !in_head_layout(q))
    return matmul(q, transpose(per_head_operand(keys, q.size(0)), -1, -2));
  return heads_of_rows(matmul(rows_of_heads(q), transpose(keys, 0, 1)), q.size(0), q.size(1),
                       q.size(2));
}

// Shaw's output out[..., :D] + bins·A, from the kernel's out (B, H, Lq, D + 2k+1) whose last
// 2k+1 columns are the bins. With one table A shared by the heads, on the rows of out's
// (B, Lq, H, ·) layout (empty_heads), so that the result is in the layout the attention
// layer merges its heads from without a copy.
Tensor shaw_value_output(const Tensor& out, const Tensor& values, std::int64_t d) {
  const std::int64_t batch = out.size(0), heads = out.size(1), len = out.size(2);
  if (values.dim() == 3 || !in_head_layout(out)) {
    const Tensor bins = slice(out, -1, d, out.size(-1));  // (B, H, Lq, 2k+1)
    return add(slice(out, -1, 0, d), matmul(bins, per_head_operand(values, batch)));
  }
  const Tensor rows = rows_of_heads(out);  // (B·Lq·H, D + 2k+1)
  const Tensor sum = add(slice(rows, -1, 0, d), matmul(slice(rows, -1, d, rows.size(1)), values));
  return heads_of_rows(sum, batch, heads, len);  // (B, H, Lq, D)
}

// The flash path: every term goes into the tiled kernel; Shaw's value term is the
// kernel's bins times A.
Tensor flash_path(const Tensor& q, const Tensor& k, const Tensor& v, const PositionTerms& terms,
                  bool causal, const AttentionChunk& chunk) {
  const std::int64_t d = q.size(3);
  const double inv_sqrt_d = 1.0 / std::sqrt(static_cast<double>(d));
  FlashTerms ft;
  ft.scale = terms.scale_scores ? inv_sqrt_d : 1.0;
  ft.term_scale = inv_sqrt_d;
  ft.causal = causal;
  ft.chunk = chunk;
  ft.distance_bias = like(terms.distance_bias, q);
  ft.fire = terms.fire;
  ft.clip = terms.shaw_clip;
  if (terms.shaw_keys.defined()) ft.clipped = shaw_key_logits(q, terms.shaw_keys);
  ft.value_bins = terms.shaw_values.defined();
  Tensor content_q = q;
  if (terms.xl_r.defined()) {
    content_q = plus_head_bias(q, terms.xl_u);
    ft.xl_query = plus_head_bias(q, terms.xl_v);
    ft.xl_r = terms.xl_r;
  }
  Tensor out = flash_attention(content_q, k, v, ft);  // (B, H, Lq, D [+ 2k+1])
  return ft.value_bins ? shaw_value_output(out, terms.shaw_values, d) : out;
}

}  // namespace

const char* name_of(AttentionPath path) {
  switch (path) {
    case AttentionPath::flash:
      return "flash";
    case AttentionPath::fused:
      return "fused";
    case AttentionPath::composed:
      return "composed";
  }
  return "?";
}

Tensor scaled_attention(const Tensor& q, const Tensor& k, const Tensor& v,
                        const PositionTerms& terms, bool causal, AttentionPath path,
                        const AttentionChunk& chunk) {
  require(q.dim() == 4 && k.dim() == 4 && v.dim() == 4,
          "attention: q {}, k {}, v {} must be (B, H, L, D)", q.describe(), k.describe(),
          v.describe());
  const std::int64_t batch = q.size(0), d = q.size(3), q_len = q.size(2), k_len = k.size(2);
  require(k.shape() == v.shape() && k.size(0) == batch && k.size(1) == q.size(1) &&
              k.size(3) == d && k_len >= q_len,
          "attention: q {} does not match k {} / v {} (need Lk >= Lq)", q.describe(), k.describe(),
          v.describe());
  const bool xl = terms.xl_r.defined();
  require(!xl || causal, "attention: Transformer-XL terms need causal attention");
  require(!terms.fire.defined() || causal, "attention: FIRE needs causal attention");
  // Where the backend has no flash kernel, the fused path computes the same attention.
  if (path == AttentionPath::flash && kernel_supported(q, Kernel::flash_attention))
    return flash_path(q, k, v, terms, causal, chunk);
  const double inv_sqrt_d = 1.0 / std::sqrt(static_cast<double>(d));
  const Tensor k_t = transpose(k, -1, -2);  // (B, H, D, Lk)

  // Content scores (B, H, Lq, Lk); XL adds its global content bias u to q.
  Tensor scores = matmul(xl ? add(q, head_bias(terms.xl_u)) : q, k_t);
  // Outside the chunk band or the window a score of -inf stays -inf after every term and softmax
  // gives it probability 0 and gradient 0 (on the fused path too).
  if (chunk.banded())
    scores = masked_fill(scores, chunk_mask(q_len, k_len, chunk, q.device()),
                         -std::numeric_limits<double>::infinity());
  RelativeTerms rt;
  rt.scale = terms.scale_scores ? inv_sqrt_d : 1.0;
  rt.term_scale = inv_sqrt_d;
  rt.causal = causal;
  rt.distance_bias = like(terms.distance_bias, q);
  if (terms.shaw_keys.defined()) {
    rt.clip = terms.shaw_clip;
    // q·Bᵀ once per query: (B, H, Lq, 2k+1), never (Lq, Lk, D).
    rt.clipped = matmul(q, transpose(per_head_operand(terms.shaw_keys, batch), -1, -2));
  }
  if (xl) {
    // (q + v)·(W_r R)ᵀ: (B, H, Lq, Lk), column c at distance Lk-1-c.
    Tensor r = per_head_operand(terms.xl_r, batch);
    rt.shifted = matmul(add(q, head_bias(terms.xl_v)), transpose(r, -1, -2));
  }

  // FIRE's (H, Lq, Lk) bias: the fused kernel then gets scale·q·k + bias as its scores.
  const Tensor fire = terms.fire.defined() ? fire_bias(terms.fire, q_len, k_len) : Tensor();
  Tensor probs;
  if (path != AttentionPath::composed) {
    if (fire.defined()) {
      scores = add(mul_scalar(scores, rt.scale), fire);
      rt.scale = 1.0;
    }
    probs = relative_softmax(scores, rt);
  } else {
    Tensor logits = mul_scalar(scores, rt.scale);
    if (fire.defined()) logits = add(logits, fire);
    if (rt.distance_bias.defined())
      logits = add(logits, distance_expand(rt.distance_bias, q_len, k_len));
    if (rt.clipped.defined())
      logits = add(logits, mul_scalar(clipped_gather(rt.clipped, k_len, rt.clip), inv_sqrt_d));
    if (rt.shifted.defined()) logits = add(logits, mul_scalar(rel_shift(rt.shifted), inv_sqrt_d));
    if (causal)
      logits = masked_fill(logits, causal_mask(q_len, k_len, q.device()),
                           -std::numeric_limits<double>::infinity());
    probs = softmax(logits, -1);
  }

  Tensor out = matmul(probs, v);  // (B, H, Lq, D)
  if (terms.shaw_values.defined()) {
    Tensor bins = clipped_bin(probs, terms.shaw_clip);  // (B, H, Lq, 2k+1)
    out = add(out, matmul(bins, per_head_operand(terms.shaw_values, batch)));
  }
  return out;
}

}  // namespace relpos
