// add_layer_norm and add_rms_norm (a pre-norm block's residual add fused with the norm
// after it, one op with two outputs): fp64 gradchecks of both outputs, equality with the
// composed add and norm (f64 to 1e-12, f32 bit for bit, outputs and every gradient), the
// same bits with 1 and 2 threads, a tape root that is one output of the two, and argument
// errors; under bf16, the normed rows' bf16 copy that the pass hands to the next linear layer.
#include <omp.h>

#include <catch2/catch.hpp>
#include <cstring>

#include "autograd/cpu/bf16_round.h"
#include "autograd/error.h"
#include "autograd/ops/bf16_input.h"
#include "autograd/ops/elementwise.h"
#include "autograd/ops/linear.h"
#include "autograd/ops/norm.h"
#include "autograd/ops/reduce.h"
#include "autograd/ops/shape.h"
#include "autograd/precision.h"
#include "autograd/tape.h"
#include "test_helpers.h"

using namespace relpos;
using namespace relpos::testing;

namespace {

// Both outputs side by side, so that one gradcheck covers the gradients through each.
Tensor both(const ResidualNorm& r) { return concat({r.sum, r.normed}, -1); }

struct Inputs {
  Tensor x, delta, gamma, beta;
};

Inputs inputs(std::int64_t rows, std::int64_t n, DType dtype, std::uint64_t seed) {
  Rng rng(seed);
  auto make = [&](const Shape& shape, double scale) {
    Tensor t = randn(shape, rng, DType::f64, scale).to(dtype);
    t.set_requires_grad(true);
    return t;
  };
  return {make({rows, n}, 1.0), make({rows, n}, 0.5), make({n}, 1.0), make({n}, 0.3)};
}

// The block's pattern: the sum feeds a later residual add as well as the norm, so the
// sum's gradient is the norm's plus the later add's. Returns the outputs and every
// gradient of loss = sum(w * (h + y * v)).
std::vector<Tensor> run_block(const Inputs& in, bool fused, bool rms) {
  in.x.zero_grad();
  in.delta.zero_grad();
  in.gamma.zero_grad();
  in.beta.zero_grad();
  Rng rng(99);
  const Tensor v = randn(in.x.shape(), rng, DType::f64).to(in.x.dtype());
  const Tensor w = randn(in.x.shape(), rng, DType::f64).to(in.x.dtype());
  Tensor h, y;
  if (fused) {
    ResidualNorm r = rms ? add_rms_norm(in.x, in.delta, in.gamma)
                         : add_layer_norm(in.x, in.delta, in.gamma, in.beta);
    h = r.sum;
    y = r.normed;
  } else {
    h = add(in.x, in.delta);
    y = rms ? rms_norm(h, in.gamma) : layer_norm(h, in.gamma, in.beta);
  }
  backward(sum(mul(add(h, mul(y, v)), w)));
  std::vector<Tensor> out{h.detach(), y.detach(), in.x.grad(), in.delta.grad(), in.gamma.grad()};
  if (!rms) out.push_back(in.beta.grad());
  return out;
}

}  // namespace

