// Shaw's terms on the flash path when q lies in the attention layer's (B, L, H, D) layout
// (layers/scaled_attention.cpp): the key logits q·Bᵀ and the value output out + bins·A are
// then products over the (B·L·H, ·) rows of that layout instead of per-(b, h) products of
// copies. Checked against the same attention fed a contiguous q (the per-head products they
// replace) and the composed reference, outputs and every gradient; an fp64 gradcheck; and
// the same bits for 1 and 2 threads.
#include <catch2/catch.hpp>

#include "autograd/ops/elementwise.h"
#include "autograd/ops/reduce.h"
#include "autograd/ops/shape.h"
#include "autograd/tape.h"
#include "autograd/threads.h"
#include "layers/scaled_attention.h"
#include "test_helpers.h"

using namespace relpos;
using testing::relative_error;

namespace {

constexpr std::int64_t kClip = 5;

struct ShawSizes {
  std::int64_t batch = 2, heads = 3, queries = 40, keys = 45, dim = 8;
};

struct ShawInputs {
  Tensor rows, k, v, keys, values, weights;  // rows: q as (B, Lq, H, D); weights like out
};

ShawInputs shaw_inputs(DType dtype, const ShawSizes& n = {}) {
  Rng rng(83);
  return {randn({n.batch, n.queries, n.heads, n.dim}, rng, dtype),
          randn({n.batch, n.heads, n.keys, n.dim}, rng, dtype),
          randn({n.batch, n.heads, n.keys, n.dim}, rng, dtype),
          randn({2 * kClip + 1, n.dim}, rng, dtype, 0.5),
          randn({2 * kClip + 1, n.dim}, rng, dtype, 0.5),
          randn({n.batch, n.heads, n.queries, n.dim}, rng, dtype)};
}

PositionTerms shaw_terms(const Tensor& keys, const Tensor& values) {
  PositionTerms t;
  t.shaw_keys = keys;
  t.shaw_values = values;
  t.shaw_clip = kClip;
  return t;
}

// <attention, weights> and the output, q in the projections' layout (a view of `rows`) or
// copied into a contiguous (B, H, Lq, D).
Tensor shaw_attention(const std::vector<Tensor>& x, const Tensor& weights, bool head_layout,
                      AttentionPath path) {
  const Tensor heads = permute(x[0], {0, 2, 1, 3});  // (B, H, Lq, D)
  const Tensor q = head_layout ? heads : mul_scalar(heads, 1.0);
  REQUIRE(q.is_contiguous() == !head_layout);
  const Tensor out = scaled_attention(q, x[1], x[2], shaw_terms(x[3], x[4]), true, path);
  return sum(mul(out, weights));
}

// The loss and the gradients of rows, k, v, keys and values.
std::vector<Tensor> loss_and_gradients(const ShawInputs& in, bool head_layout, AttentionPath path) {
  std::vector<Tensor> x;
  for (const Tensor& t : {in.rows, in.k, in.v, in.keys, in.values}) x.push_back(testing::leaf(t));
  const Tensor loss = shaw_attention(x, in.weights, head_layout, path);
  backward(loss);
  std::vector<Tensor> result{loss};
  for (const Tensor& t : x) result.push_back(t.grad());
  return result;
}

}  // namespace

TEST_CASE("Shaw on the flash path: q in the layer's layout gives what a contiguous q gives",
          "[attention][flash][shaw]") {
  for (DType dtype : {DType::f64, DType::f32}) {
    const ShawInputs in = shaw_inputs(dtype);
    const auto rows = loss_and_gradients(in, true, AttentionPath::flash);
    const auto copied = loss_and_gradients(in, false, AttentionPath::flash);
    const auto composed = loss_and_gradients(in, false, AttentionPath::composed);
    const double tolerance = dtype == DType::f64 ? 1e-12 : 1e-5;
    for (std::size_t i = 0; i < rows.size(); ++i) {
      INFO(name_of(dtype) << " result " << i << " (loss, then the gradients of q, k, v, B, A)");
      REQUIRE(rows[i].defined());
      CHECK(relative_error(rows[i], copied[i]) <= tolerance);
      CHECK(relative_error(rows[i], composed[i]) <= tolerance);
    }
  }
}

TEST_CASE("gradcheck: Shaw on the flash path with q in the layer's layout",
          "[attention][flash][shaw][gradcheck]") {
  const ShawInputs in = shaw_inputs(DType::f64);
  std::vector<Tensor> x;
  for (const Tensor& t : {in.rows, in.k, in.v, in.keys, in.values}) x.push_back(testing::leaf(t));
  testing::require_gradcheck(
      [&](const std::vector<Tensor>& inputs) {
        return shaw_attention(inputs, in.weights, true, AttentionPath::flash);
      },
      x);
}

TEST_CASE("Shaw on the flash path with q in the layer's layout: the same bits with 1 and 2 threads",
          "[attention][flash][shaw]") {
  // Large enough that the kernel and the products split their work over threads.
  const ShawInputs in =
      shaw_inputs(DType::f32, {.batch = 2, .heads = 4, .queries = 128, .keys = 128, .dim = 32});
  const int threads = num_threads();
  set_num_threads(1);
  const auto one = loss_and_gradients(in, true, AttentionPath::flash);
  set_num_threads(2);
  const auto two = loss_and_gradients(in, true, AttentionPath::flash);
  set_num_threads(threads);
  for (std::size_t i = 0; i < one.size(); ++i) {
    INFO("result " << i << " (loss, then the gradients of q, k, v, B, A)");
    CHECK(testing::f32_bits(one[i]) == testing::f32_bits(two[i]));
  }
}
