// FIRE (layers/position/fire.cpp): the tiled kernel's piecewise-linear MLP term across many
// small tiles against a finite-difference gradcheck and against the composed ops (with
// breakpoints spread over the inputs, shared, and exactly at an input), bit-identical for
// 1 and 2 threads, its positive parameterisation, and its config errors. The
// registry-driven tests (reference fixtures, gradchecks through every path, flash =
// composed over default tiles, bf16, decoding = recompute) cover it like every scheme.
#include <catch2/catch.hpp>
#include <cmath>

#include "autograd/error.h"
#include "autograd/ops/flash_attention.h"
#include "autograd/tape.h"
#include "autograd/threads.h"
#include "layers/position/registry.h"
#include "layers/scaled_attention.h"
#include "test_helpers.h"

using namespace relpos;
using testing::leaf;

namespace {

// {q, k, v, w1, b1, w2, c, threshold} in f64: B=1, H=2, D=3, 4 hidden units.
std::vector<Tensor> fire_inputs(std::int64_t q_len, std::int64_t k_len, double c, double threshold,
                                Rng& rng) {
  const std::int64_t b = 1, h = 2, d = 3, hidden = 4;
  return {leaf({b, h, q_len, d}, rng),
          leaf({b, h, k_len, d}, rng),
          leaf({b, h, k_len, d}, rng),
          leaf({hidden}, rng),
          leaf({hidden}, rng),
          leaf({h, hidden}, rng),
          leaf(Tensor::from_data(std::vector<double>{c}, {1}, DType::f64)),
          leaf(Tensor::from_data(std::vector<double>{threshold}, {1}, DType::f64))};
}

FireTerms fire_of(const std::vector<Tensor>& x) { return {x[3], x[4], x[5], x[6], x[7]}; }

// The flash op with only the FIRE term, in tiles of 8 queries by 16 keys.
Tensor flash_fire(const std::vector<Tensor>& x) {
  FlashTerms t;
  t.fire = fire_of(x);
  t.scale = 1.0 / std::sqrt(3.0);
  t.causal = true;
  t.query_tile = 8;
  t.key_tile = 16;
  return flash_attention(x[0], x[1], x[2], t);
}

// {w1, b1} of 11 hidden units whose breakpoints x = -b1/w1 cut [0, 1] into many pieces, on
// either side: two units share one (0.2), one unit is on and one off everywhere (w1 = 0),
// and, when `ties`, two have b1 = 0, so that x = 0 (every query's own key) sits exactly at
// their breakpoint, where ReLU's derivative is 0 in the composed ops.
std::pair<Tensor, Tensor> spread_units(bool ties) {
  const double zero = ties ? 0.0 : 0.03;
  const std::vector<std::pair<double, double>> units = {
      {1.3, 0.2},  {-0.8, 0.55}, {0.9, zero},  {-1.1, zero}, {1.3, 0.2},  {0.0, 0.7},
      {0.0, -0.4}, {0.6, 0.8},   {-1.7, 0.35}, {2.0, 0.65},  {-0.5, 0.93}};
  std::vector<double> w1, b1;
  for (const auto& [w, at] : units) {
    w1.push_back(w);
    b1.push_back(w == 0.0 ? at : -w * at);  // w1 = 0: at is the constant pre-activation
  }
  const auto hidden = static_cast<std::int64_t>(units.size());
  return {leaf(Tensor::from_data(w1, {hidden}, DType::f64)),
          leaf(Tensor::from_data(b1, {hidden}, DType::f64))};
}

// fire_inputs with the units of spread_units and a matching (H, hidden) w2.
std::vector<Tensor> spread_inputs(std::int64_t q_len, std::int64_t k_len, double threshold,
                                  bool ties, Rng& rng) {
  std::vector<Tensor> x = fire_inputs(q_len, k_len, 0.4, threshold, rng);
  std::tie(x[3], x[4]) = spread_units(ties);
  x[5] = leaf({2, x[3].size(0)}, rng);
  return x;
}

// flash_fire's output and its gradients with respect to every input, in that order.
std::vector<Tensor> flash_results(const std::vector<Tensor>& x, const Tensor& weights) {
  const Tensor out = flash_fire(x);
  backward(out, weights);
  std::vector<Tensor> results = {out.detach()};
  for (const Tensor& t : x) results.push_back(t.grad());
  return results;
}

// The geometries: 20 queries (positions 30..49) against 50 keys, and 24 against 24; the
// thresholds lie inside the queries' positions, so rows on both sides of max(i, L_thr).
struct Geometry {
  std::int64_t q_len, k_len;
  double threshold;
};
constexpr Geometry kGeometries[] = {{20, 50, 38.5}, {24, 24, 9.5}};

}  // namespace

