// layer_norm and rms_norm: closed-form values, gradchecks (with and without the
// affine part, non-contiguous inputs), determinism of the parameter gradients
// and argument errors.
#include <omp.h>

#include <catch2/catch.hpp>
#include <cmath>

#include "autograd/error.h"
#include "autograd/ops/elementwise.h"
#include "autograd/ops/norm.h"
#include "autograd/ops/reduce.h"
#include "autograd/ops/shape.h"
#include "autograd/tape.h"
#include "test_helpers.h"

using namespace relpos;
using namespace relpos::testing;

TEST_CASE("layer_norm matches the closed form", "[norm]") {
  Tensor x = f64({1, 2, 3, 4, -2, 0, 2, 4}, {2, 4});
  Tensor gamma = f64({1, 2, 0.5, -1}, {4});
  Tensor beta = f64({0, 1, 0, 3}, {4});
  const double eps = 1e-5;
  // row 0: mean 2.5, var 1.25; row 1: mean 1, var 5
  const double r0 = 1 / std::sqrt(1.25 + eps), r1 = 1 / std::sqrt(5 + eps);
  const std::vector<double> xhat{-1.5 * r0, -0.5 * r0, 0.5 * r0, 1.5 * r0,
                                 -3 * r1,   -1 * r1,   1 * r1,   3 * r1};
  require_close(layer_norm(x, Tensor(), Tensor(), eps).to_vector(), xhat, 1e-14);
  std::vector<double> affine;
  for (int i = 0; i < 8; ++i) {
    const double g[] = {1, 2, 0.5, -1}, b[] = {0, 1, 0, 3};
    affine.push_back(xhat[i] * g[i % 4] + b[i % 4]);
  }
  require_close(layer_norm(x, gamma, beta, eps).to_vector(), affine, 1e-14);
}

TEST_CASE("rms_norm matches the closed form", "[norm]") {
  Tensor x = f64({1, 2, 3, -4, 0, 0}, {2, 3});
  Tensor gamma = f64({2, 1, -1}, {3});
  const double eps = 1e-6;
  const double r0 = 1 / std::sqrt(14.0 / 3 + eps), r1 = 1 / std::sqrt(16.0 / 3 + eps);
  require_close(rms_norm(x, Tensor(), eps).to_vector(), {r0, 2 * r0, 3 * r0, -4 * r1, 0, 0}, 1e-14);
  require_close(rms_norm(x, gamma, eps).to_vector(), {2 * r0, 2 * r0, -3 * r0, -8 * r1, 0, 0},
                1e-14);
}

TEST_CASE("layer_norm in f32 on many rows gives zero mean and unit variance", "[norm]") {
  Rng rng(7);
  Tensor x = randn({512, 96}, rng, DType::f32, 3.0) + 10.0;
  Tensor y = layer_norm(x, Tensor(), Tensor());
  for (double m : mean(y, {1}).to_vector()) REQUIRE(m == Approx(0.0).margin(1e-5));
  for (double v : mean(y * y, {1}).to_vector()) REQUIRE(v == Approx(1.0).margin(1e-4));
  require_close(y.to_vector(), layer_norm(x.to(DType::f64), Tensor(), Tensor()).to_vector(), 1e-4);
}

TEST_CASE("gradcheck: layer_norm", "[norm][gradcheck]") {
  Rng rng(8);
  Tensor x = leaf({3, 5}, rng);
  Tensor gamma = leaf({5}, rng);
  Tensor beta = leaf({5}, rng);
  require_gradcheck([](const std::vector<Tensor>& in) { return layer_norm(in[0], in[1], in[2]); },
                    {x, gamma, beta});
  require_gradcheck(
      [](const std::vector<Tensor>& in) { return layer_norm(in[0], Tensor(), Tensor()); }, {x});
  require_gradcheck(
      [](const std::vector<Tensor>& in) { return layer_norm(in[0], in[1], Tensor()); }, {x, gamma});
  // 3-D input, non-contiguous leaf, transpose inside
  Tensor x3 = leaf({2, 3, 4}, rng);
  Tensor g4 = leaf({4}, rng), b4 = leaf({4}, rng);
  require_gradcheck([](const std::vector<Tensor>& in) { return layer_norm(in[0], in[1], in[2]); },
                    {x3, g4, b4});
  Tensor xt = transposed_leaf({3, 4}, rng);
  require_gradcheck([](const std::vector<Tensor>& in) { return layer_norm(in[0], in[1], in[2]); },
                    {xt, g4, b4});
  Tensor xs = leaf({5, 3}, rng);
  require_gradcheck(
      [](const std::vector<Tensor>& in) {
        return layer_norm(transpose(in[0], 0, 1), in[1], in[2]);
      },
      {xs, gamma, beta});
}

TEST_CASE("gradcheck: rms_norm", "[norm][gradcheck]") {
  Rng rng(9);
  Tensor x = leaf({4, 6}, rng);
  Tensor gamma = leaf({6}, rng);
  require_gradcheck([](const std::vector<Tensor>& in) { return rms_norm(in[0], in[1]); },
                    {x, gamma});
  require_gradcheck([](const std::vector<Tensor>& in) { return rms_norm(in[0], Tensor()); }, {x});
  Tensor xt = transposed_leaf({2, 3, 6}, rng);
  require_gradcheck([](const std::vector<Tensor>& in) { return rms_norm(in[0], in[1]); },
                    {xt, gamma});
}

TEST_CASE("norm parameter gradients do not depend on the thread count", "[norm]") {
  Rng rng(10);
  Tensor x = leaf({2000, 70}, rng);
  Tensor gamma = leaf({70}, rng), beta = leaf({70}, rng);
  Tensor w = randn({2000, 70}, rng, DType::f64);
  auto grads = [&](int threads) {
    const int saved = omp_get_max_threads();
    omp_set_num_threads(threads);
    x.zero_grad();
    gamma.zero_grad();
    beta.zero_grad();
    backward(sum(layer_norm(x, gamma, beta) * w));
    omp_set_num_threads(saved);
    return std::vector<std::vector<double>>{x.grad().to_vector(), gamma.grad().to_vector(),
                                            beta.grad().to_vector()};
  };
  const auto one = grads(1), four = grads(4);
  REQUIRE(one == four);
  // grad_beta is the column sum of w
  const auto wv = w.to_vector();
  for (int j = 0; j < 70; ++j) {
    double s = 0;
    for (int r = 0; r < 2000; ++r) s += wv[r * 70 + j];
    REQUIRE(one[2][j] == Approx(s).epsilon(1e-12));
  }
}

TEST_CASE("norm argument errors", "[norm]") {
  Tensor x = Tensor::ones({2, 4}, DType::f64);
  REQUIRE_THROWS_WITH(layer_norm(x, Tensor::ones({3}, DType::f64), Tensor()),
                      Catch::Contains("gamma") && Catch::Contains("[3]"));
  REQUIRE_THROWS_WITH(layer_norm(x, Tensor(), Tensor::ones({4, 1}, DType::f64)),
                      Catch::Contains("beta"));
  REQUIRE_THROWS_AS(rms_norm(x, Tensor::ones({4}, DType::f32)), UsageError);
  REQUIRE_THROWS_AS(rms_norm(Tensor::ones({2, 0}, DType::f64), Tensor()), UsageError);
}
