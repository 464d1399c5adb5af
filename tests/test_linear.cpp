// The fused linear op y = f(x Wᵀ + b): finite-difference gradients, agreement with
// the composed ops (matmul, add, gelu), and the CPU's fused activation backward
// against the backend's composed default.
#include <catch2/catch.hpp>

#include "autograd/backend.h"
#include "autograd/cpu/cpu_backend.h"
#include "autograd/ops/elementwise.h"
#include "autograd/ops/linear.h"
#include "autograd/ops/matmul.h"
#include "autograd/ops/reduce.h"
#include "autograd/ops/shape.h"
#include "autograd/tape.h"
#include "test_helpers.h"

using namespace relpos;

namespace {

Tensor composed(const Tensor& x, const Tensor& w, const Tensor& b, Activation activation) {
  Tensor z = matmul(x, transpose(w, 0, 1));
  if (b.defined()) z = add(z, b);
  return activation == Activation::gelu_tanh ? gelu(z) : z;
}

// f32 leaf with N(0, scale²) entries.
Tensor f32_leaf(const Shape& shape, Rng& rng, double scale) {
  Tensor t = randn(shape, rng, DType::f32, scale);
  t.set_requires_grad(true);
  return t;
}

}  // namespace

TEST_CASE("linear: gradients match finite differences", "[linear][gradcheck]") {
  const Activation activation = GENERATE(Activation::none, Activation::gelu_tanh);
  const bool with_bias = GENERATE(true, false);
  INFO("activation " << static_cast<int>(activation) << ", bias " << with_bias);
  Rng rng(5);
  Tensor x = testing::leaf({2, 3, 4}, rng);
  Tensor w = testing::leaf({5, 4}, rng);
  Tensor b = with_bias ? testing::leaf({5}, rng) : Tensor();
  std::vector<Tensor> inputs{x, w};
  if (with_bias) inputs.push_back(b);
  testing::require_gradcheck(
      [&](const std::vector<Tensor>& in) {
        return linear(in[0], in[1], in.size() > 2 ? in[2] : Tensor(), activation);
      },
      inputs);
}

TEST_CASE("linear: a transposed input view and a 1-D input", "[linear][gradcheck]") {
  Rng rng(6);
  Tensor x = testing::transposed_leaf({3, 4}, rng);
  Tensor w = testing::leaf({2, 4}, rng);
  Tensor b = testing::leaf({2}, rng);
  testing::require_gradcheck(
      [](const auto& in) { return linear(in[0], in[1], in[2], Activation::gelu_tanh); }, {x, w, b});
  Tensor v = testing::leaf({4}, rng);
  testing::require_gradcheck([](const auto& in) { return linear(in[0], in[1], in[2]); }, {v, w, b});
}

TEST_CASE("linear: same values and gradients as matmul + add + gelu (f32)", "[linear]") {
  const Activation activation = GENERATE(Activation::none, Activation::gelu_tanh);
  INFO("activation " << static_cast<int>(activation));
  Rng rng(7);
  // 7·23 = 161 rows of 203 columns: the parallel path, with a ragged last column block.
  const Tensor x = f32_leaf({7, 23, 48}, rng, 1.0);
  const Tensor w = f32_leaf({203, 48}, rng, 0.3);
  const Tensor b = f32_leaf({203}, rng, 0.5);
  const Tensor g = randn({7, 23, 203}, rng, DType::f32);  // output gradient

  auto run = [&](bool fused) {
    for (const Tensor* t : {&x, &w, &b}) t->zero_grad();
    const Tensor y = fused ? linear(x, w, b, activation) : composed(x, w, b, activation);
    backward(y, g);
    return std::vector<std::vector<double>>{y.to_vector(), x.grad().to_vector(),
                                            w.grad().to_vector(), b.grad().to_vector()};
  };
  const auto expected = run(false);
  const auto actual = run(true);
  const char* names[] = {"output", "grad x", "grad weight", "grad bias"};
  for (std::size_t i = 0; i < expected.size(); ++i) {
    INFO(names[i]);
    testing::require_close(actual[i], expected[i], 1e-4);
  }
}

TEST_CASE("linear: the CPU's fused activation backward equals the composed default", "[linear]") {
  Rng rng(8);
  const std::int64_t rows = 130, n = 150;  // above the parallel threshold, ragged blocks
  const Tensor z = randn({rows, n}, rng, DType::f32, 2.0);
  const Tensor gy = randn({rows, n}, rng, DType::f32);
  CpuBackend& cpu = cpu_backend();
  Tensor gz_fused = Tensor::empty({rows, n}), gb_fused = Tensor::empty({n});
  Tensor gz_default = Tensor::empty({rows, n}), gb_default = Tensor::empty({n});
  cpu.activation_backward(UnaryOp::gelu_tanh, z, gy, rows, n, gz_fused, gb_fused, nullptr);
  cpu.Backend::activation_backward(UnaryOp::gelu_tanh, z, gy, rows, n, gz_default, gb_default,
                                   nullptr);
  // The same derivative and the same row order of the sums: the same bits.
  CHECK(gz_fused.to_vector() == gz_default.to_vector());
  CHECK(gb_fused.to_vector() == gb_default.to_vector());
  // And the bias gradient is the column sum of grad_z.
  testing::require_close(gb_fused.to_vector(), sum(gz_fused, {0}).to_vector(), 1e-5);
}

TEST_CASE("linear: the tape keeps z for the activation, never the output itself", "[linear]") {
  const Activation activation = GENERATE(Activation::none, Activation::gelu_tanh);
  Rng rng(9);
  const Tensor x = f32_leaf({64, 32}, rng, 1.0);
  const Tensor w = f32_leaf({128, 32}, rng, 1.0);
  const Tensor b = f32_leaf({128}, rng, 1.0);
  const std::size_t output_bytes = 64 * 128 * sizeof(float);
  Allocator& allocator = allocator_for(Device::cpu);
  const std::size_t before = allocator.stats().current_bytes;
  Tensor loss;
  {
    const Tensor y = linear(x, w, b, activation);
    loss = sum(y);
  }
  // Held after the output is dropped: the loss, and z (the GEMM's output) with an activation.
  const std::size_t held = allocator.stats().current_bytes - before;
  CHECK(held < (activation == Activation::none ? output_bytes : 2 * output_bytes));
  backward(loss);
  CHECK(b.grad().defined());
  for (const Tensor* t : {&x, &w, &b}) t->zero_grad();
}

TEST_CASE("linear: shape errors name the operands", "[linear]") {
  const Tensor x = Tensor::zeros({2, 4}), w = Tensor::zeros({3, 5});
  REQUIRE_THROWS_WITH(linear(x, w, Tensor()),
                      Catch::Contains("linear") && Catch::Contains("(..., in) and (out, in)"));
  REQUIRE_THROWS_WITH(linear(x, Tensor::zeros({3, 4}), Tensor::zeros({4})),
                      Catch::Contains("bias") && Catch::Contains("expected (3)"));
}
