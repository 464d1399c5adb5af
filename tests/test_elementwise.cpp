// Elementwise ops: values, broadcasting, gradchecks (incl. non-contiguous inputs).
#include <catch2/catch.hpp>
#include <cmath>

#include "autograd/ops/elementwise.h"
#include "autograd/ops/shape.h"
#include "autograd/tape.h"
#include "test_helpers.h"

using namespace relpos;
using testing::leaf;
using testing::require_gradcheck;

TEST_CASE("binary ops broadcast like NumPy", "[elementwise]") {
  Tensor a = Tensor::from_data(std::vector<double>{1, 2, 3}, {3, 1}, DType::f64);
  Tensor b = Tensor::from_data(std::vector<double>{10, 20}, {2}, DType::f64);
  Tensor c = add(a, b);
  REQUIRE(c.shape() == Shape{3, 2});
  REQUIRE(c.to_vector() == std::vector<double>{11, 21, 12, 22, 13, 23});
  REQUIRE(sub(a, b).to_vector() == std::vector<double>{-9, -19, -8, -18, -7, -17});
  REQUIRE(mul(a, b).to_vector() == std::vector<double>{10, 20, 20, 40, 30, 60});
  REQUIRE(div(b, a).to_vector() == std::vector<double>{10, 20, 5, 10, 10.0 / 3, 20.0 / 3});
  REQUIRE(broadcast_shapes({4, 1, 3}, {5, 1}, "t") == Shape{4, 5, 3});
}

TEST_CASE("binary ops on strided rows and merged axes equal those on contiguous copies",
          "[elementwise]") {
  Rng rng(12);
  const Tensor wide = randn({5, 37}, rng, DType::f32), other = randn({5, 30}, rng, DType::f32);
  const Tensor left = slice(wide, -1, 0, 30), right = slice(wide, -1, 7, 37);  // row stride 37
  REQUIRE_FALSE(left.is_contiguous());
  const std::vector<Tensor (*)(const Tensor&, const Tensor&)> ops{add, sub, mul, div};
  for (std::size_t k = 0; k < ops.size(); ++k) {
    INFO("op " << k << " of add, sub, mul, div");
    CHECK(ops[k](left, right).to_vector() ==
          ops[k](left.contiguous(), right.contiguous()).to_vector());
    CHECK(ops[k](other, left).to_vector() == ops[k](other, left.contiguous()).to_vector());
  }
  // Axes that every operand steps over as one are merged into longer rows: a bias over the
  // last two axes broadcast over the first two, and a permuted view, against copies.
  const Tensor x = randn({2, 3, 4, 5}, rng, DType::f32), bias = randn({4, 5}, rng, DType::f32);
  const Tensor wide_bias = expand(reshape(bias, {1, 1, 4, 5}), {2, 3, 4, 5});
  CHECK(add(x, bias).to_vector() == add(x, wide_bias.contiguous()).to_vector());
  const Tensor turned = permute(randn({2, 4, 3, 5}, rng, DType::f32), {0, 2, 1, 3});
  CHECK(mul(turned, x).to_vector() == mul(turned.contiguous(), x).to_vector());
  CHECK(turned.contiguous().to_vector() == add(turned, Tensor::zeros({2, 3, 4, 5})).to_vector());
}

TEST_CASE("broadcasting errors name both shapes", "[elementwise]") {
  Tensor a = Tensor::ones({2, 3});
  Tensor b = Tensor::ones({4, 3});
  REQUIRE_THROWS_WITH(add(a, b), Catch::Contains("[2, 3]") && Catch::Contains("[4, 3]"));
  REQUIRE_THROWS_WITH(mul(a, Tensor::ones({2, 3}, DType::f64)), Catch::Contains("dtype"));
}

TEST_CASE("unary ops match closed forms", "[elementwise]") {
  const std::vector<double> xs{-2.0, -0.5, 0.0, 0.7, 3.0};
  Tensor x = Tensor::from_data(xs, {5}, DType::f64);
  auto check = [&](const Tensor& y, auto fn) {
    const auto v = y.to_vector();
    for (std::size_t i = 0; i < xs.size(); ++i) REQUIRE(v[i] == Approx(fn(xs[i])).margin(1e-15));
  };
  check(neg(x), [](double v) { return -v; });
  check(exp(x), [](double v) { return std::exp(v); });
  check(tanh(x), [](double v) { return std::tanh(v); });
  check(relu(x), [](double v) { return v > 0 ? v : 0.0; });
  check(gelu(x, GeluApproximation::erf),
        [](double v) { return 0.5 * v * (1 + std::erf(v / std::sqrt(2.0))); });
  check(gelu(x, GeluApproximation::tanh), [](double v) {
    return 0.5 * v * (1 + std::tanh(std::sqrt(2.0 / M_PI) * (v + 0.044715 * v * v * v)));
  });
  check(x * 3.0 + 1.0, [](double v) { return 3 * v + 1; });
  check(2.0 - x, [](double v) { return 2 - v; });
  Tensor p = Tensor::from_data(std::vector<double>{0.5, 4.0}, {2}, DType::f64);
  REQUIRE(log(p).to_vector()[1] == Approx(std::log(4.0)));
  REQUIRE(sqrt(p).to_vector()[1] == Approx(2.0));
  REQUIRE(pow_scalar(p, 3.0).to_vector()[1] == Approx(64.0));
}

TEST_CASE("gradcheck: binary ops with broadcasting and non-contiguous inputs",
          "[elementwise][gradcheck]") {
  Rng rng(10);
  Tensor a = leaf({3, 4}, rng);
  Tensor b = leaf({4}, rng);
  Tensor c = leaf({3, 1}, rng);
  Tensor t = testing::transposed_leaf({3, 4}, rng);
  require_gradcheck([](const auto& in) { return add(in[0], in[1]); }, {a, b});
  require_gradcheck([](const auto& in) { return sub(in[0], in[1]); }, {c, a});
  require_gradcheck([](const auto& in) { return mul(in[0], in[1]); }, {t, b});
  Tensor positive = testing::leaf({3, 4}, rng);
  {
    NoGradGuard g;
    positive.copy_(exp(positive) + 0.5);
  }
  require_gradcheck([](const auto& in) { return div(in[0], in[1]); }, {c, positive});
  require_gradcheck([](const auto& in) { return div(in[0], in[1]); }, {t, positive});
}

TEST_CASE("gradcheck: unary ops", "[elementwise][gradcheck]") {
  Rng rng(11);
  Tensor x = leaf({2, 3, 4}, rng);
  Tensor t = testing::transposed_leaf({4, 5}, rng);
  Tensor pos = randn({2, 3}, rng, DType::f64);
  {
    pos = exp(pos) + 0.1;
    pos.set_requires_grad(true);
  }
  for (auto fn : std::vector<Tensor (*)(const Tensor&)>{neg, exp, tanh, relu}) {
    require_gradcheck([fn](const auto& in) { return fn(in[0]); }, {x});
    require_gradcheck([fn](const auto& in) { return fn(in[0]); }, {t});
  }
  require_gradcheck([](const auto& in) { return log(in[0]); }, {pos});
  require_gradcheck([](const auto& in) { return sqrt(in[0]); }, {pos});
  require_gradcheck([](const auto& in) { return pow_scalar(in[0], 2.5); }, {pos});
  require_gradcheck([](const auto& in) { return gelu(in[0], GeluApproximation::tanh); }, {x});
  require_gradcheck([](const auto& in) { return gelu(in[0], GeluApproximation::erf); }, {t});
  require_gradcheck([](const auto& in) { return in[0] * 1.5 + 2.0; }, {x});
}
