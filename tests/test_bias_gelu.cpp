// A linear layer's bias and GELU in one pass (Backend::activation_forward; the backward's
// one pass is tested in test_linear.cpp): the CPU's fused pass against the backend's
// composed default (add, then gelu), bit for bit and for 1 and 2 threads, and, under
// train.precision=bf16, the bf16 copy of the GELU output that the pass hands to the next
// layer's product against that product rounding its input itself; likewise the bf16 copy
// of dz that the backward's pass writes for the layer's dx and dW products. The op's fp64
// gradient check and its comparison with matmul + add + gelu are in test_linear.cpp.
#include <catch2/catch.hpp>
#include <cstdint>
#include <cstring>
#include <vector>

#include "autograd/backend.h"
#include "autograd/cpu/bf16_round.h"
#include "autograd/cpu/cpu_backend.h"
#include "autograd/ops/elementwise.h"
#include "autograd/ops/linear.h"
#include "autograd/precision.h"
#include "autograd/random.h"
#include "autograd/tape.h"
#include "autograd/threads.h"
#include "test_helpers.h"

using namespace relpos;

namespace {

using testing::f32_bits;
using testing::leaf;

}  // namespace

TEST_CASE("bias + GELU: the CPU's one pass equals the composed default, 1 and 2 threads",
          "[linear][bias_gelu]") {
  const bool with_bias = GENERATE(true, false);
  INFO("bias " << with_bias);
  Rng rng(41);
  const std::int64_t rows = 131, n = 257;  // above the parallel threshold, odd widths
  const Tensor z0 = randn({rows, n}, rng, DType::f32, 3.0);
  const Tensor bias = with_bias ? randn({n}, rng) : Tensor();
  CpuBackend& cpu = cpu_backend();
  const int threads = num_threads();
  std::vector<std::vector<std::uint32_t>> results;
  for (int t : {1, 2}) {
    set_num_threads(t);
    Tensor z_fused = z0.clone(), y_fused = Tensor::empty({rows, n});
    Tensor z_default = z0.clone(), y_default = Tensor::empty({rows, n});
    cpu.activation_forward(UnaryOp::gelu_tanh, bias, rows, n, z_fused, y_fused, nullptr);
    cpu.Backend::activation_forward(UnaryOp::gelu_tanh, bias, rows, n, z_default, y_default,
                                    nullptr);
    CHECK(f32_bits(z_fused) == f32_bits(z_default));  // z + bias, kept for the backward
    CHECK(f32_bits(y_fused) == f32_bits(y_default));
    results.push_back(f32_bits(y_fused));
  }
  set_num_threads(threads);
  CHECK(results[0] == results[1]);
}

TEST_CASE("bias + GELU in f64 equals the composed default within rounding", "[linear][bias_gelu]") {
  Rng rng(42);
  const std::int64_t rows = 40, n = 33;
  const Tensor z0 = randn({rows, n}, rng, DType::f64, 3.0);
  const Tensor bias = randn({n}, rng, DType::f64);
  CpuBackend& cpu = cpu_backend();
  Tensor z_fused = z0.clone(), y_fused = Tensor::empty({rows, n}, DType::f64);
  Tensor z_default = z0.clone(), y_default = Tensor::empty({rows, n}, DType::f64);
  cpu.activation_forward(UnaryOp::gelu_tanh, bias, rows, n, z_fused, y_fused, nullptr);
  cpu.Backend::activation_forward(UnaryOp::gelu_tanh, bias, rows, n, z_default, y_default, nullptr);
  testing::require_close(y_fused.to_vector(), y_default.to_vector(), 1e-15);
}

