// Softmax, log-softmax and cross-entropy: closed-form values, stability,
// gradchecks (any axis, non-contiguous inputs) and error messages.
#include <catch2/catch.hpp>
#include <cmath>
#include <limits>

#include "autograd/error.h"
#include "autograd/ops/elementwise.h"
#include "autograd/ops/loss.h"
#include "autograd/ops/reduce.h"
#include "autograd/ops/shape.h"
#include "autograd/ops/softmax.h"
#include "autograd/tape.h"
#include "test_helpers.h"

using namespace relpos;
using namespace relpos::testing;

namespace {

// Reference softmax of one row.
std::vector<double> softmax_ref(const std::vector<double>& row) {
  double m = row[0];
  for (double v : row) m = std::max(m, v);
  double s = 0.0;
  for (double v : row) s += std::exp(v - m);
  std::vector<double> out;
  for (double v : row) out.push_back(std::exp(v - m) / s);
  return out;
}

}  // namespace

TEST_CASE("softmax and log_softmax match closed forms on the last axis", "[softmax]") {
  Tensor x = f64({1, 2, 3, 0, 0, 0}, {2, 3});
  const double s = std::exp(1.0) + std::exp(2.0) + std::exp(3.0);
  require_close(
      softmax(x).to_vector(),
      {std::exp(1.0) / s, std::exp(2.0) / s, std::exp(3.0) / s, 1 / 3.0, 1 / 3.0, 1 / 3.0}, 1e-14);
  require_close(log_softmax(x).to_vector(),
                {1 - std::log(s), 2 - std::log(s), 3 - std::log(s), -std::log(3.0), -std::log(3.0),
                 -std::log(3.0)},
                1e-14);
}

TEST_CASE("softmax over a middle or first axis", "[softmax]") {
  Rng rng(1);
  Tensor x = randn({3, 4, 2}, rng, DType::f64);
  Tensor y = softmax(x, 1);
  REQUIRE(y.shape() == Shape{3, 4, 2});
  const auto xv = x.to_vector(), yv = y.to_vector();
  for (int a = 0; a < 3; ++a)
    for (int c = 0; c < 2; ++c) {
      std::vector<double> row;
      for (int b = 0; b < 4; ++b) row.push_back(xv[(a * 4 + b) * 2 + c]);
      const auto ref = softmax_ref(row);
      for (int b = 0; b < 4; ++b) REQUIRE(yv[(a * 4 + b) * 2 + c] == Approx(ref[b]).margin(1e-14));
    }
  // axis 0 equals log of softmax over axis 0, and each column sums to 1.
  Tensor z = softmax(x, 0);
  require_close(log_softmax(x, 0).to_vector(), relpos::log(z).to_vector(), 1e-12);
  require_close(sum(z, {0}).to_vector(), std::vector<double>(8, 1.0), 1e-14);
}

TEST_CASE("softmax is stable for large inputs", "[softmax]") {
  const double e = std::exp(1.0);
  for (DType dtype : {DType::f32, DType::f64}) {
    Tensor x = Tensor::from_data(std::vector<double>{1000, 1001, -1000, -1001}, {2, 2}, dtype);
    const auto y = softmax(x).to_vector();
    const auto l = log_softmax(x).to_vector();
    for (double v : y) REQUIRE(std::isfinite(v));
    for (double v : l) REQUIRE(std::isfinite(v));
    const double tol = dtype == DType::f32 ? 1e-6 : 1e-14;
    require_close(y, {1 / (1 + e), e / (1 + e), e / (1 + e), 1 / (1 + e)}, tol);
    const double lse = std::log1p(e);
    require_close(l, {-lse, 1 - lse, 1 - lse, -lse}, dtype == DType::f32 ? 1e-4 : 1e-12);
  }
}

TEST_CASE("softmax on many rows (parallel path) sums to one in f32", "[softmax]") {
  Rng rng(2);
  Tensor x = randn({300, 257}, rng, DType::f32, 5.0);
  Tensor sums = sum(softmax(x), {1});
  for (double v : sums.to_vector()) REQUIRE(v == Approx(1.0).margin(1e-5));
  // f32 agrees with f64.
  require_close(softmax(x).to_vector(), softmax(x.to(DType::f64)).to_vector(), 1e-5);
}

TEST_CASE("gradcheck: softmax and log_softmax", "[softmax][gradcheck]") {
  Rng rng(3);
  for (bool use_log : {false, true}) {
    auto op = [use_log](const Tensor& t, std::int64_t axis) {
      return use_log ? log_softmax(t, axis) : softmax(t, axis);
    };
    Tensor x = leaf({3, 5}, rng);
    require_gradcheck([&](const std::vector<Tensor>& in) { return op(in[0], -1); }, {x});
    Tensor y = leaf({2, 4, 3}, rng);
    require_gradcheck([&](const std::vector<Tensor>& in) { return op(in[0], 1); }, {y});
    require_gradcheck([&](const std::vector<Tensor>& in) { return op(in[0], 0); }, {y});
    // non-contiguous leaf, and a transpose inside the function
    Tensor z = transposed_leaf({4, 3}, rng);
    require_gradcheck([&](const std::vector<Tensor>& in) { return op(in[0], -1); }, {z});
    require_gradcheck([&](const std::vector<Tensor>& in) { return op(transpose(in[0], 0, 1), 1); },
                      {x});
  }
}

