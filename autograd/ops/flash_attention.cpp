#include "autograd/ops/flash_attention.h"

#include "autograd/backend.h"
#include "autograd/kernel.h"
#include "autograd/ops/bf16_input.h"
#include "autograd/ops/check.h"
#include "autograd/ops/head_layout.h"
#include "autograd/precision.h"
#include "autograd/tape.h"

namespace relpos {
namespace {

bool wants(const Tensor& t) { return t.defined() && t.requires_grad(); }

void check_terms(const Tensor& q, const Tensor& k, const FlashTerms& terms) {
  const std::int64_t batch = q.size(0), heads = q.size(1), q_len = q.size(2), d = q.size(3);
  const std::int64_t k_len = k.size(2);
  if (terms.distance_bias.defined()) {
    check_same_kind(q, terms.distance_bias, "flash_attention");
    if (!(terms.distance_bias.shape() == Shape{heads, q_len + k_len - 1}))
      fail("flash_attention: distance bias {} must be (H, Lq+Lk-1) = ({}, {})",
           terms.distance_bias.describe(), heads, q_len + k_len - 1);
  }
  require(terms.chunk.size >= 0 && terms.chunk.left_chunks >= -1 && terms.chunk.key_origin >= 0 &&
              terms.chunk.window >= 0,
          "flash_attention: chunk size {} must be >= 0, left_chunks {} >= -1, key origin {} "
          ">= 0 and window {} >= 0",
          terms.chunk.size, terms.chunk.left_chunks, terms.chunk.key_origin, terms.chunk.window);
  require(terms.clip >= 0, "flash_attention: Shaw's clipping distance {} must be >= 0", terms.clip);
  if (terms.clipped.defined()) {
    check_same_kind(q, terms.clipped, "flash_attention");
    if (!(terms.clipped.shape() == Shape{batch, heads, q_len, 2 * terms.clip + 1}))
      fail("flash_attention: clipped logits {} must be (B, H, Lq, 2k+1) with k={}",
           terms.clipped.describe(), terms.clip);
  }
  if (terms.xl_query.defined() || terms.xl_r.defined()) {
    require(terms.xl_query.defined() && terms.xl_r.defined(),
            "flash_attention: Transformer-XL needs both xl_query and xl_r");
    check_same_kind(q, terms.xl_query, "flash_attention");
    check_same_kind(q, terms.xl_r, "flash_attention");
    if (!(terms.xl_query.shape() == q.shape() && terms.xl_r.shape() == Shape{heads, k_len, d}))
      fail("flash_attention: xl_query {} must match q {} and xl_r {} must be (H, Lk, D)",
           terms.xl_query.describe(), q.describe(), terms.xl_r.describe());
    require(terms.causal, "flash_attention: Transformer-XL terms need causal attention");
  }
  if (terms.fire.defined()) {
    const FireTerms& f = terms.fire;
    for (const Tensor* t : {&f.w1, &f.b1, &f.w2, &f.c, &f.threshold})
      check_same_kind(q, *t, "flash_attention");
    const std::int64_t hidden = f.w1.size(0);
    if (!(f.w1.shape() == Shape{hidden} && f.b1.shape() == Shape{hidden} &&
          f.w2.shape() == Shape{heads, hidden} && f.c.shape() == Shape{1} &&
          f.threshold.shape() == Shape{1}))
      fail(
          "flash_attention: FIRE w1 {}, b1 {}, w2 {}, c {}, threshold {} must be "
          "(hidden), (hidden), (H, hidden), (1), (1) with H={}",
          f.w1.describe(), f.b1.describe(), f.w2.describe(), f.c.describe(), f.threshold.describe(),
          heads);
    require(terms.causal, "flash_attention: FIRE needs causal attention");
  }
}

// The FIRE tensors in the order of the op's inputs after the XL terms.
std::vector<Tensor> fire_list(const FireTerms& f) { return {f.w1, f.b1, f.w2, f.c, f.threshold}; }

}  // namespace

Tensor flash_attention(const Tensor& q, const Tensor& k, const Tensor& v, const FlashTerms& terms) {
  check_same_kind(q, k, "flash_attention");
  check_same_kind(q, v, "flash_attention");
  if (!(q.dim() == 4 && k.dim() == 4 && k.shape() == v.shape() && k.size(0) == q.size(0) &&
        k.size(1) == q.size(1) && k.size(3) == q.size(3) && k.size(2) >= q.size(2)))
    fail("flash_attention: q {}, k {}, v {} must be (B, H, Lq, D), (B, H, Lk, D) with Lk >= Lq",
         q.describe(), k.describe(), v.describe());
  check_terms(q, k, terms);
  require_kernel(q.device(), Kernel::flash_attention, "flash_attention");
  FlashAttentionArgs args;
  args.q = rows_contiguous(q);
  args.k = rows_contiguous(k);
  args.v = rows_contiguous(v);
  auto contiguous_if = [](const Tensor& t) { return t.defined() ? t.contiguous() : t; };
  args.distance_bias = contiguous_if(terms.distance_bias);
  args.clipped = terms.clipped.defined() ? rows_contiguous(terms.clipped) : Tensor();
  args.xl_query = terms.xl_query.defined() ? rows_contiguous(terms.xl_query) : Tensor();
  args.xl_r = contiguous_if(terms.xl_r);
  const FireTerms& f = terms.fire;
  args.fire = {contiguous_if(f.w1), contiguous_if(f.b1), contiguous_if(f.w2), contiguous_if(f.c),
               contiguous_if(f.threshold)};
  args.clip = terms.clip;
  args.value_bins = terms.value_bins;
  args.scale = terms.scale;
  args.term_scale = terms.term_scale;
  args.causal = terms.causal;
  args.chunk = terms.chunk;
  args.query_tile = terms.query_tile;
  args.key_tile = terms.key_tile;
  // Read once here: the backward repeats the forward's precision wherever it runs.
  args.precision = q.dtype() == DType::f32 ? current_precision() : Precision::fp32;

  const std::int64_t batch = q.size(0), heads = q.size(1), q_len = q.size(2);
  const std::int64_t out_cols = q.size(3) + (terms.value_bins ? 2 * terms.clip + 1 : 0);
  Tensor out = empty_heads(batch, heads, q_len, out_cols, q);  // (B, H, Lq, D [+ 2k+1])
  Tensor lse = Tensor::empty({batch, heads, q_len}, q.dtype(), q.device());  // (B, H, Lq)
  std::vector<Tensor> inputs{q,         k, v, terms.distance_bias, terms.clipped, terms.xl_query,
                             terms.xl_r};
  for (const Tensor& t : fire_list(terms.fire)) inputs.push_back(t);
  const bool record = Tape::should_record(inputs);
  // bf16 on the CPU, recording: the kernel writes the output's rounding for the output
  // projection's forward (kept with out's storage until that product releases it:
  // autograd/ops/bf16_input.h). Only where each head row is rounded in the pieces a product
  // rounds the merged rows in (D a multiple of 16), and without Shaw's value bins (the
  // projection then reads out plus the bins' product, not out).
  const bool out_bf16_copy = record && args.precision == Precision::bf16 &&
                             q.device() == Device::cpu && q.size(3) % 16 == 0 &&
                             !terms.value_bins && out.numel() > 0;
  const std::shared_ptr<Storage> out16 = out_bf16_copy ? bf16_input(out).bits : nullptr;
  backend_of(q).flash_attention(args, out, lse,
                                out16 ? static_cast<std::uint16_t*>(out16->data()) : nullptr);

  if (record) {
    const Tensor saved_out = out.detach();
    const bool want_q = wants(q), want_k = wants(k), want_v = wants(v);
    const bool want_bias = wants(terms.distance_bias), want_clipped = wants(terms.clipped);
    const bool want_xq = wants(terms.xl_query), want_r = wants(terms.xl_r);
    std::vector<bool> want_fire;
    for (const Tensor& t : fire_list(terms.fire)) want_fire.push_back(wants(t));
    Tape::current().record(
        "flash_attention", inputs, out,
        [=](const Tensor& grad_out) {
          auto empty_if = [](bool wanted, const Tensor& t) {
            return wanted ? Tensor::empty(t.shape(), t.dtype(), t.device()) : Tensor();
          };
          FlashAttentionGrads grads;
          grads.q = want_q ? empty_heads_like(args.q) : Tensor();
          grads.k = want_k ? empty_heads_like(args.k) : Tensor();
          grads.v = want_v ? empty_heads_like(args.v) : Tensor();
          grads.distance_bias = empty_if(want_bias, args.distance_bias);
          grads.clipped = want_clipped ? empty_heads_like(args.clipped) : Tensor();
          grads.xl_query = want_xq ? empty_heads_like(args.xl_query) : Tensor();
          grads.xl_r = empty_if(want_r, args.xl_r);
          const std::vector<Tensor> fire_args = fire_list(args.fire);
          Tensor* fire_grads[] = {&grads.fire.w1, &grads.fire.b1, &grads.fire.w2, &grads.fire.c,
                                  &grads.fire.threshold};
          for (std::size_t n = 0; n < fire_args.size(); ++n)
            *fire_grads[n] = empty_if(want_fire[n], fire_args[n]);
          backend_of(saved_out).flash_attention_backward(args, saved_out, lse,
                                                         rows_contiguous(grad_out), grads);
          std::vector<Tensor> result{grads.q,       grads.k,        grads.v,   grads.distance_bias,
                                     grads.clipped, grads.xl_query, grads.xl_r};
          for (const Tensor& t : fire_list(grads.fire)) result.push_back(t);
          return result;
        },
        {args.q, args.k, args.v, saved_out, lse});
  }
  return out;
}

}  // namespace relpos
