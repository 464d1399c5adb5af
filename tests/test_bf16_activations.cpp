// train.precision=bf16: the ops whose output or gradient a bf16 product reads write its bf16
// rounding in their own pass (autograd/ops/bf16_input.h, docs/bf16.md): the residual stream's
// gradient (add_layer_norm's backward), the attention output (the flash kernel), and the tied
// head's matmul reads the final norm's copy. Each copy is bit for bit the
// products' rounding of the same f32 values, the f32 results are unchanged, and the products that
// read the copies give the bits of the path where every product rounds its own operands, with fewer
// roundings. Each test needs bf16 products (oneDNN and a CPU with AVX-512-BF16 or AMX); without
// them it says WARN("SKIPPED: ...").
#include <omp.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "autograd/backend.h"
#include "autograd/cpu/bf16_round.h"
#include "autograd/cpu/onednn_gemm.h"
#include "autograd/ops/bf16_input.h"
#include "autograd/ops/elementwise.h"
#include "autograd/ops/flash_attention.h"
#include "autograd/ops/head_layout.h"
#include "autograd/ops/linear.h"
#include "autograd/ops/matmul.h"
#include "autograd/ops/norm.h"
#include "autograd/ops/reduce.h"
#include "autograd/ops/shape.h"
#include "autograd/precision.h"
#include "autograd/random.h"
#include "autograd/tape.h"
#include "test_helpers.h"

using namespace relpos;

namespace {

using testing::f32_bits;
using testing::leaf;

// t's values (f32, dense) rounded as a bf16 product rounds its operand: row by row, `cols` a
// row, in t's memory order.
std::vector<std::uint16_t> rounded_rows(const Tensor& t, std::int64_t cols) {
  std::vector<std::uint16_t> out(static_cast<std::size_t>(t.numel()));
  for (std::int64_t r = 0; r < t.numel() / cols; ++r)
    cpu::round_row_to_bf16(t.data<float>() + r * cols, cols, out.data() + r * cols);
  return out;
}

bool same_bits(const std::vector<std::uint16_t>& expected, const std::uint16_t* actual) {
  return std::memcmp(expected.data(), actual, expected.size() * sizeof(std::uint16_t)) == 0;
}

// (B, H, L, D) heads of a (B, L, H·D) tensor, and back.
Tensor heads(const Tensor& x, std::int64_t h) {
  return permute(reshape(x, {x.size(0), x.size(1), h, x.size(2) / h}), {0, 2, 1, 3});
}
Tensor merged(const Tensor& x) {
  return reshape(permute(x, {0, 2, 1, 3}), {x.size(0), x.size(2), x.size(1) * x.size(3)});
}

}  // namespace

TEST_CASE(
    "bf16: the fused norm backward's copy of grad_x is the products' rounding of grad_x, and "
    "grad_x is unchanged (skipped without bf16 products)",
    "[bf16][norm]") {
  if (!testing::bf16_usable()) return;
  const std::int64_t rows = 600, n = 64;  // 38,400 values: over the parallel threshold
  Rng rng(241);
  const Tensor x = randn({rows, n}, rng), delta = randn({rows, n}, rng);
  const Tensor gamma = randn({n}, rng), beta = randn({n}, rng);
  const Tensor gy = randn({rows, n}, rng), residual = randn({rows, n}, rng);
  Backend& be = backend_of(x);
  const Tensor h = Tensor::empty({rows, n}), y = Tensor::empty({rows, n});
  const Tensor mean = Tensor::empty({rows}), rstd = Tensor::empty({rows});
  be.add_norm(x, delta, gamma, beta, 1e-5, false, rows, n, h, y, mean, rstd, nullptr);
  const int saved = omp_get_max_threads();
  for (int threads : {1, 2}) {
    omp_set_num_threads(threads);
    for (bool rms : {false, true}) {
      INFO("threads " << threads << ", rms " << rms);
      const Tensor dx = Tensor::empty({rows, n}), dx_plain = Tensor::empty({rows, n});
      const Tensor dg = Tensor::empty({n}), db = Tensor::empty({n});
      std::vector<std::uint16_t> copy(static_cast<std::size_t>(rows * n));
      be.norm_backward_add(h, gamma, mean, rstd, gy, residual, rms, rows, n, dx, dg, db,
                           copy.data());
      be.norm_backward_add(h, gamma, mean, rstd, gy, residual, rms, rows, n, dx_plain, dg, db,
                           nullptr);
      CHECK(f32_bits(dx) == f32_bits(dx_plain));
      CHECK(same_bits(rounded_rows(dx, n), copy.data()));
    }
  }
  omp_set_num_threads(saved);
}

