// The gradient checker itself: it must catch wrong backward functions.
#include <catch2/catch.hpp>

#include "autograd/ops/elementwise.h"
#include "autograd/tape.h"
#include "test_helpers.h"

using namespace relpos;

namespace {

// x^3 recorded with a deliberately wrong derivative (2x instead of 3x^2).
Tensor wrong_cube(const Tensor& x) {
  Tensor out;
  {
    NoGradGuard no_grad;
    out = mul(mul(x, x), x);
  }
  if (Tape::should_record({&x})) {
    Tensor saved = x.detach();
    Tape::current().record("wrong_cube", {x}, out, [saved](const Tensor& g) {
      return std::vector<Tensor>{mul(g, saved * 2.0)};
    });
  }
  return out;
}

}  // namespace

TEST_CASE("gradcheck catches a deliberately wrong backward", "[gradcheck]") {
  Rng rng(1);
  Tensor x = testing::leaf({3, 4}, rng);
  const GradcheckResult r = gradcheck([](const auto& in) { return wrong_cube(in[0]); }, {x});
  REQUIRE_FALSE(r.ok);
  REQUIRE_THAT(r.message, Catch::Contains("analytic") && Catch::Contains("numeric"));
  REQUIRE(r.max_abs_error > 1e-2);
}

TEST_CASE("gradcheck passes a correct composite and reports what it checked", "[gradcheck]") {
  Rng rng(2);
  Tensor x = testing::leaf({3, 4}, rng);
  const GradcheckResult r =
      gradcheck([](const auto& in) { return mul(mul(in[0], in[0]), in[0]); }, {x});
  INFO(r.message);
  REQUIRE(r.ok);
  REQUIRE(r.checked == 12);
  REQUIRE(r.kinks == 0);
}

TEST_CASE("gradcheck accepts the subgradient of relu at 0 and flags a wrong one", "[gradcheck]") {
  Tensor x = Tensor::from_data(std::vector<double>{-1.0, 0.0, 2.0}, {3}, DType::f64);
  x.set_requires_grad(true);
  const GradcheckResult r = gradcheck([](const auto& in) { return relu(in[0]); }, {x});
  INFO(r.message);
  REQUIRE(r.ok);
  REQUIRE(r.kinks == 1);
  // A backward claiming slope 5 at the kink lies outside [0, 1] and must fail.
  auto bad_relu = [](const std::vector<Tensor>& in) {
    Tensor out;
    {
      NoGradGuard no_grad;
      out = relu(in[0]);
    }
    Tensor saved = in[0].detach();
    Tape::current().record("bad_relu", {in[0]}, out, [saved](const Tensor& g) {
      std::vector<double> slope = saved.to_vector();
      for (double& s : slope) s = s > 0 ? 1.0 : (s == 0 ? 5.0 : 0.0);
      return std::vector<Tensor>{mul(g, Tensor::from_data(slope, saved.shape(), DType::f64))};
    });
    return out;
  };
  REQUIRE_FALSE(gradcheck(bad_relu, {x}).ok);
}

TEST_CASE("gradcheck rejects f32 inputs", "[gradcheck]") {
  Tensor x = Tensor::ones({2});
  x.set_requires_grad(true);
  REQUIRE_THROWS_WITH(gradcheck([](const auto& in) { return exp(in[0]); }, {x}),
                      Catch::Contains("f64"));
}