// fc2(fc1(x)) as the transformer's feed-forward block runs it. Handed on: fc1's pass
// writes the bf16 copy of its GELU output and fc2's product reads it. Reference: h · 1
// (exact) between the layers, so fc2 finds no copy and rounds its input itself, as before.
TEST_CASE(
    "bf16: the GELU output's bf16 copy handed to the next product gives the bits of that "
    "product rounding it (skipped without bf16 products)",
    "[linear][bias_gelu][bf16]") {
  if (!testing::bf16_usable()) return;
  const std::int64_t d = 48, hidden = 160;
  Rng rng(43);
  const Tensor x0 = randn({3, 17, d}, rng);
  const Tensor w1 = randn({hidden, d}, rng, DType::f32, 0.2), b1 = randn({hidden}, rng);
  const Tensor w2 = randn({d, hidden}, rng, DType::f32, 0.1), b2 = randn({d}, rng);
  const Tensor g = randn({3, 17, d}, rng);
  auto run = [&](bool handed_on) {
    const PrecisionScope bf16(Precision::bf16);
    const Tensor x = leaf(x0), a = leaf(w1), c = leaf(b1), e = leaf(w2), f = leaf(b2);
    Tensor h = linear(x, a, c, Activation::gelu_tanh);  // (3, 17, hidden)
    if (!handed_on) h = mul_scalar(h, 1.0);             // exact, into a new tensor
    const Tensor y = linear(h, e, f);
    backward(y, g);
    return std::vector<std::vector<std::uint32_t>>{f32_bits(y),        f32_bits(x.grad()),
                                                   f32_bits(a.grad()), f32_bits(c.grad()),
                                                   f32_bits(e.grad()), f32_bits(f.grad())};
  };
  const auto reference = run(false);
  const auto handed_on = run(true);
  const char* names[] = {"output", "grad x", "grad w1", "grad b1", "grad w2", "grad b2"};
  for (std::size_t i = 0; i < reference.size(); ++i) {
    INFO(names[i]);
    CHECK(handed_on[i] == reference[i]);
  }
}

// The backward's pass rounds dz in column blocks, one per thread; the bits must be those of
// rounding each whole row, as a product does (vcvtneps2bf16 in 16-value pieces, then the
// row's tail), for 1 and 2 threads. n = 150: ragged blocks and a 6-value tail.
TEST_CASE("GELU backward: the bf16 copy of dz equals each row rounded whole, 1 and 2 threads",
          "[linear][bias_gelu][bf16]") {
  Rng rng(44);
  const std::int64_t rows = 130, n = 150;
  const Tensor z = randn({rows, n}, rng, DType::f32, 2.0), gy = randn({rows, n}, rng);
  CpuBackend& cpu = cpu_backend();
  const int threads = num_threads();
  std::vector<std::vector<std::uint16_t>> copies;
  for (int t : {1, 2}) {
    set_num_threads(t);
    Tensor gz = Tensor::empty({rows, n}), gb = Tensor::empty({n});
    Tensor gz_plain = Tensor::empty({rows, n}), gb_plain = Tensor::empty({n});
    std::vector<std::uint16_t> gz16(static_cast<std::size_t>(rows * n), 0xffff);
    cpu.activation_backward(UnaryOp::gelu_tanh, z, gy, rows, n, gz, gb, gz16.data());
    cpu.activation_backward(UnaryOp::gelu_tanh, z, gy, rows, n, gz_plain, gb_plain, nullptr);
    CHECK(f32_bits(gz) == f32_bits(gz_plain));  // writing the copy changes nothing else
    CHECK(f32_bits(gb) == f32_bits(gb_plain));
    std::vector<std::uint16_t> whole_rows(gz16.size());
    for (std::int64_t r = 0; r < rows; ++r)
      cpu::round_row_to_bf16(gz.data<float>() + r * n, n, whole_rows.data() + r * n);
    CHECK(gz16 == whole_rows);
    copies.push_back(gz16);
  }
  set_num_threads(threads);
  CHECK(copies[0] == copies[1]);
}

// The MLP's first layer under bf16: its backward's pass rounds dz for both products. The
// reference's bias needs no gradient, so that pass makes no copy and dx's product rounds dz
// itself, as before.
TEST_CASE(
    "bf16: dz rounded by the GELU backward's pass gives the bits of the products rounding it "
    "(skipped without bf16 products)",
    "[linear][bias_gelu][bf16]") {
  if (!testing::bf16_usable()) return;
  const std::int64_t d = 40, hidden = 150;
  Rng rng(45);
  const Tensor x0 = randn({4, 19, d}, rng), w0 = randn({hidden, d}, rng, DType::f32, 0.2);
  const Tensor b0 = randn({hidden}, rng), g = randn({4, 19, hidden}, rng);
  auto run = [&](bool bias_grad) {
    const PrecisionScope bf16(Precision::bf16);
    const Tensor x = leaf(x0), w = leaf(w0), b = bias_grad ? leaf(b0) : b0.clone();
    backward(linear(x, w, b, Activation::gelu_tanh), g);
    return std::vector<std::vector<std::uint32_t>>{f32_bits(x.grad()), f32_bits(w.grad())};
  };
  CHECK(run(true) == run(false));
}
