// train.precision=bf16 rounds a linear layer's weight once until it changes
// (autograd/ops/bf16_weight.h, docs/bf16.md): the forward's x·Wᵀ, the backward's dz·W and
// the next micro-batch's products read one kept rounding, and an optimizer step makes a
// new one. The results are the bits of a product that rounds W itself (matmul). Each test
// needs bf16 products (oneDNN and a CPU with AVX-512-BF16 or AMX); without them it says
// WARN("SKIPPED: ...") and returns.
#include <catch2/catch.hpp>
#include <cstdint>

#include "autograd/ops/bf16_input.h"
#include "autograd/ops/bf16_weight.h"
#include "autograd/ops/linear.h"
#include "autograd/ops/matmul.h"
#include "autograd/ops/shape.h"
#include "autograd/precision.h"
#include "autograd/random.h"
#include "autograd/tape.h"
#include "optim/sgd.h"
#include "test_helpers.h"

using namespace relpos;

namespace {

using testing::f32_bits;
using testing::leaf;

struct Results {
  Tensor y, dx, dw;
};

// y = x Wᵀ (no bias: the reference adds nothing) and its gradients for dL/dy = g.
Results linear_step(const Tensor& x0, const Tensor& w, const Tensor& g) {
  const Tensor x = leaf(x0);
  w.zero_grad();
  const Tensor y = linear(x, w, Tensor());
  backward(y, g);
  return {y, x.grad(), w.grad()};
}

// The same products by matmul, each rounding its own f32 operands.
Results matmul_reference(const Tensor& x0, const Tensor& w, const Tensor& g) {
  NoGradGuard no_grad;
  const Tensor wd = w.detach();
  return {matmul(x0, transpose(wd, 0, 1)), matmul(g, wd), matmul(transpose(g, 0, 1), x0)};
}

void require_same_bits(const Results& a, const Results& b) {
  REQUIRE(f32_bits(a.y) == f32_bits(b.y));
  REQUIRE(f32_bits(a.dx) == f32_bits(b.dx));
  REQUIRE(f32_bits(a.dw) == f32_bits(b.dw));
}

}  // namespace

TEST_CASE(
    "bf16 linear rounds its weight once per value of W and gives the bits of a product "
    "rounding W itself (skipped without bf16 products)",
    "[bf16][linear]") {
  if (!testing::bf16_usable()) return;
  // in = 40: each row of W ends in a tail shorter than the 16-value vector rounding.
  const std::int64_t rows = 37, in = 40, out = 24;
  Rng rng(2024);
  const Tensor x0 = randn({rows, in}, rng), g = randn({rows, out}, rng);
  Tensor w = leaf(randn({out, in}, rng, DType::f32, 0.3));
  Sgd sgd({{"w", w}}, SgdOptions{});
  const PrecisionScope bf16(Precision::bf16);

  const std::uint64_t before = bf16_weight_roundings();
  const Results first = linear_step(x0, w, g);
  CHECK(bf16_weight_roundings() == before + 1);  // the forward's, read again by dx = dz W
  require_same_bits(first, matmul_reference(x0, w, g));

  // A second micro-batch before the optimizer step: no new rounding, the same bits.
  const Results second = linear_step(x0, w, g);
  CHECK(bf16_weight_roundings() == before + 1);
  require_same_bits(second, first);

  // The step changes W (and its version): the next product rounds the new values.
  sgd.step(0.5);
  const Results third = linear_step(x0, w, g);
  CHECK(bf16_weight_roundings() == before + 2);
  require_same_bits(third, matmul_reference(x0, w, g));
  REQUIRE(f32_bits(third.y) != f32_bits(first.y));

  // A write through copy_ is seen as well.
  {
    NoGradGuard no_grad;
    w.copy_(randn({out, in}, rng));
  }
  const Results fourth = linear_step(x0, w, g);
  CHECK(bf16_weight_roundings() == before + 3);
  require_same_bits(fourth, matmul_reference(x0, w, g));
}

TEST_CASE("fp32 linear keeps no bf16 copy of its weight", "[bf16][linear]") {
  Rng rng(7);
  const Tensor x0 = randn({5, 8}, rng), g = randn({5, 3}, rng);
  const Tensor w = leaf(randn({3, 8}, rng));
  const std::uint64_t before = bf16_weight_roundings();
  linear_step(x0, w, g);
  REQUIRE(bf16_weight_roundings() == before);
  REQUIRE(find_bf16_input(w) == nullptr);
}
