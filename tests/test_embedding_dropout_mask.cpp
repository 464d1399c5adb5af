// embedding, dropout, where, masked_fill and causal_mask: values, gradchecks,
// reproducibility and error messages.
#include <catch2/catch.hpp>
#include <cmath>
#include <limits>

#include "autograd/error.h"
#include "autograd/ops/dropout.h"
#include "autograd/ops/elementwise.h"
#include "autograd/ops/embedding.h"
#include "autograd/ops/mask.h"
#include "autograd/ops/reduce.h"
#include "autograd/ops/shape.h"
#include "autograd/ops/softmax.h"
#include "autograd/tape.h"
#include "test_helpers.h"

using namespace relpos;
using namespace relpos::testing;

// ---- embedding ----

TEST_CASE("embedding gathers rows", "[embedding]") {
  Tensor table = f64({0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}, {4, 3});
  Tensor out = embedding(table, i64({3, 0, 1, 3}, {2, 2}));
  REQUIRE(out.shape() == Shape{2, 2, 3});
  REQUIRE(out.to_vector() == std::vector<double>{9, 10, 11, 0, 1, 2, 3, 4, 5, 9, 10, 11});
  REQUIRE(embedding(table, i64({2}, {})).to_vector() == std::vector<double>{6, 7, 8});
  REQUIRE(embedding(table, i64({}, {0})).shape() == Shape{0, 3});
}

TEST_CASE("embedding backward adds repeated rows", "[embedding]") {
  Rng rng(20);
  const std::int64_t vocab = 1000, dim = 64, count = 5000;
  Tensor table = leaf({vocab, dim}, rng);
  std::vector<double> idx;
  std::vector<double> counts(vocab, 0.0);
  for (std::int64_t i = 0; i < count; ++i) {
    const auto v = static_cast<double>(rng.below(vocab / 2) * 2);  // odd rows never used
    idx.push_back(v);
    counts[static_cast<std::size_t>(v)] += 1;
  }
  Tensor indices = i64(idx, {50, 100});
  backward(sum(embedding(table, indices)));
  const auto g = table.grad().to_vector();
  for (std::int64_t v = 0; v < vocab; ++v)
    for (std::int64_t j = 0; j < dim; j += 9) REQUIRE(g[v * dim + j] == counts[v]);
}

TEST_CASE("gradcheck: embedding", "[embedding][gradcheck]") {
  Rng rng(21);
  Tensor table = leaf({5, 3}, rng);
  Tensor indices = i64({4, 1, 1, 0, 4, 4}, {2, 3});
  require_gradcheck([&](const std::vector<Tensor>& in) { return embedding(in[0], indices); },
                    {table});
  Tensor tt = transposed_leaf({5, 3}, rng);
  require_gradcheck([&](const std::vector<Tensor>& in) { return embedding(in[0], indices); }, {tt});
}

TEST_CASE("embedding rejects out-of-range indices", "[embedding]") {
  Tensor table = Tensor::ones({4, 3});
  REQUIRE_THROWS_AS(embedding(table, i64({0, 1, 7, 2}, {2, 2})), UsageError);
  REQUIRE_THROWS_WITH(embedding(table, i64({0, 1, 7, 2}, {2, 2})), Catch::Contains("index 7") &&
                                                                       Catch::Contains("[1, 0]") &&
                                                                       Catch::Contains("[4, 3]"));
  REQUIRE_THROWS_WITH(embedding(table, i64({-1}, {1})),
                      Catch::Contains("index -1") && Catch::Contains("[4, 3]"));
  REQUIRE_THROWS_WITH(embedding(table, i64({4}, {1})), Catch::Contains("index 4"));
  REQUIRE_THROWS_WITH(embedding(table, Tensor::zeros({2})), Catch::Contains("i64"));
}

// ---- dropout ----

TEST_CASE("dropout rejects p outside the interval 0 <= p < 1", "[dropout]") {
  Tensor x = Tensor::ones({4});
  for (double p : {-0.1, 1.0, 1.5, std::nan("")})
    REQUIRE_THROWS_WITH(dropout(x, p, 1, 0, true), Catch::Contains("dropout: p"));
  REQUIRE_THROWS_AS(dropout(x, 1.0, 1, 0, false), UsageError);
}

