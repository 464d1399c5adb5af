#include "autograd/ops/relative.h"

#include "autograd/backend.h"
#include "autograd/ops/check.h"
#include "autograd/tape.h"

namespace relpos {
namespace {

// (..., Lq, Lk) -> the row shape used by the kernels.
RelativeShape rows_of(const Tensor& t, std::int64_t q_len, std::int64_t k_len, std::int64_t clip) {
  return {t.numel() / (t.size(-1) == 0 ? 1 : t.size(-1)), q_len, k_len, clip};
}

Tensor gather_op(RelativeGather kind, const Tensor& src, const Shape& out_shape,
                 const RelativeShape& shape, const char* name) {
  Tensor in = src.contiguous();
  Tensor out = Tensor::empty(out_shape, src.dtype(), src.device());
  backend_of(out).relative_gather(kind, in, out, shape);
  if (Tape::should_record({&src})) {
    Shape src_shape = src.shape();
    Tape::current().record(name, {src}, out, [kind, src_shape, shape](const Tensor& g) {
      Tensor grad = Tensor::empty(src_shape, g.dtype(), g.device());
      backend_of(g).relative_scatter(kind, g.contiguous(), grad, shape);
      return std::vector<Tensor>{grad};
    });
  }
  return out;
}

}  // namespace

Tensor distance_expand(const Tensor& bias, std::int64_t q_len, std::int64_t k_len) {
  check_floating(bias, "distance_expand");
  if (!(bias.dim() == 2 && bias.size(1) == q_len + k_len - 1))
    fail("distance_expand: bias {} must be (H, Lq+Lk-1) = (H, {}) for Lq={} Lk={}", bias.describe(),
         q_len + k_len - 1, q_len, k_len);
  const std::int64_t heads = bias.size(0);
  return gather_op(RelativeGather::distance, bias, {heads, q_len, k_len},
                   {heads * q_len, q_len, k_len, 0}, "distance_expand");
}

Tensor clipped_gather(const Tensor& logits, std::int64_t k_len, std::int64_t clip) {
  check_floating(logits, "clipped_gather");
  if (!(logits.dim() >= 2 && logits.size(-1) == 2 * clip + 1 && clip >= 0))
    fail("clipped_gather: logits {} must end in 2k+1 = {} columns", logits.describe(),
         2 * clip + 1);
  const std::int64_t q_len = logits.size(-2);
  require(k_len >= q_len, "clipped_gather: Lk={} < Lq={}", k_len, q_len);
  Shape out_shape = logits.shape();
  out_shape.back() = k_len;
  return gather_op(RelativeGather::clipped, logits, out_shape, rows_of(logits, q_len, k_len, clip),
                   "clipped_gather");
}

Tensor clipped_bin(const Tensor& probs, std::int64_t clip) {
  check_floating(probs, "clipped_bin");
  if (!(probs.dim() >= 2 && clip >= 0))
    fail("clipped_bin: bad input {} for k={}", probs.describe(), clip);
  const std::int64_t q_len = probs.size(-2), k_len = probs.size(-1);
  require(k_len >= q_len, "clipped_bin: Lk={} < Lq={}", k_len, q_len);
  const RelativeShape shape = rows_of(probs, q_len, k_len, clip);
  Shape out_shape = probs.shape();
  out_shape.back() = 2 * clip + 1;
  Tensor in = probs.contiguous();
  Tensor out = Tensor::empty(out_shape, probs.dtype(), probs.device());
  backend_of(out).relative_scatter(RelativeGather::clipped, in, out, shape);
  if (Tape::should_record({&probs})) {
    Shape in_shape = probs.shape();
    Tape::current().record("clipped_bin", {probs}, out, [in_shape, shape](const Tensor& g) {
      Tensor grad = Tensor::empty(in_shape, g.dtype(), g.device());
      backend_of(g).relative_gather(RelativeGather::clipped, g.contiguous(), grad, shape);
      return std::vector<Tensor>{grad};
    });
  }
  return out;
}

Tensor rel_shift(const Tensor& raw) {
  check_floating(raw, "rel_shift");
  if (!(raw.dim() >= 2)) fail("rel_shift: input {} must have rank >= 2", raw.describe());
  const std::int64_t q_len = raw.size(-2), k_len = raw.size(-1);
  if (!(k_len >= q_len)) fail("rel_shift: Lk={} < Lq={} in {}", k_len, q_len, raw.describe());
  return gather_op(RelativeGather::shifted, raw, raw.shape(), rows_of(raw, q_len, k_len, 0),
                   "rel_shift");
}

Tensor bucket_gather(const Tensor& table, const Tensor& buckets) {
  check_floating(table, "bucket_gather");
  if (!(table.dim() == 2))
    fail("bucket_gather: table {} must be (num_buckets, H)", table.describe());
  if (!(buckets.dtype() == DType::i64 && buckets.dim() == 1))
    fail("bucket_gather: buckets {} must be a 1-D i64 tensor", buckets.describe());
  Tensor idx = buckets.to(Device::cpu).contiguous();
  const std::int64_t* b = idx.data<std::int64_t>();
  for (std::int64_t n = 0; n < idx.numel(); ++n)
    if (!(b[n] >= 0 && b[n] < table.size(0)))
      fail("bucket_gather: bucket {} at position {} is outside table {}", b[n], n,
           table.describe());
  Tensor in = table.contiguous();
  Tensor device_idx = buckets.contiguous();
  Tensor out = Tensor::empty({table.size(1), buckets.numel()}, table.dtype(), table.device());
  backend_of(out).bucket_gather(in, device_idx, out);
  if (Tape::should_record({&table})) {
    Shape table_shape = table.shape();
    Tape::current().record("bucket_gather", {table}, out,
                           [device_idx, table_shape](const Tensor& g) {
                             Tensor grad = Tensor::empty(table_shape, g.dtype(), g.device());
                             backend_of(g).bucket_gather_backward(g.contiguous(), device_idx, grad);
                             return std::vector<Tensor>{grad};
                           });
  }
  return out;
}

Tensor relative_softmax(const Tensor& scores, const RelativeTerms& terms) {
  check_floating(scores, "relative_softmax");
  if (!(scores.dim() == 4))
    fail("relative_softmax: scores {} must be (B, H, Lq, Lk)", scores.describe());
  const std::int64_t batch = scores.size(0), heads = scores.size(1);
  const std::int64_t q_len = scores.size(2), k_len = scores.size(3);
  require(k_len >= q_len, "relative_softmax: Lk={} < Lq={}", k_len, q_len);
  RelativeSoftmaxArgs args;
  args.scores = scores.contiguous();
  args.shape = {batch * heads * q_len, q_len, k_len, terms.clip};
  args.heads = heads;
  args.scale = terms.scale;
  args.term_scale = terms.term_scale;
  args.causal = terms.causal;
  if (terms.distance_bias.defined()) {
    check_same_kind(scores, terms.distance_bias, "relative_softmax");
    if (!(terms.distance_bias.shape() == Shape{heads, q_len + k_len - 1}))
      fail("relative_softmax: distance bias {} must be (H, Lq+Lk-1) = ({}, {})",
           terms.distance_bias.describe(), heads, q_len + k_len - 1);
    args.distance_bias = terms.distance_bias.contiguous();
  }
  if (terms.clipped.defined()) {
    check_same_kind(scores, terms.clipped, "relative_softmax");
    if (!(terms.clipped.shape() == Shape{batch, heads, q_len, 2 * terms.clip + 1}))
      fail("relative_softmax: clipped logits {} must be (B, H, Lq, 2k+1) with k={}",
           terms.clipped.describe(), terms.clip);
    args.clipped = terms.clipped.contiguous();
  }
  if (terms.shifted.defined()) {
    check_same_kind(scores, terms.shifted, "relative_softmax");
    if (!(terms.shifted.shape() == scores.shape()))
      fail("relative_softmax: shifted logits {} must match scores {}", terms.shifted.describe(),
           scores.describe());
    args.shifted = terms.shifted.contiguous();
  }
  Tensor probs = Tensor::empty(scores.shape(), scores.dtype(), scores.device());
  backend_of(probs).relative_softmax(args, probs);
  std::vector<Tensor> inputs{scores, terms.distance_bias, terms.clipped, terms.shifted};
  if (Tape::should_record(inputs)) {
    Tensor saved = probs.detach();
    const bool want_bias = terms.distance_bias.defined() && terms.distance_bias.requires_grad();
    const bool want_clipped = terms.clipped.defined() && terms.clipped.requires_grad();
    const bool want_shifted = terms.shifted.defined() && terms.shifted.requires_grad();
    Tape::current().record(
        "relative_softmax", inputs, probs,
        [args, saved, want_bias, want_clipped, want_shifted](const Tensor& g) {
          auto like = [&](bool wanted, const Tensor& t) {
            return wanted ? Tensor::empty(t.shape(), t.dtype(), t.device()) : Tensor();
          };
          RelativeSoftmaxGrads grads;
          grads.scores = Tensor::empty(saved.shape(), saved.dtype(), saved.device());
          grads.distance_bias = like(want_bias, args.distance_bias);
          grads.clipped = like(want_clipped, args.clipped);
          grads.shifted = like(want_shifted, args.shifted);
          backend_of(saved).relative_softmax_backward(args, saved, g.contiguous(), grads);
          return std::vector<Tensor>{grads.scores, grads.distance_bias, grads.clipped,
                                     grads.shifted};
        },
        {saved});
  }
  return probs;
}

}  // namespace relpos