TEST_CASE("gradcheck: add_layer_norm and add_rms_norm, both outputs", "[norm][gradcheck]") {
  Rng rng(21);
  Tensor x = leaf({3, 5}, rng), delta = leaf({3, 5}, rng);
  Tensor gamma = leaf({5}, rng), beta = leaf({5}, rng);
  require_gradcheck(
      [](const std::vector<Tensor>& in) {
        return both(add_layer_norm(in[0], in[1], in[2], in[3]));
      },
      {x, delta, gamma, beta});
  require_gradcheck(
      [](const std::vector<Tensor>& in) {
        return both(add_layer_norm(in[0], in[1], Tensor(), Tensor()));
      },
      {x, delta});
  require_gradcheck(
      [](const std::vector<Tensor>& in) { return both(add_rms_norm(in[0], in[1], in[2])); },
      {x, delta, gamma});
  // 3-D, a non-contiguous delta, and a constant residual
  Tensor x3 = leaf({2, 3, 4}, rng);
  Tensor d3 = transposed_leaf({2, 3, 4}, rng);
  Tensor g4 = leaf({4}, rng), b4 = leaf({4}, rng);
  require_gradcheck(
      [](const std::vector<Tensor>& in) {
        return both(add_layer_norm(in[0], in[1], in[2], in[3]));
      },
      {x3, d3, g4, b4});
  const Tensor constant = randn({2, 3, 4}, rng, DType::f64);
  require_gradcheck(
      [&](const std::vector<Tensor>& in) {
        return both(add_layer_norm(constant, in[0], in[1], in[2]));
      },
      {d3, g4, b4});
}

TEST_CASE("gradcheck: add_layer_norm with one output unused", "[norm][gradcheck]") {
  Rng rng(22);
  Tensor x = leaf({4, 6}, rng), delta = leaf({4, 6}, rng);
  Tensor gamma = leaf({6}, rng), beta = leaf({6}, rng);
  require_gradcheck(
      [](const std::vector<Tensor>& in) {
        return add_layer_norm(in[0], in[1], in[2], in[3]).normed;
      },
      {x, delta, gamma, beta});
  require_gradcheck(
      [](const std::vector<Tensor>& in) {
        return add_layer_norm(in[0], in[1], Tensor(), Tensor()).sum;
      },
      {x, delta});
  // only the sum was used: no gradient reaches gamma or beta
  gamma.zero_grad();
  backward(sum(add_layer_norm(x, delta, gamma, beta).sum));
  REQUIRE_FALSE(gamma.grad().defined());
}

TEST_CASE("backward from one output of add_layer_norm as the tape's root", "[norm][tape]") {
  for (bool from_sum : {false, true}) {
    Inputs fused = inputs(6, 8, DType::f64, 23), composed = inputs(6, 8, DType::f64, 23);
    const Tensor g = Tensor::full({6, 8}, 0.5, DType::f64);
    ResidualNorm r = add_layer_norm(fused.x, fused.delta, fused.gamma, fused.beta);
    backward(from_sum ? r.sum : r.normed, g);
    Tensor h = add(composed.x, composed.delta);
    Tensor y = layer_norm(h, composed.gamma, composed.beta);
    backward(from_sum ? h : y, g);
    REQUIRE(Tape::current().size() == 0);
    REQUIRE(fused.x.grad().to_vector() == composed.x.grad().to_vector());
    REQUIRE(fused.delta.grad().to_vector() == composed.delta.grad().to_vector());
    REQUIRE(fused.gamma.grad().defined() == !from_sum);
    if (!from_sum) REQUIRE(fused.gamma.grad().to_vector() == composed.gamma.grad().to_vector());
  }
}

TEST_CASE("add_layer_norm and add_rms_norm equal add then the norm", "[norm]") {
  // 512 x 96: over the CPU kernels' threshold for a parallel region
  for (bool rms : {false, true}) {
    INFO("rms " << rms);
    const Inputs a = inputs(512, 96, DType::f64, 24);
    const std::vector<Tensor> fused = run_block(a, true, rms), composed = run_block(a, false, rms);
    for (std::size_t k = 0; k < fused.size(); ++k) {
      INFO("f64 result " << k);
      REQUIRE(largest_difference(fused[k], composed[k]) <= 1e-12);
    }
    const Inputs b = inputs(512, 96, DType::f32, 25);
    const std::vector<Tensor> fused32 = run_block(b, true, rms);
    const std::vector<Tensor> composed32 = run_block(b, false, rms);
    for (std::size_t k = 0; k < fused32.size(); ++k) {
      INFO("f32 result " << k);
      REQUIRE(f32_bits(fused32[k]) == f32_bits(composed32[k]));
    }
  }
}

