// Transformer-XL's u and v folded into the tiled attention (the kernel forms q + u and
// q + v per query tile): against the path that materialises them, the layer's fused
// attention (add(q, u), add(q, v), one position-aware softmax), for the output and every
// gradient (q, k, v, u, v_bias, W_r R), in f32 and with bf16 products. The fp64 gradcheck
// of the op with u and v as inputs and the 1-vs-2-thread identity are in
// test_flash_attention.cpp (its every-term case has XL's terms when causal).
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "autograd/ops/shape.h"
#include "autograd/precision.h"
#include "autograd/random.h"
#include "autograd/tape.h"
#include "layers/scaled_attention.h"
#include "test_helpers.h"

using namespace relpos;
using testing::relative_error;

namespace {

constexpr std::int64_t kBatch = 2, kHeads = 3, kDim = 16, kQueries = 70, kKeys = 100;

// The output and the gradients of {q, k, v, u, v_bias, W_r R} for <out, w> on `path`; q is
// a (B, H, Lq, D) view of (B, Lq, H, D) rows, as the projections give it.
std::vector<Tensor> xl_results(AttentionPath path, Precision precision) {
  Rng rng(2401);
  std::vector<Tensor> leaves{randn({kBatch, kQueries, kHeads, kDim}, rng, DType::f32),  // q's rows
                             randn({kBatch, kHeads, kKeys, kDim}, rng, DType::f32),     // k
                             randn({kBatch, kHeads, kKeys, kDim}, rng, DType::f32),     // v
                             randn({kHeads, kDim}, rng, DType::f32, 0.5),               // u
                             randn({kHeads, kDim}, rng, DType::f32, 0.5),               // v_bias
                             randn({kHeads, kKeys, kDim}, rng, DType::f32, 0.5)};       // W_r R
  for (Tensor& t : leaves) t.set_requires_grad(true);
  PositionTerms terms;
  terms.xl_u = leaves[3];
  terms.xl_v = leaves[4];
  terms.xl_r = leaves[5];
  Tensor out;
  {
    PrecisionScope scope(precision);
    const Tensor q = permute(leaves[0], {0, 2, 1, 3});  // (B, H, Lq, D)
    out = scaled_attention(q, leaves[1], leaves[2], terms, true, path);
  }
  backward(out, randn(out.shape(), rng, DType::f32));
  std::vector<Tensor> result{out.detach()};
  for (const Tensor& t : leaves) result.push_back(t.grad());
  return result;
}

void check_fold(Precision precision, const std::vector<double>& tolerance) {
  const auto folded = xl_results(AttentionPath::flash, precision);
  const auto materialised = xl_results(AttentionPath::fused, precision);
  const char* names[] = {"output", "dq", "dk", "dv", "du", "dv_bias", "d(W_r R)"};
  for (std::size_t i = 0; i < folded.size(); ++i) {
    INFO(names[i]);
    REQUIRE(folded[i].defined());
    REQUIRE(materialised[i].defined());
    CHECK(relative_error(folded[i], materialised[i]) <= tolerance[i]);
  }
}

}  // namespace

TEST_CASE("flash attention with u and v folded matches q + u and q + v materialised (f32)",
          "[attention][flash][xl]") {
  // f32 sums in other orders: the reductions of du and dv over B·Lq = 140 rows, the rest
  // over the keys.
  check_fold(Precision::fp32, {1e-5, 1e-5, 1e-5, 1e-5, 1e-5, 1e-5, 1e-5});
}

TEST_CASE("flash attention with u and v folded matches q + u and q + v materialised (bf16)",
          "[attention][flash][xl][bf16]") {
  if (!testing::bf16_usable()) return;
  // Both paths round the products' operands to bf16 (q + u and q + v formed in f32 on
  // both), and sum in other orders (and the fused path's p·v rounds p after
  // normalising, the tiled kernel before): within 8 bf16 unit roundoffs (8 · 2^-8), dv_bias
  // 2× (its sums cancel: attention_harness.cpp's conditioning).
  const double ulp8 = 8.0 / 256;
  check_fold(Precision::bf16, {ulp8, ulp8, ulp8, ulp8, ulp8, 2 * ulp8, ulp8});
}