TEST_CASE("softmax rejects a bad axis", "[softmax]") {
  REQUIRE_THROWS_AS(softmax(Tensor::ones({2, 3}), 2), UsageError);
  REQUIRE_THROWS_AS(softmax(Tensor::ones({2}, DType::i64)), UsageError);
}

TEST_CASE("cross_entropy matches logsumexp minus the target logit", "[loss]") {
  Tensor x = f64({1, 2, 3, 0.5, -1, 2}, {2, 3});
  Tensor t = i64({2, 0}, {2});
  const double l0 = std::log(std::exp(1.0) + std::exp(2.0) + std::exp(3.0)) - 3.0;
  const double l1 = std::log(std::exp(0.5) + std::exp(-1.0) + std::exp(2.0)) - 0.5;
  require_close(cross_entropy(x, t, -100, Reduction::none).to_vector(), {l0, l1}, 1e-14);
  REQUIRE(cross_entropy(x, t, -100, Reduction::sum).item() == Approx(l0 + l1).epsilon(1e-14));
  REQUIRE(cross_entropy(x, t).item() == Approx((l0 + l1) / 2).epsilon(1e-14));
  // Equal to -log_softmax at the target.
  const auto ls = log_softmax(x).to_vector();
  require_close(cross_entropy(x, t, -100, Reduction::none).to_vector(), {-ls[2], -ls[3]}, 1e-14);
  // Large logits stay finite.
  Tensor big = f64({1000, 1001}, {1, 2});
  REQUIRE(cross_entropy(big, i64({0}, {1})).item() == Approx(std::log1p(std::exp(1.0))));
}

TEST_CASE("cross_entropy ignores ignore_index in the mean and the gradient", "[loss]") {
  Rng rng(4);
  Tensor x = leaf({3, 4}, rng);
  Tensor t = i64({1, -100, 3}, {3});
  Tensor loss = cross_entropy(x, t);
  const auto rows = cross_entropy(x.detach(), t, -100, Reduction::none).to_vector();
  REQUIRE(rows[1] == 0.0);
  REQUIRE(loss.item() == Approx((rows[0] + rows[2]) / 2).epsilon(1e-14));
  backward(loss);
  const auto g = x.grad().to_vector();
  for (int j = 0; j < 4; ++j) REQUIRE(g[4 + j] == 0.0);
  // A custom ignore_index.
  REQUIRE(cross_entropy(x.detach(), i64({1, 7, 3}, {3}), 7).item() == Approx(loss.item()));
  // All ignored: mean is 0 (documented choice), and so is the gradient.
  x.zero_grad();
  Tensor none = cross_entropy(x, i64({-100, -100, -100}, {3}));
  REQUIRE(none.item() == 0.0);
  backward(none);
  for (double v : x.grad().to_vector()) REQUIRE(v == 0.0);
}

TEST_CASE("gradcheck: cross_entropy", "[loss][gradcheck]") {
  Rng rng(5);
  Tensor t2 = i64({0, 4, -100, 2}, {4});
  Tensor x = leaf({4, 5}, rng);
  for (Reduction r : {Reduction::mean, Reduction::sum, Reduction::none})
    require_gradcheck(
        [&](const std::vector<Tensor>& in) { return cross_entropy(in[0], t2, -100, r); }, {x});
  // (B, T, C) logits with (B, T) targets
  Tensor x3 = leaf({2, 3, 4}, rng);
  Tensor t3 = i64({0, 1, 2, 3, 3, -100}, {2, 3});
  require_gradcheck([&](const std::vector<Tensor>& in) { return cross_entropy(in[0], t3); }, {x3});
  // non-contiguous logits: a (C, N) leaf transposed inside, and a transposed leaf
  Tensor xt = leaf({5, 4}, rng);
  require_gradcheck(
      [&](const std::vector<Tensor>& in) { return cross_entropy(transpose(in[0], 0, 1), t2); },
      {xt});
  Tensor xv = transposed_leaf({4, 5}, rng);
  require_gradcheck([&](const std::vector<Tensor>& in) { return cross_entropy(in[0], t2); }, {xv});
}

TEST_CASE("cross_entropy rejects bad targets", "[loss]") {
  Tensor x = Tensor::ones({2, 3}, DType::f64);
  REQUIRE_THROWS_AS(cross_entropy(x, i64({0, 3}, {2})), UsageError);
  REQUIRE_THROWS_WITH(cross_entropy(x, i64({0, 3}, {2})), Catch::Contains("target 3") &&
                                                              Catch::Contains("position [1]") &&
                                                              Catch::Contains("3 classes"));
  REQUIRE_THROWS_WITH(cross_entropy(x, i64({-1, 0}, {2})),
                      Catch::Contains("target -1") && Catch::Contains("position [0]"));
  REQUIRE_THROWS_WITH(cross_entropy(x, i64({0, 0, 0}, {3})), Catch::Contains("[3]"));
  REQUIRE_THROWS_WITH(cross_entropy(x, Tensor::zeros({2}, DType::f64)), Catch::Contains("i64"));
}
