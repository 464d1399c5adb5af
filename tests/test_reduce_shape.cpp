// Reductions and shape ops: values and gradchecks.
#include <catch2/catch.hpp>

#include "autograd/ops/elementwise.h"
#include "autograd/ops/reduce.h"
#include "autograd/ops/shape.h"
#include "autograd/tape.h"
#include "test_helpers.h"

using namespace relpos;
using testing::leaf;
using testing::require_gradcheck;

TEST_CASE("sum, mean and max over axes with keepdim", "[reduce]") {
  Tensor x = Tensor::from_data(std::vector<double>{1, 5, 3, 4, 2, 6}, {2, 3}, DType::f64);
  REQUIRE(sum(x).item() == 21);
  REQUIRE(sum(x, {0}).to_vector() == std::vector<double>{5, 7, 9});
  REQUIRE(sum(x, {1}, true).shape() == Shape{2, 1});
  REQUIRE(sum(x, {-1}).to_vector() == std::vector<double>{9, 12});
  REQUIRE(mean(x, {0, 1}).item() == 3.5);
  REQUIRE(max(x, 1).to_vector() == std::vector<double>{5, 6});
  REQUIRE(max(x, 0, true).to_vector() == std::vector<double>{4, 5, 6});
  REQUIRE_THROWS_WITH(sum(x, {2}), Catch::Contains("axis 2 out of range"));
}

TEST_CASE("gradcheck: reductions over several axes and non-contiguous inputs",
          "[reduce][gradcheck]") {
  Rng rng(20);
  Tensor x = leaf({2, 3, 4}, rng);
  Tensor t = testing::transposed_leaf({3, 5}, rng);
  require_gradcheck([](const auto& in) { return sum(in[0], {0, 2}); }, {x});
  require_gradcheck([](const auto& in) { return sum(in[0], {1}, true); }, {x});
  require_gradcheck([](const auto& in) { return mean(in[0], {2}); }, {x});
  require_gradcheck([](const auto& in) { return mean(in[0]); }, {t});
  require_gradcheck([](const auto& in) { return max(in[0], 1); }, {x});
  require_gradcheck([](const auto& in) { return max(in[0], 0, true); }, {t});
}

TEST_CASE("max sends the gradient to the first maximum on ties", "[reduce]") {
  Tensor x = Tensor::from_data(std::vector<double>{1, 3, 3, 0}, {4}, DType::f64);
  x.set_requires_grad(true);
  backward(max(x, 0));
  REQUIRE(x.grad().to_vector() == std::vector<double>{0, 1, 0, 0});
}

TEST_CASE("shape ops: values", "[shape]") {
  Tensor x = Tensor::from_data(std::vector<double>{0, 1, 2, 3, 4, 5}, {2, 3}, DType::f64);
  REQUIRE(permute(reshape(x, {1, 2, 3}), {2, 0, 1}).shape() == Shape{3, 1, 2});
  Tensor c = concat({x, slice(x, 0, 1, 2)}, 0);
  REQUIRE(c.to_vector() == std::vector<double>{0, 1, 2, 3, 4, 5, 3, 4, 5});
  REQUIRE(concat({x, x}, 1).shape() == Shape{2, 6});
  REQUIRE(unsqueeze(x, 1).shape() == Shape{2, 1, 3});
  REQUIRE(squeeze(unsqueeze(x, -1), -1).shape() == Shape{2, 3});
  REQUIRE_THROWS_WITH(reshape(x, {4, 2}), Catch::Contains("[2, 3]") && Catch::Contains("[4, 2]"));
  REQUIRE_THROWS_WITH(concat({x, Tensor::ones({3, 3}, DType::f64)}, 1),
                      Catch::Contains("[2, 3]") && Catch::Contains("[3, 3]"));
  REQUIRE_THROWS_WITH(expand(x, {2, 4}), Catch::Contains("[2, 4]"));
  REQUIRE_THROWS_WITH(permute(x, {0, 0}), Catch::Contains("repeated"));
}

TEST_CASE("gradcheck: shape ops", "[shape][gradcheck]") {
  Rng rng(21);
  Tensor x = leaf({2, 3, 4}, rng);
  Tensor y = leaf({2, 2, 4}, rng);
  Tensor r = leaf({3, 1}, rng);
  Tensor t = testing::transposed_leaf({4, 3}, rng);
  require_gradcheck([](const auto& in) { return reshape(in[0], {4, -1}); }, {x});
  require_gradcheck([](const auto& in) { return reshape(in[0], {12}); }, {t});
  require_gradcheck([](const auto& in) { return permute(in[0], {2, 0, 1}); }, {x});
  require_gradcheck([](const auto& in) { return transpose(in[0], 0, 2); }, {x});
  require_gradcheck([](const auto& in) { return slice(in[0], 1, 1, 3); }, {x});
  require_gradcheck([](const auto& in) { return slice(in[0], 2, 0, 4, 3); }, {x});
  require_gradcheck([](const auto& in) { return concat({in[0], in[1]}, 1); }, {x, y});
  require_gradcheck([](const auto& in) { return expand(in[0], {2, 3, 5}); }, {r});
  require_gradcheck(
      [](const auto& in) {
        return mul(expand(in[0], {3, 4}), transpose(in[1], 0, 1));
      },
      {r, t});
  require_gradcheck([](const auto& in) { return squeeze(unsqueeze(in[0], 0), 0); }, {t});
}

TEST_CASE("max propagates NaN like PyTorch", "[reduce]") {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  Tensor x = Tensor::from_data(std::vector<double>{1, nan, 3, 5, 2, 4}, {2, 3}, DType::f64);
  const auto m = max(x, 1).to_vector();
  REQUIRE(std::isnan(m[0]));
  REQUIRE(m[1] == 5);
}