TEST_CASE(
    "bf16: a linear layer whose output is add_layer_norm's delta reads the norm backward's "
    "rounding of its gradient: the same bits, one rounding fewer (skipped without bf16 products)",
    "[bf16][norm][linear]") {
  if (!testing::bf16_usable()) return;
  const std::int64_t rows = 200, in = 48, d = 64, out = 32;
  Rng rng(242);
  const Tensor x0 = randn({rows, d}, rng), a0 = randn({rows, in}, rng);
  const Tensor w0 = randn({d, in}, rng, DType::f32, 0.2), b0 = randn({d}, rng);
  const Tensor g0 = randn({d}, rng), beta0 = randn({d}, rng);
  const Tensor wn0 = randn({out, d}, rng, DType::f32, 0.2), seed = randn({rows, out}, rng);
  const Tensor seed_sum = randn({rows, d}, rng);
  auto run = [&](bool delta_from_linear, std::uint64_t& roundings) {
    const PrecisionScope bf16(Precision::bf16);
    const Tensor x = leaf(x0), a = leaf(a0), w = leaf(w0), b = leaf(b0);
    const Tensor g = leaf(g0), beta = leaf(beta0), wn = leaf(wn0);
    const std::uint64_t before = cpu::onednn_operand_roundings();
    const Tensor delta = linear(a, w, b);  // as the output projection or the second MLP layer
    const ResidualNorm r =
        add_layer_norm(x, delta, g, beta, 1e-5, NormBf16{true, delta_from_linear});
    const Tensor next = linear(r.normed, wn, Tensor());  // as q or the first MLP layer
    backward(sum(mul(next, seed)) + sum(mul(r.sum, seed_sum)));
    roundings = cpu::onednn_operand_roundings() - before;
    return std::vector<std::vector<std::uint32_t>>{
        f32_bits(next),     f32_bits(r.sum),       f32_bits(x.grad()),
        f32_bits(a.grad()), f32_bits(w.grad()),    f32_bits(b.grad()),
        f32_bits(g.grad()), f32_bits(beta.grad()), f32_bits(wn.grad())};
  };
  std::uint64_t rounded_by_products = 0, with_copy = 0;
  const auto reference = run(false, rounded_by_products);
  const auto fused = run(true, with_copy);
  for (std::size_t i = 0; i < reference.size(); ++i) {
    INFO("result " << i);
    CHECK(fused[i] == reference[i]);
  }
  // The delta layer's dz was rounded once for its dx and dW products; now by the norm's pass.
  CHECK(with_copy + 1 == rounded_by_products);
}

TEST_CASE(
    "bf16: the flash kernel's copy of its output is the products' rounding of the merged rows, "
    "and the f32 output is unchanged (skipped without bf16 products)",
    "[bf16][flash]") {
  if (!testing::bf16_usable()) return;
  const std::int64_t batch = 2, h = 3, len = 40, dim = 32;
  Rng rng(243);
  FlashAttentionArgs args;
  args.q = empty_heads(batch, h, len, dim, Tensor::empty({1}));
  args.k = empty_heads(batch, h, len, dim, args.q);
  args.v = empty_heads(batch, h, len, dim, args.q);
  for (Tensor* t : {&args.q, &args.k, &args.v}) t->copy_(randn(t->shape(), rng));
  args.scale = 1.0 / std::sqrt(static_cast<double>(dim));
  args.causal = true;
  args.query_tile = 16;  // several tiles of queries and keys, and a partial last one
  args.key_tile = 16;
  args.precision = Precision::bf16;
  Backend& be = backend_of(args.q);
  const Tensor out = empty_heads(batch, h, len, dim, args.q);
  const Tensor out_plain = empty_heads(batch, h, len, dim, args.q);
  const Tensor lse = Tensor::empty({batch, h, len}), lse_plain = Tensor::empty({batch, h, len});
  std::vector<std::uint16_t> out16(static_cast<std::size_t>(out.numel()));
  be.flash_attention(args, out, lse, out16.data());
  be.flash_attention(args, out_plain, lse_plain, nullptr);
  REQUIRE(f32_bits(out) == f32_bits(out_plain));
  // The output projection rounds the merged rows (B·L, H·D) of out's storage.
  const Tensor rows_of_out = merged(out);
  REQUIRE(rows_of_out.is_contiguous());
  CHECK(same_bits(rounded_rows(rows_of_out, h * dim), out16.data()));
}