TEST_CASE("add_layer_norm gives the same bits with 1 and 2 threads", "[norm]") {
  const Inputs in = inputs(700, 96, DType::f32, 26);
  auto results = [&](int threads) {
    const int saved = omp_get_max_threads();
    omp_set_num_threads(threads);
    std::vector<std::vector<std::uint32_t>> bits;
    for (const Tensor& t : run_block(in, true, false)) bits.push_back(f32_bits(t));
    omp_set_num_threads(saved);
    return bits;
  };
  REQUIRE(results(1) == results(2));
}

TEST_CASE("add_layer_norm argument errors", "[norm]") {
  const Tensor x = Tensor::ones({2, 4}, DType::f64);
  REQUIRE_THROWS_WITH(add_layer_norm(x, Tensor::ones({2, 3}, DType::f64), Tensor(), Tensor()),
                      Catch::Contains("add_layer_norm") && Catch::Contains("[2, 3]") &&
                          Catch::Contains("differ in shape"));
  REQUIRE_THROWS_AS(add_layer_norm(x, Tensor::ones({2, 4}, DType::f32), Tensor(), Tensor()),
                    UsageError);
  REQUIRE_THROWS_WITH(add_rms_norm(x, x, Tensor::ones({3}, DType::f64)),
                      Catch::Contains("gamma") && Catch::Contains("[3]"));
}

TEST_CASE(
    "bf16: the normed rows' bf16 copy handed to the next linear layer gives the bits of that "
    "layer rounding them itself (skipped without bf16 products)",
    "[norm][bf16]") {
  if (!bf16_usable()) return;
  const std::int64_t rows = 300, d = 64, out = 96;
  Rng rng(27);
  const Tensor x0 = randn({rows, d}, rng), delta0 = randn({rows, d}, rng, DType::f32, 0.5);
  const Tensor g0 = randn({d}, rng), b0 = randn({d}, rng);
  const Tensor wq0 = randn({out, d}, rng, DType::f32, 0.2), wk0 = randn({out, d}, rng);
  const Tensor seed_q = randn({rows, out}, rng), seed_k = randn({rows, out}, rng);
  auto run = [&](bool feeds_linear) {
    const PrecisionScope bf16(Precision::bf16);
    const Tensor x = leaf(x0), delta = leaf(delta0), g = leaf(g0), b = leaf(b0);
    const Tensor wq = leaf(wq0), wk = leaf(wk0);
    const ResidualNorm r = add_layer_norm(x, delta, g, b, 1e-5, NormBf16{feeds_linear, false});
    if (feeds_linear) {  // the copy is there for the next product, and is its rounding
      const Bf16Input copy = bf16_input(r.normed.contiguous());
      REQUIRE(copy.rounded);
      std::vector<std::uint16_t> expected(static_cast<std::size_t>(rows * d));
      cpu::round_row_to_bf16(r.normed.data<float>(), rows * d, expected.data());
      REQUIRE(std::memcmp(copy.bits->data(), expected.data(), expected.size() * 2) == 0);
    }
    // two layers read the rows, as q and k do; the sum feeds a later add
    const Tensor q = linear(r.normed, wq, Tensor()), k = linear(r.normed, wk, Tensor());
    backward(sum(add(mul(q, seed_q), mul(k, seed_k))) + sum(r.sum));
    return std::vector<std::vector<std::uint32_t>>{
        f32_bits(q),        f32_bits(k),        f32_bits(x.grad()),  f32_bits(delta.grad()),
        f32_bits(g.grad()), f32_bits(b.grad()), f32_bits(wq.grad()), f32_bits(wk.grad())};
  };
  const auto reference = run(false), handed_on = run(true);
  for (std::size_t i = 0; i < reference.size(); ++i) {
    INFO("result " << i);
    CHECK(handed_on[i] == reference[i]);
  }
}
