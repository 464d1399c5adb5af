// The CPU kernels' vectorised exp (autograd/cpu/fast_exp.h): its accuracy over the range
// it serves and its special values. NaN must come out as NaN (a diverging run shows it)
// without reaching the float-to-int conversion, which UBSan's float-cast-overflow check
// (clang's -fsanitize=undefined, tools/sanitize.sh) reports as undefined behaviour.
#include <catch2/catch.hpp>
#include <cmath>
#include <limits>

#include "autograd/cpu/fast_exp.h"

using relpos::cpu::exp_approx;

TEST_CASE("fast exp: relative error below 1e-7 on [-87, 87]", "[kernel][exp]") {
  double worst = 0.0;
  for (float x = -87.0f; x <= 87.0f; x += 0.0137f) {
    const double exact = std::exp(static_cast<double>(x));
    worst = std::max(worst, std::abs(exp_approx(x) - exact) / exact);
  }
  CHECK(worst < 1e-7);
}

TEST_CASE("fast exp: NaN, infinities and the ends of the range", "[kernel][exp]") {
  constexpr float inf = std::numeric_limits<float>::infinity();
  CHECK(std::isnan(exp_approx(std::numeric_limits<float>::quiet_NaN())));
  CHECK(std::isnan(exp_approx(-std::numeric_limits<float>::quiet_NaN())));
  CHECK(exp_approx(-inf) == 0.0f);
  CHECK(exp_approx(-90.0f) == 0.0f);  // below log(FLT_MIN): exactly 0, never denormal
  CHECK(exp_approx(inf) == exp_approx(88.0f));
  CHECK(exp_approx(1e30f) == exp_approx(88.0f));
  CHECK(std::isfinite(exp_approx(88.0f)));
  CHECK(exp_approx(0.0f) == 1.0f);
}