TEST_CASE("dropout is the identity in eval mode or with p = 0", "[dropout]") {
  Rng rng(30);
  Tensor x = randn({3, 4}, rng, DType::f64);
  REQUIRE(dropout(x, 0.5, 1, 0, false).to_vector() == x.to_vector());
  REQUIRE(dropout(x, 0.0, 1, 0, true).to_vector() == x.to_vector());
}

TEST_CASE("dropout masks follow the counter hash and are reproducible", "[dropout]") {
  const double p = 0.3;
  const std::int64_t n = 100000;
  Tensor ones = Tensor::ones({100, 1000}, DType::f64);
  const auto a = dropout(ones, p, 42, 7, true).to_vector();
  REQUIRE(a == dropout(ones, p, 42, 7, true).to_vector());
  REQUIRE(a != dropout(ones, p, 43, 7, true).to_vector());
  REQUIRE(a != dropout(ones, p, 42, 8, true).to_vector());
  std::int64_t kept = 0;
  double total = 0.0;
  for (std::int64_t i = 0; i < n; ++i) {
    const double u =
        static_cast<double>(mix64(42, 7 + static_cast<std::uint64_t>(i)) >> 11) * 0x1.0p-53;
    REQUIRE(a[i] == (u >= p ? 1.0 / (1.0 - p) : 0.0));
    kept += a[i] != 0.0;
    total += a[i];
  }
  // std of the kept fraction is sqrt(p(1-p)/n) ~ 0.0015
  REQUIRE(static_cast<double>(kept) / n == Approx(1 - p).margin(0.01));
  REQUIRE(total / n == Approx(1.0).margin(0.015));
  // Offsets shift the stream: element i at offset 7 is element i - 1 at offset 8.
  const auto shifted = dropout(ones, p, 42, 8, true).to_vector();
  for (std::int64_t i = 1; i < 1000; ++i) REQUIRE(shifted[i - 1] == a[i]);
  // f32 draws the same mask.
  const auto f = dropout(Tensor::ones({100, 1000}), p, 42, 7, true).to_vector();
  for (std::int64_t i = 0; i < n; ++i) REQUIRE((f[i] != 0.0) == (a[i] != 0.0));
}

TEST_CASE("dropout backward multiplies by the same mask", "[dropout][gradcheck]") {
  Rng rng(31);
  Tensor x = leaf({6, 7}, rng);
  Tensor y = dropout(x, 0.4, 5, 0, true);
  backward(sum(y));
  const auto mask = dropout(Tensor::ones({6, 7}, DType::f64), 0.4, 5, 0, true).to_vector();
  REQUIRE(x.grad().to_vector() == mask);
  const auto xv = x.to_vector(), yv = y.to_vector();
  for (std::size_t i = 0; i < xv.size(); ++i) REQUIRE(yv[i] == xv[i] * mask[i]);
  require_gradcheck([](const std::vector<Tensor>& in) { return dropout(in[0], 0.4, 5, 0, true); },
                    {x});
  // A non-contiguous input: the mask follows the row-major order of its logical shape.
  Tensor xt = transposed_leaf({6, 7}, rng);
  require_close(dropout(xt, 0.4, 5, 0, true).to_vector(),
                (xt.contiguous().detach() * f64(mask, {6, 7})).to_vector(), 0.0);
  require_gradcheck([](const std::vector<Tensor>& in) { return dropout(in[0], 0.4, 5, 0, true); },
                    {xt});
}

// ---- where / masked_fill / causal_mask ----

TEST_CASE("where broadcasts mask, a and b", "[mask]") {
  Tensor m = u8({1, 0}, {2, 1});
  Tensor a = f64({1, 2, 3}, {1, 3});
  Tensor b = f64({-1, -2, -3}, {3});
  Tensor out = where(m, a, b);
  REQUIRE(out.shape() == Shape{2, 3});
  REQUIRE(out.to_vector() == std::vector<double>{1, 2, 3, -1, -2, -3});
  REQUIRE(where(u8({0, 1, 1}, {3}), f64({5}, {}), b).to_vector() == std::vector<double>{-1, 5, 5});
}

