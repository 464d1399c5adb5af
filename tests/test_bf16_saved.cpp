// train.precision=bf16 keeps a linear layer's input for the backward as the bf16 rounding
// its forward product used (autograd/ops/bf16_input.h, docs/bf16.md): the results are the
// bits of rounding the f32 input in every product, the kept copy takes half of f32's
// bytes, and a small language model's training step peaks lower than in fp32. Each test
// needs bf16 products (oneDNN and a CPU with AVX-512-BF16 or AMX); without them it says
// WARN("SKIPPED: ...") and returns.
#include <catch2/catch.hpp>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "autograd/allocator.h"
#include "autograd/ops/elementwise.h"
#include "autograd/ops/linear.h"
#include "autograd/ops/loss.h"
#include "autograd/ops/matmul.h"
#include "autograd/ops/reduce.h"
#include "autograd/ops/shape.h"
#include "autograd/precision.h"
#include "autograd/random.h"
#include "autograd/tape.h"
#include "layers/transformer.h"
#include "test_helpers.h"

using namespace relpos;

namespace {

using testing::f32_bits;
using testing::leaf;

}  // namespace

// Two linear layers read one x, as attention's q and k do: the first rounds x while
// keeping the copy, the second multiplies by that copy. The reference takes the path
// where nothing of x is kept (weights that need no gradient), so every product rounds its
// own f32 operands, and dW = Gᵀ x by matmul, which rounds x itself.
TEST_CASE(
    "bf16 linear layers keeping x as bf16 give the bits of rounding x in each product "
    "(skipped without bf16 products)",
    "[bf16][linear]") {
  if (!testing::bf16_usable()) return;
  const std::int64_t in = 48, out = 40, rows = 3 * 13;
  Rng rng(161);
  const Tensor x0 = randn({3, 13, in}, rng);
  const Tensor w1 = randn({out, in}, rng, DType::f32, 0.2), w2 = randn({out, in}, rng);
  const Tensor b1 = randn({out}, rng), b2 = randn({out}, rng);
  const Tensor g = randn({3, 13, out}, rng);
  const PrecisionScope bf16(Precision::bf16);

  const Tensor x = leaf(x0), lw1 = leaf(w1), lw2 = leaf(w2), lb1 = leaf(b1), lb2 = leaf(b2);
  const Tensor y = add(linear(x, lw1, lb1), linear(x, lw2, lb2));
  backward(y, g);

  const Tensor xr = leaf(x0), rb1 = leaf(b1), rb2 = leaf(b2);
  const Tensor y_ref = add(linear(xr, w1, rb1), linear(xr, w2, rb2));
  backward(y_ref, g);
  Tensor dw_ref;
  {
    NoGradGuard no_grad;
    dw_ref = matmul(transpose(reshape(g, {rows, out}), 0, 1), reshape(x0, {rows, in}));
  }

  REQUIRE(f32_bits(y) == f32_bits(y_ref));
  REQUIRE(f32_bits(x.grad()) == f32_bits(xr.grad()));
  REQUIRE(f32_bits(lw1.grad()) == f32_bits(dw_ref));
  REQUIRE(f32_bits(lw2.grad()) == f32_bits(dw_ref));
  REQUIRE(f32_bits(lb1.grad()) == f32_bits(rb1.grad()));
  REQUIRE(f32_bits(lb2.grad()) == f32_bits(rb2.grad()));
}

namespace {

// Bytes a linear layer keeps after its forward once its input is dropped: its output and
// what its backward saved. The input is a non-leaf made by add, which saves nothing, so
// the linear layer alone can hold it; or, `input_saved`, by mul_scalar, which saves its
// output for its own backward.
std::size_t kept_by_linear(Precision precision, bool input_saved, std::int64_t rows,
                           std::int64_t in) {
  Rng rng(162);
  const Tensor x0 = leaf(randn({rows, in}, rng));
  const Tensor w = leaf(randn({32, in}, rng));
  Allocator& allocator = allocator_for(Device::cpu);
  const std::size_t before = allocator.stats().current_bytes;
  Tensor y;
  {
    const PrecisionScope scope(precision);
    y = linear(input_saved ? mul_scalar(x0, 2.0) : add(x0, x0), w, Tensor());
  }
  const std::size_t kept = allocator.stats().current_bytes - before;
  backward(sum(y));
  REQUIRE(w.grad().defined());
  return kept;
}

}  // namespace

TEST_CASE(
    "a bf16 linear layer keeps its input in half of f32's bytes, and no copy of an input "
    "that another op keeps (skipped without bf16 products)",
    "[bf16][linear][memory]") {
  if (!testing::bf16_usable()) return;
  const std::int64_t rows = 96, in = 80;
  for (bool input_saved : {false, true}) {
    const std::size_t fp32 = kept_by_linear(Precision::fp32, input_saved, rows, in);
    const std::size_t bf16 = kept_by_linear(Precision::bf16, input_saved, rows, in);
    INFO("input saved by its producer: " << input_saved << "; kept after the forward: fp32 " << fp32
                                         << " B, bf16 " << bf16 << " B");
    const std::size_t halved = input_saved ? 0 : static_cast<std::size_t>(rows * in) * 2;
    // bf16 also keeps the weight's rounding (32, in) with the weight
    // (autograd/ops/bf16_weight.h).
    const std::size_t weight_copy = static_cast<std::size_t>(32 * in) * 2;
    REQUIRE(fp32 + weight_copy == bf16 + halved);
  }
}

namespace {

// The allocator's peak above what was allocated before, over one forward, loss and
// backward of a small T5 language model.
std::size_t step_peak(Precision precision) {
  ModelConfig config;
  config.vocab = 256;
  config.d_model = 64;
  config.n_layers = 2;
  config.n_heads = 2;
  config.d_ff = 256;
  config.position.scheme = "t5";
  Rng rng(163);
  const TransformerLM model(config, rng);
  const std::int64_t batch = 4, len = 64;
  Tensor tokens = Tensor::empty({batch * len}, DType::i64);
  for (std::int64_t i = 0; i < tokens.numel(); ++i)
    tokens.data<std::int64_t>()[i] = static_cast<std::int64_t>(rng.below(config.vocab));
  const Tensor inputs = reshape(tokens, {batch, len});
  Allocator& allocator = allocator_for(Device::cpu);
  allocator.reset_peak();
  const std::size_t before = allocator.stats().current_bytes;
  {
    const PrecisionScope scope(precision);
    const Tensor logits = model.forward(inputs);  // (B, L, V)
    backward(cross_entropy(reshape(logits, {batch * len, config.vocab}), tokens));
  }
  for (const NamedParameter& p : model.parameters()) REQUIRE(p.tensor.grad().defined());
  return allocator.stats().peak_bytes - before;
}

}  // namespace

TEST_CASE(
    "a bf16 training step of a small language model peaks below fp32's "
    "(skipped without bf16 products)",
    "[bf16][memory]") {
  if (!testing::bf16_usable()) return;
  const std::size_t fp32 = step_peak(Precision::fp32);
  const std::size_t bf16 = step_peak(Precision::bf16);
  INFO("peak tensor bytes: fp32 " << fp32 << ", bf16 " << bf16);
  REQUIRE(bf16 < fp32);
}
