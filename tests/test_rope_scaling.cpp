// RoPE context extension (layers/position/rope_scaling.h): the property that defines each
// kind, checked through the frequencies and the scheme itself, independently of the PyTorch
// fixtures (test_position_reference.cpp), and the validation of its keys.
#include <catch2/catch.hpp>
#include <cmath>

#include "autograd/error.h"
#include "autograd/ops/shape.h"
#include "layers/position/registry.h"
#include "layers/position/rope_scaling.h"
#include "layers/position/sinusoid.h"
#include "test_helpers.h"

using namespace relpos;

namespace {

constexpr std::int64_t kDim = 16;
constexpr double kBase = 10000.0;

PositionConfig rope_config(const std::string& kind, double factor, std::int64_t original_len) {
  PositionConfig c;
  c.scheme = "rope";
  c.set("rope_scaling.kind", kind);
  c.set("rope_scaling.factor", factor);
  c.set("rope_scaling.original_len", original_len);
  return c;
}

std::unique_ptr<PositionScheme> build(const PositionConfig& c) {
  Rng rng(1);
  return make_position_scheme(c, {kDim * 2, 2, 1, true}, rng);
}

}  // namespace

TEST_CASE("rope_scaling: each kind changes the frequencies as its paper defines",
          "[positions][rope_scaling]") {
  const std::vector<double> plain = inverse_frequencies(kDim, kBase);
  const double s = 4.0;
  // Position Interpolation: every frequency divided by s.
  const RopeFrequencies linear = rope_frequencies({"linear", s, 64}, kDim, kBase, 0);
  CHECK(linear.magnitude == 1.0);
  for (std::size_t m = 0; m < plain.size(); ++m) CHECK(linear.inverse[m] == plain[m] / s);
  // NTK-aware: the fastest pair kept, the slowest interpolated by s, the others in between.
  const RopeFrequencies ntk = rope_frequencies({"ntk", s, 64}, kDim, kBase, 0);
  CHECK(ntk.inverse.front() == plain.front());
  CHECK(ntk.inverse.back() == Approx(plain.back() / s).epsilon(1e-13));
  for (std::size_t m = 1; m + 1 < plain.size(); ++m) {
    CHECK(ntk.inverse[m] < plain[m]);
    CHECK(ntk.inverse[m] > plain[m] / s);
  }
  // Dynamic NTK: unscaled up to original_len; beyond it (s = 1), NTK at the ratio n / L.
  CHECK(rope_frequencies({"dynamic_ntk", 1.0, 64}, kDim, kBase, 64).inverse == plain);
  CHECK(rope_frequencies({"dynamic_ntk", s, 64}, kDim, kBase, 10).inverse == plain);
  const auto dynamic = rope_frequencies({"dynamic_ntk", 1.0, 64}, kDim, kBase, 256).inverse;
  testing::require_close(dynamic, ntk.inverse, 1e-15);
  // YaRN: the fastest pairs kept, the slowest interpolated, the logits scaled by
  // (0.1 ln s + 1)^2 through cos and sin; at s = 1 it is plain RoPE.
  const RopeFrequencies yarn = rope_frequencies({"yarn", s, 64}, kDim, kBase, 0);
  CHECK(yarn.inverse.front() == plain.front());
  CHECK(yarn.inverse.back() == plain.back() / s);
  for (std::size_t m = 0; m < plain.size(); ++m) {
    CHECK(yarn.inverse[m] <= plain[m]);
    CHECK(yarn.inverse[m] >= plain[m] / s);
  }
  CHECK(yarn.magnitude == Approx(0.1 * std::log(s) + 1.0).epsilon(1e-15));
  const RopeFrequencies unit = rope_frequencies({"yarn", 1.0, 64}, kDim, kBase, 0);
  CHECK(unit.inverse == plain);
  CHECK(unit.magnitude == 1.0);
}

TEST_CASE("rope_scaling: Position Interpolation rotates position p*s as plain RoPE rotates p",
          "[positions][rope_scaling]") {
  Rng rng(7);
  const Tensor x = randn({1, 2, 41, kDim}, rng, DType::f64);  // (B, H, L, D)
  const Tensor row = slice(x, 2, 0, 1);
  const auto plain = build(rope_config("none", 1.0, 0));
  const auto linear = build(rope_config("linear", 4.0, 10));
  for (std::int64_t p = 0; p <= 10; ++p) {
    INFO("position " << p);
    // The same vector at position 4p under PI and at position p without scaling.
    testing::require_close(linear->rotate(row, 4 * p).to_vector(),
                           plain->rotate(row, p).to_vector(), 1e-12);
  }
  CHECK_FALSE(linear->rotation_depends_on_length());
  CHECK(build(rope_config("dynamic_ntk", 2.0, 10))->rotation_depends_on_length());
  // Dynamic NTK rotates a sequence of up to original_len positions as plain RoPE does, and
  // a longer one differently, from its first position on.
  const auto dynamic = build(rope_config("dynamic_ntk", 2.0, 10));
  const Tensor first10 = slice(x, 2, 0, 10);
  CHECK(testing::largest_difference(dynamic->rotate(first10, 0), plain->rotate(first10, 0)) == 0.0);
  CHECK(testing::largest_difference(slice(dynamic->rotate(x, 0), 2, 1, 10),
                                    plain->rotate(slice(x, 2, 1, 10), 1)) > 1e-3);
}

TEST_CASE("rope_scaling: settings that cannot be used are usage errors naming the key",
          "[positions][rope_scaling]") {
  using Catch::Contains;
  CHECK_THROWS_WITH(build(rope_config("cubic", 2.0, 8)), Contains("rope_scaling.kind"));
  CHECK_THROWS_WITH(build(rope_config("linear", 0.5, 8)), Contains("rope_scaling.factor"));
  CHECK_THROWS_WITH(build(rope_config("yarn", 2.0, 0)), Contains("rope_scaling.original_len"));
  PositionConfig betas = rope_config("yarn", 2.0, 8);
  betas.set("rope_scaling.beta_slow", 40.0);
  CHECK_THROWS_WITH(build(betas), Contains("beta_fast > beta_slow"));
  PositionConfig randomized = rope_config("ntk", 2.0, 8);
  randomized.set("randomized_max_len", std::int64_t{64});
  CHECK_THROWS_WITH(build(randomized), Contains("randomized_max_len"));
  CHECK_THROWS_AS(build(rope_config("cubic", 2.0, 8)), UsageError);
  CHECK_NOTHROW(build(rope_config("none", 0.5, 0)));  // the other keys are unread
}
