// GPU vs CPU: the relative-position gathers and their adjoints, the bucket
// gather (+backward), and the fused relative softmax (+backward) with every
// combination of position terms, causal or not, with and without memory.
#include <catch2/catch.hpp>

#include "cuda_test_helpers.h"

using namespace relpos;
using namespace relpos::cuda_testing;

namespace {

constexpr std::int64_t kBatch = 2, kHeads = 3;

struct Lengths {
  std::int64_t q_len, k_len, clip;
};

// Lk > Lq is a memory of Lk - Lq earlier keys; clip 0 leaves a single bin.
const Lengths kLengths[] = {{5, 5, 2}, {5, 9, 2}, {4, 11, 0}, {3, 40, 6}};

RelativeShape shape_of(const Lengths& l, std::int64_t rows) {
  return {rows, l.q_len, l.k_len, l.clip};
}

}  // namespace

TEST_CASE("relative gathers and their adjoints are bit-identical to the CPU", "[cuda]") {
  Rng rng(81);
  for (const Lengths& l : kLengths) {
    const std::int64_t rows = kBatch * kHeads * l.q_len, width = 2 * l.clip + 1;
    const std::int64_t n_dist = l.q_len + l.k_len - 1;
    struct Kind {
      RelativeGather kind;
      std::int64_t rows;
      Shape src;
    };
    const Kind kinds[] = {{RelativeGather::distance, kHeads * l.q_len, {kHeads, n_dist}},
                          {RelativeGather::clipped, rows, {rows, width}},
                          {RelativeGather::shifted, rows, {rows, l.k_len}}};
    for (const Kind& k : kinds) {
      INFO("kind " << static_cast<int>(k.kind) << " Lq " << l.q_len << " Lk " << l.k_len
                   << " clip " << l.clip);
      const RelativeShape shape = shape_of(l, k.rows);
      Pair src = randn_pair(k.src, rng);
      Pair out = poisoned_pair({k.rows, l.k_len});
      cpu().relative_gather(k.kind, src.host, out.host, shape);
      gpu().relative_gather(k.kind, src.device, out.device, shape);
      require_identical(out.device, out.host);

      Pair grad_out = randn_pair({k.rows, l.k_len}, rng);
      Pair grad_src = poisoned_pair(k.src);
      cpu().relative_scatter(k.kind, grad_out.host, grad_src.host, shape);
      gpu().relative_scatter(k.kind, grad_out.device, grad_src.device, shape);
      require_identical(grad_src.device, grad_src.host);
    }
  }
}

TEST_CASE("bucket gather and its backward are bit-identical to the CPU", "[cuda]") {
  Rng rng(82);
  const std::int64_t buckets = 32, heads = 6, n = 77;
  Pair table = randn_pair({buckets, heads}, rng);
  Pair index = integer_pair({n}, rng, 0, buckets - 5, DType::i64);  // some buckets unused
  Pair out = poisoned_pair({heads, n});
  cpu().bucket_gather(table.host, index.host, out.host);
  gpu().bucket_gather(table.device, index.device, out.device);
  require_identical(out.device, out.host);

  Pair grad_out = randn_pair({heads, n}, rng);
  Pair grad_table = poisoned_pair({buckets, heads});
  cpu().bucket_gather_backward(grad_out.host, index.host, grad_table.host);
  gpu().bucket_gather_backward(grad_out.device, index.device, grad_table.device);
  require_identical(grad_table.device, grad_table.host);
}

namespace {

struct TermSet {
  bool bias, clipped, shifted, causal;
};

const TermSet kTermSets[] = {
    {false, false, false, false}, {false, false, false, true}, {true, false, false, false},
    {true, false, false, true},   {false, true, false, true},  {false, false, true, false},
    {true, true, true, true},     {true, true, false, false}};

// Both sides' arguments, built from the same host values.
struct ArgsPair {
  RelativeSoftmaxArgs host, device;
};

ArgsPair make_args(const Lengths& l, const TermSet& t, Rng& rng) {
  const std::int64_t rows = kBatch * kHeads * l.q_len;
  ArgsPair a;
  for (RelativeSoftmaxArgs* args : {&a.host, &a.device}) {
    args->shape = shape_of(l, rows);
    args->heads = kHeads;
    args->scale = 0.35;
    args->term_scale = 0.7;
    args->causal = t.causal;
  }
  auto set = [&](Tensor RelativeSoftmaxArgs::*field, const Shape& shape) {
    Pair p = randn_pair(shape, rng, 2.0);
    a.host.*field = p.host;
    a.device.*field = p.device;
  };
  set(&RelativeSoftmaxArgs::scores, {rows, l.k_len});
  if (t.bias) set(&RelativeSoftmaxArgs::distance_bias, {kHeads, l.q_len + l.k_len - 1});
  if (t.clipped) set(&RelativeSoftmaxArgs::clipped, {rows, 2 * l.clip + 1});
  if (t.shifted) set(&RelativeSoftmaxArgs::shifted, {rows, l.k_len});
  return a;
}

Pair poisoned_like(const Tensor& t) { return t.defined() ? poisoned_pair(t.shape()) : Pair{}; }

}  // namespace

TEST_CASE("fused relative softmax, forward and backward, every term combination", "[cuda]") {
  Rng rng(83);
  for (const Lengths& l : kLengths) {
    for (const TermSet& t : kTermSets) {
      INFO("Lq " << l.q_len << " Lk " << l.k_len << " clip " << l.clip << " bias " << t.bias
                 << " clipped " << t.clipped << " shifted " << t.shifted << " causal "
                 << t.causal);
      const ArgsPair args = make_args(l, t, rng);
      const std::int64_t rows = args.host.shape.rows;
      Pair probs = poisoned_pair({rows, l.k_len});
      cpu().relative_softmax(args.host, probs.host);
      gpu().relative_softmax(args.device, probs.device);
      require_match(probs, 1e-6);

      Pair p = pair_of(probs.host);  // the same probabilities on both sides
      Pair grad_probs = randn_pair({rows, l.k_len}, rng);
      Pair d_scores = poisoned_pair({rows, l.k_len});
      Pair d_bias = poisoned_like(args.host.distance_bias);
      Pair d_clipped = poisoned_like(args.host.clipped);
      Pair d_shifted = poisoned_like(args.host.shifted);
      cpu().relative_softmax_backward(args.host, p.host, grad_probs.host,
                                      {d_scores.host, d_bias.host, d_clipped.host, d_shifted.host});
      gpu().relative_softmax_backward(
          args.device, p.device, grad_probs.device,
          {d_scores.device, d_bias.device, d_clipped.device, d_shifted.device});
      require_match(d_scores, 0.1);
      if (t.bias) require_match(d_bias, static_cast<double>(kBatch * l.q_len));
      if (t.clipped) require_match(d_clipped, 1.0);
      if (t.shifted) require_match(d_shifted, 0.1);
    }
  }
}