TEST_CASE("gradcheck: where with broadcasting", "[mask][gradcheck]") {
  Rng rng(40);
  Tensor m = u8({1, 0, 0, 1, 1, 0, 1, 0}, {2, 1, 4});
  Tensor a = leaf({3, 4}, rng);
  Tensor b = leaf({2, 3, 1}, rng);
  require_gradcheck([&](const std::vector<Tensor>& in) { return where(m, in[0], in[1]); }, {a, b});
  Tensor at = transposed_leaf({3, 4}, rng);
  require_gradcheck([&](const std::vector<Tensor>& in) { return where(m, in[0], in[1]); }, {at, b});
  // Gradient of a is the count of selected positions per element.
  a.zero_grad();
  backward(sum(where(m, a, b.detach())));
  const auto ga = a.grad().to_vector();
  REQUIRE(ga[0] == 2.0);  // column 0 selected in both batches
  REQUIRE(ga[1] == 0.0);  // column 1 selected in neither
  REQUIRE(ga[2] == 1.0);
}

TEST_CASE("where rejects unbroadcastable shapes and non-u8 masks", "[mask]") {
  REQUIRE_THROWS_WITH(where(u8({1, 0, 1, 0, 1, 0}, {2, 3}), Tensor::ones({4}), Tensor::ones({4})),
                      Catch::Contains("[2, 3]") && Catch::Contains("[4]"));
  REQUIRE_THROWS_WITH(where(u8({1, 0}, {2}), Tensor::ones({2}), Tensor::ones({3})),
                      Catch::Contains("[2]") && Catch::Contains("[3]"));
  REQUIRE_THROWS_WITH(where(Tensor::ones({2}), Tensor::ones({2}), Tensor::ones({2})),
                      Catch::Contains("u8"));
  REQUIRE_THROWS_AS(where(u8({1}, {1}), Tensor::ones({2}), Tensor::ones({2}, DType::f64)),
                    UsageError);
}

TEST_CASE("masked_fill fills and blocks the gradient", "[mask]") {
  Rng rng(41);
  Tensor x = leaf({2, 3}, rng);
  Tensor m = u8({0, 1, 0}, {3});
  Tensor y = masked_fill(x, m, -7.5);
  REQUIRE(y.shape() == Shape{2, 3});
  const auto xv = x.to_vector(), yv = y.to_vector();
  REQUIRE(yv == std::vector<double>{xv[0], -7.5, xv[2], xv[3], -7.5, xv[5]});
  backward(sum(y * 2.0));
  REQUIRE(x.grad().to_vector() == std::vector<double>{2, 0, 2, 2, 0, 2});
  require_gradcheck([&](const std::vector<Tensor>& in) { return masked_fill(in[0], m, 3.0); }, {x});
  REQUIRE_THROWS_WITH(masked_fill(x.detach(), u8({1, 0, 1, 0}, {2, 2, 1}), 0.0),
                      Catch::Contains("[2, 2, 1]") && Catch::Contains("[2, 3]"));
}

TEST_CASE("causal_mask hides future keys", "[mask]") {
  REQUIRE(causal_mask(3, 3).shape() == Shape{3, 3});
  REQUIRE(causal_mask(3, 3).dtype() == DType::u8);
  REQUIRE(causal_mask(3, 3).to_vector() == std::vector<double>{0, 1, 1, 0, 0, 1, 0, 0, 0});
  // Queries are the last 2 of 4 positions: query 0 is at position 2.
  REQUIRE(causal_mask(2, 4).to_vector() == std::vector<double>{0, 0, 0, 1, 0, 0, 0, 0});
  REQUIRE(causal_mask(1, 3).to_vector() == std::vector<double>{0, 0, 0});
  REQUIRE_THROWS_AS(causal_mask(4, 2), UsageError);
  REQUIRE_THROWS_AS(causal_mask(-1, 2), UsageError);
  // Masked attention weights: zero on the future, rows sum to 1, finite gradients.
  Rng rng(42);
  Tensor scores = leaf({3, 5}, rng);
  Tensor w =
      softmax(masked_fill(scores, causal_mask(3, 5), -std::numeric_limits<double>::infinity()));
  const auto wv = w.to_vector();
  for (int i = 0; i < 3; ++i) {
    double s = 0;
    for (int j = 0; j < 5; ++j) {
      if (j > i + 2) REQUIRE(wv[i * 5 + j] == 0.0);
      s += wv[i * 5 + j];
    }
    REQUIRE(s == Approx(1.0));
  }
  backward(sum(w * f64({1, 2, 3, 4, 5, 5, 4, 3, 2, 1, 1, 0, 1, 0, 1}, {3, 5})));
  for (double g : scores.grad().to_vector()) REQUIRE(std::isfinite(g));
  REQUIRE(scores.grad().to_vector()[4] == 0.0);
}