TEST_CASE("gradcheck: FIRE's MLP, c and threshold through the flash kernel across tiles",
          "[positions][fire][gradcheck]") {
  for (const Geometry& g : kGeometries) {
    INFO("Lq=" << g.q_len << " Lk=" << g.k_len << " threshold=" << g.threshold);
    Rng rng(261);
    testing::require_gradcheck(flash_fire, fire_inputs(g.q_len, g.k_len, 0.3, g.threshold, rng));
  }
}

TEST_CASE("FIRE: the flash kernel's output and gradients equal the composed ops across tiles",
          "[positions][fire]") {
  for (const Geometry& g : kGeometries) {
    INFO("Lq=" << g.q_len << " Lk=" << g.k_len);
    Rng rng(262);
    const std::vector<Tensor> flash_in = fire_inputs(g.q_len, g.k_len, 0.7, g.threshold, rng);
    std::vector<Tensor> composed_in;
    for (const Tensor& t : flash_in) composed_in.push_back(leaf(t.detach()));
    const Tensor weights = randn({1, 2, g.q_len, 3}, rng, DType::f64);
    const Tensor flash = flash_fire(flash_in);
    backward(flash, weights);
    PositionTerms terms;
    terms.fire = fire_of(composed_in);
    const Tensor composed = scaled_attention(composed_in[0], composed_in[1], composed_in[2], terms,
                                             true, AttentionPath::composed);
    backward(composed, weights);
    CHECK(testing::relative_error(flash, composed) <= 1e-12);
    for (std::size_t i = 0; i < flash_in.size(); ++i) {
      INFO("gradient of input " << i);
      REQUIRE(flash_in[i].grad().defined());
      CHECK(testing::relative_error(flash_in[i].grad(), composed_in[i].grad()) <= 1e-12);
    }
    // The threshold's gradient is not trivially zero: rows below it move with it.
    CHECK(std::abs(flash_in[7].grad().to_vector()[0]) > 1e-6);
  }
}

TEST_CASE("FIRE keeps c and L_thr positive: exp of its parameters, starting at the keys' values",
          "[positions][fire]") {
  PositionConfig config;
  config.scheme = "fire";
  config.set("fire_c", 0.25);
  config.set("fire_threshold", 48.0);
  config.set("fire_hidden", std::int64_t{7});
  Rng rng(263);
  const auto scheme = make_position_scheme(config, {8, 2, 3, true}, rng);
  CHECK(scheme->parameters().size() == 3 * 5);
  const PositionTerms t = scheme->terms(2, 5, 5);
  REQUIRE(t.fire.defined());
  CHECK(t.fire.w1.shape() == Shape{7});
  CHECK(t.fire.w2.shape() == Shape{2, 7});
  CHECK(t.fire.c.to_vector()[0] == Approx(0.25).epsilon(1e-6));
  CHECK(t.fire.threshold.to_vector()[0] == Approx(48.0).epsilon(1e-6));
}

TEST_CASE("FIRE refuses bidirectional models and bad keys in one line", "[positions][fire]") {
  Rng rng(264);
  PositionConfig config;
  config.scheme = "fire";
  REQUIRE_THROWS_WITH(make_position_scheme(config, {8, 2, 1, false}, rng),
                      Catch::Contains("model.causal=true"));
  config.set("fire_hidden", std::int64_t{0});
  REQUIRE_THROWS_WITH(make_position_scheme(config, {8, 2, 1, true}, rng),
                      Catch::Contains("model.position.fire_hidden must be in [1, 4096], got 0"));
  config.set("fire_hidden", std::int64_t{4});
  config.set("fire_threshold", -1.0);
  REQUIRE_THROWS_AS(make_position_scheme(config, {8, 2, 1, true}, rng), UsageError);
  REQUIRE_THROWS_WITH(make_position_scheme(config, {8, 2, 1, true}, rng),
                      Catch::Contains("model.position.fire_threshold must be a finite number > 0"));
}