TEST_CASE(
    "bf16: the output projection reads the flash kernel's copy in its forward: the bits of "
    "every product rounding its own operands, one rounding fewer (skipped without bf16 "
    "products)",
    "[bf16][flash][linear]") {
  if (!testing::bf16_usable()) return;
  const std::int64_t batch = 2, len = 24, h = 2, d = 64;  // head dim 32
  Rng rng(244);
  const Tensor x0 = randn({batch, len, d}, rng), seed = randn({batch, len, d}, rng);
  std::vector<Tensor> w0;
  for (int i = 0; i < 4; ++i) w0.push_back(randn({d, d}, rng, DType::f32, 0.2));
  // through: the op between the projections and the kernel; x * 1.0 (exact, a new tensor
  // whose gradient is a new tensor too) hides the kernel's copies from the projections.
  auto run = [&](bool hidden, std::uint64_t& roundings) {
    const PrecisionScope bf16(Precision::bf16);
    auto through = [&](const Tensor& t) { return hidden ? mul_scalar(t, 1.0) : t; };
    const Tensor x = leaf(x0);
    std::vector<Tensor> w;
    for (const Tensor& t : w0) w.push_back(leaf(t));
    const std::uint64_t before = cpu::onednn_operand_roundings();
    FlashTerms terms;
    terms.scale = 1.0 / std::sqrt(32.0);
    terms.causal = true;
    const Tensor q = heads(through(linear(x, w[0], Tensor())), h);
    const Tensor k = heads(through(linear(x, w[1], Tensor())), h);
    const Tensor v = heads(through(linear(x, w[2], Tensor())), h);
    const Tensor y = linear(through(merged(flash_attention(q, k, v, terms))), w[3], Tensor());
    backward(sum(mul(y, seed)));
    roundings = cpu::onednn_operand_roundings() - before;
    std::vector<std::vector<std::uint32_t>> results{f32_bits(y), f32_bits(x.grad())};
    for (const Tensor& t : w) results.push_back(f32_bits(t.grad()));
    return results;
  };
  std::uint64_t rounded_by_products = 0, with_copies = 0;
  const auto reference = run(true, rounded_by_products);
  const auto fused = run(false, with_copies);
  for (std::size_t i = 0; i < reference.size(); ++i) {
    INFO("result " << i);
    CHECK(fused[i] == reference[i]);
  }
  // The weights 4, x 1 (shared by q, k and v), the dz of q, k, v and the output projection 4
  // (each shared by its dx and dW) in both; the output projection's input 2 by the products
  // (forward and dW: the hidden path's x * 1.0 is saved in f32 by its op, as the flash kernel
  // saves its output), against 1 (dW) with the kernel's copy.
  CHECK(rounded_by_products == 11);
  CHECK(with_copies == 10);
}

TEST_CASE(
    "bf16: a tied output head (matmul with the table) reads the final norm's rounding and "
    "rounds dlogits once for its two backward products: the same bits (skipped without bf16 "
    "products)",
    "[bf16][matmul][norm]") {
  if (!testing::bf16_usable()) return;
  const std::int64_t batch = 3, len = 20, d = 64, vocab = 48;
  Rng rng(245);
  const Tensor x0 = randn({batch, len, d}, rng), delta0 = randn({batch, len, d}, rng);
  const Tensor table0 = randn({vocab, d}, rng, DType::f32, 0.3);
  const Tensor g0 = randn({d}, rng), seed = randn({batch, len, vocab}, rng);
  // hidden: the head reads normed * 1.0 (exact, a new tensor without a kept rounding).
  auto run = [&](bool hidden, std::uint64_t& roundings) {
    const PrecisionScope bf16(Precision::bf16);
    const Tensor x = leaf(x0), delta = leaf(delta0), table = leaf(table0), g = leaf(g0);
    const std::uint64_t before = cpu::onednn_operand_roundings();
    const ResidualNorm r = add_layer_norm(x, delta, g, Tensor(), 1e-5, NormBf16{true, false});
    const Tensor h = hidden ? mul_scalar(r.normed, 1.0) : r.normed;
    const Tensor logits = matmul(h, transpose(table, 0, 1));  // (B, L, V)
    backward(sum(mul(logits, seed)));
    roundings = cpu::onednn_operand_roundings() - before;
    return std::vector<std::vector<std::uint32_t>>{f32_bits(logits), f32_bits(x.grad()),
                                                   f32_bits(table.grad()), f32_bits(g.grad())};
  };
  std::uint64_t rounded_by_products = 0, with_copy = 0;
  const auto reference = run(true, rounded_by_products);
  const auto fused = run(false, with_copy);
  for (std::size_t i = 0; i < reference.size(); ++i) {
    INFO("result " << i);
    CHECK(fused[i] == reference[i]);
  }
  // Without the norm's copy: h twice (forward, the table's gradient), dlogits once (kept by
  // the first backward product for the second), the table twice. With it: h not at all.
  CHECK(rounded_by_products == 5);
  CHECK(with_copy == 3);
}
