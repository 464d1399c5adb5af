// GPU vs CPU: sum_axis and max_axis (+backward) over (outer, n, inner) in both
// kernel layouts (inner == 1: a warp per row; inner > 1: a thread per output),
// max's tie and NaN rules, and run-to-run bit equality of the reductions.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>

#include "cuda_test_helpers.h"

using namespace relpos;
using namespace relpos::cuda_testing;

namespace {

struct Axes {
  std::int64_t outer, n, inner;
};

// Rows (inner == 1) short and long; columns (inner > 1) in one chunk of rows
// and in several (n > 64).
const Axes kAxes[] = {{7, 1000, 1}, {3, 5, 1},    {1, 4097, 1},  {40, 3, 1},
                      {6, 50, 9},   {2, 1, 17},   {2, 1000, 7},  {1, 130, 33}};

}  // namespace

TEST_CASE("sum_axis over rows and over strided columns", "[cuda]") {
  Rng rng(21);
  for (const Axes& s : kAxes) {
    INFO("outer " << s.outer << " n " << s.n << " inner " << s.inner);
    Pair x = randn_pair({s.outer, s.n, s.inner}, rng);
    Pair out = poisoned_pair({s.outer, s.inner});
    cpu().sum_axis(x.host, s.outer, s.n, s.inner, out.host);
    gpu().sum_axis(x.device, s.outer, s.n, s.inner, out.device);
    // Summation order differs (lanes + tree vs. one running sum): the error
    // scales with the sum of |x|, about n here.
    require_match(out, static_cast<double>(s.n));
  }
}

TEST_CASE("sum_axis with n = 0 writes zeros", "[cuda]") {
  Pair x = poisoned_pair({3, 0, 1});
  Pair out = poisoned_pair({3, 1});
  cpu().sum_axis(x.host, 3, 0, 1, out.host);
  gpu().sum_axis(x.device, 3, 0, 1, out.device);
  require_identical(out.device, out.host);
}

TEST_CASE("max_axis: values and first-index argmax with many ties", "[cuda]") {
  Rng rng(22);
  for (const Axes& s : kAxes) {
    INFO("outer " << s.outer << " n " << s.n << " inner " << s.inner);
    Pair x = integer_pair({s.outer, s.n, s.inner}, rng, -3, 3, DType::f32);
    Pair out = poisoned_pair({s.outer, s.inner});
    Pair argmax = poisoned_pair({s.outer, s.inner}, DType::i64);
    cpu().max_axis(x.host, s.outer, s.n, s.inner, out.host, argmax.host);
    gpu().max_axis(x.device, s.outer, s.n, s.inner, out.device, argmax.device);
    require_identical(out.device, out.host);
    require_identical(argmax.device, argmax.host);
  }
}

TEST_CASE("max_axis keeps the CPU's rules: the first NaN wins, -inf rows give 0", "[cuda]") {
  const double nan = std::nan(""), inf = std::numeric_limits<double>::infinity();
  // Eight rows of 40: the special values sit at the start, the rest is -5.
  const std::vector<std::vector<double>> heads = {
      {nan, 1, 2}, {1, nan, 2}, {-inf, -inf, -inf}, {-inf, nan, -inf},
      {2, 2, 1},   {-inf, 5, 5}, {nan, nan, nan}, {3, 9, nan, 9, nan}};
  const std::int64_t rows = static_cast<std::int64_t>(heads.size()), n = 40;
  std::vector<double> values(static_cast<std::size_t>(rows * n), -5.0);
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::size_t j = 0; j < heads[r].size(); ++j) values[r * n + j] = heads[r][j];
  for (std::int64_t r = 2; r < 4; ++r)
    for (std::int64_t j = 3; j < n; ++j) values[r * n + j] = -inf;  // all -inf or NaN

  SECTION("rows (inner == 1)") {
    Pair x = pair_of(Tensor::from_data(values, {rows, n}));
    Pair out = poisoned_pair({rows});
    Pair argmax = poisoned_pair({rows}, DType::i64);
    cpu().max_axis(x.host, rows, n, 1, out.host, argmax.host);
    gpu().max_axis(x.device, rows, n, 1, out.device, argmax.device);
    require_identical(out.device, out.host);
    require_identical(argmax.device, argmax.host);
  }
  SECTION("columns (inner > 1)") {
    Pair x = pair_of(Tensor::from_data(values, {rows, n}));
    Pair xt = {Tensor::view_of(x.host, {n, rows}, {1, n}, 0).contiguous(),
               Tensor::view_of(x.device, {n, rows}, {1, n}, 0).contiguous()};  // (n, rows)
    Pair out = poisoned_pair({rows});
    Pair argmax = poisoned_pair({rows}, DType::i64);
    cpu().max_axis(xt.host, 1, n, rows, out.host, argmax.host);
    gpu().max_axis(xt.device, 1, n, rows, out.device, argmax.device);
    require_identical(out.device, out.host);
    require_identical(argmax.device, argmax.host);
  }
}

TEST_CASE("max_axis_backward routes each gradient to its argmax", "[cuda]") {
  Rng rng(23);
  for (const Axes& s : kAxes) {
    INFO("outer " << s.outer << " n " << s.n << " inner " << s.inner);
    Pair argmax = integer_pair({s.outer, s.inner}, rng, 0, s.n - 1, DType::i64);
    Pair grad_out = randn_pair({s.outer, s.inner}, rng);
    Pair grad_x = poisoned_pair({s.outer, s.n, s.inner});
    cpu().max_axis_backward(grad_out.host, argmax.host, s.outer, s.n, s.inner, grad_x.host);
    gpu().max_axis_backward(grad_out.device, argmax.device, s.outer, s.n, s.inner,
                            grad_x.device);
    require_identical(grad_x.device, grad_x.host);
  }
}

TEST_CASE("reductions give the same bits on every run", "[cuda]") {
  Rng rng(24);
  Pair x = randn_pair({33, 2000}, rng);
  Tensor first = Tensor::empty({33}, DType::f32, Device::cuda);
  Tensor second = Tensor::empty({33}, DType::f32, Device::cuda);
  gpu().sum_axis(x.device, 33, 2000, 1, first);
  gpu().sum_axis(x.device, 33, 2000, 1, second);
  require_identical(second, first);
}