TEST_CASE("gradcheck: FIRE with many pieces per row through the flash kernel",
          "[positions][fire][gradcheck]") {
  for (const Geometry& g : kGeometries) {
    INFO("Lq=" << g.q_len << " Lk=" << g.k_len << " threshold=" << g.threshold);
    Rng rng(265);
    testing::require_gradcheck(flash_fire,
                               spread_inputs(g.q_len, g.k_len, g.threshold, false, rng));
  }
}

TEST_CASE("FIRE's pieces: flash = composed with shared breakpoints and inputs exactly at one",
          "[positions][fire]") {
  for (const Geometry& g : kGeometries) {
    INFO("Lq=" << g.q_len << " Lk=" << g.k_len);
    Rng rng(266);
    const std::vector<Tensor> flash_in = spread_inputs(g.q_len, g.k_len, g.threshold, true, rng);
    std::vector<Tensor> composed_in;
    for (const Tensor& t : flash_in) composed_in.push_back(leaf(t.detach()));
    const Tensor weights = randn({1, 2, g.q_len, 3}, rng, DType::f64);
    const std::vector<Tensor> flash = flash_results(flash_in, weights);
    PositionTerms terms;
    terms.fire = fire_of(composed_in);
    const Tensor composed = scaled_attention(composed_in[0], composed_in[1], composed_in[2], terms,
                                             true, AttentionPath::composed);
    backward(composed, weights);
    CHECK(testing::relative_error(flash[0], composed) <= 1e-12);
    for (std::size_t i = 0; i < flash_in.size(); ++i) {
      INFO("gradient of input " << i);
      CHECK(testing::relative_error(flash[i + 1], composed_in[i].grad()) <= 1e-12);
    }
    // Units 2 and 3 (b1 = 0) are off at x = 0 in both paths: had the kernel counted unit 2
    // on there, b1[2]'s gradient would differ by w2·dLogit summed over the diagonal.
    const std::vector<double> db1 = flash[5].to_vector(), want = composed_in[4].grad().to_vector();
    CHECK(db1[2] == Approx(want[2]).epsilon(1e-12));
    CHECK(db1[3] == 0.0);  // unit 3 is off for every x >= 0
  }
}

TEST_CASE("FIRE in the flash kernel is bit-identical with 1 and 2 threads", "[positions][fire]") {
  // Large enough that the kernel splits its (batch, head) tasks over threads.
  Rng rng(267);
  const std::int64_t b = 2, h = 2, len = 256, d = 8, hidden = 32;
  const auto f32_leaf = [](const Tensor& t) { return leaf(t.to(DType::f32)); };
  std::vector<Tensor> x = {
      f32_leaf(randn({b, h, len, d}, rng, DType::f64)),
      f32_leaf(randn({b, h, len, d}, rng, DType::f64)),
      f32_leaf(randn({b, h, len, d}, rng, DType::f64)),
      f32_leaf(randn({hidden}, rng, DType::f64)),
      f32_leaf(randn({hidden}, rng, DType::f64)),
      f32_leaf(randn({h, hidden}, rng, DType::f64)),
      f32_leaf(Tensor::from_data(std::vector<double>{0.2}, {1}, DType::f64)),
      f32_leaf(Tensor::from_data(std::vector<double>{100.0}, {1}, DType::f64))};
  const Tensor weights = randn({b, h, len, d}, rng, DType::f32);
  const auto run = [&](int threads) {
    std::vector<Tensor> fresh;
    for (const Tensor& t : x) fresh.push_back(leaf(t.detach()));
    set_num_threads(threads);
    return flash_results(fresh, weights);
  };
  const int threads = num_threads();
  const std::vector<Tensor> one = run(1), two = run(2);
  set_num_threads(threads);
  for (std::size_t i = 0; i < one.size(); ++i) {
    INFO("result " << i);
    REQUIRE(one[i].defined());
    CHECK(one[i].to_vector() == two[i].to_vector());
  }
}
