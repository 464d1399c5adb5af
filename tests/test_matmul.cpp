// matmul: values against a naive product, transposed views, batches, gradchecks.
#include <catch2/catch.hpp>

#include "autograd/ops/matmul.h"
#include "autograd/ops/shape.h"
#include "test_helpers.h"

using namespace relpos;
using testing::leaf;
using testing::require_gradcheck;

namespace {

std::vector<double> naive_matmul(const Tensor& a, const Tensor& b) {
  const auto va = a.to_vector(), vb = b.to_vector();
  const std::int64_t m = a.size(0), k = a.size(1), n = b.size(1);
  std::vector<double> c(static_cast<std::size_t>(m * n), 0.0);
  for (std::int64_t i = 0; i < m; ++i)
    for (std::int64_t j = 0; j < n; ++j)
      for (std::int64_t p = 0; p < k; ++p) c[i * n + j] += va[i * k + p] * vb[p * n + j];
  return c;
}

}  // namespace

TEST_CASE("matmul matches a naive product for every transpose combination", "[matmul]") {
  Rng rng(30);
  for (DType dtype : {DType::f32, DType::f64}) {
    Tensor a = randn({5, 7}, rng, dtype);
    Tensor b = randn({7, 3}, rng, dtype);
    const auto expected = naive_matmul(a, b);
    const double tol = dtype == DType::f32 ? 1e-5 : 1e-12;
    Tensor at = transpose(transpose(a, 0, 1).contiguous(), 0, 1);  // a transposed view
    Tensor bt = transpose(transpose(b, 0, 1).contiguous(), 0, 1);
    REQUIRE_FALSE(at.is_contiguous());
    testing::require_close(matmul(a, b).to_vector(), expected, tol);
    testing::require_close(matmul(at, b).to_vector(), expected, tol);
    testing::require_close(matmul(a, bt).to_vector(), expected, tol);
    testing::require_close(matmul(at, bt).to_vector(), expected, tol);
    testing::require_close(matmul(slice(a, 1, 0, 7), b).to_vector(), expected, tol);
  }
}

TEST_CASE("batched matmul and a shared 2-D operand", "[matmul]") {
  Rng rng(31);
  Tensor a = randn({2, 3, 4, 5}, rng, DType::f64);
  Tensor b = randn({2, 3, 5, 6}, rng, DType::f64);
  Tensor w = randn({5, 6}, rng, DType::f64);
  Tensor c = matmul(a, b);
  Tensor d = matmul(a, w);
  REQUIRE(c.shape() == Shape{2, 3, 4, 6});
  for (std::int64_t i = 0; i < 2; ++i)
    for (std::int64_t j = 0; j < 3; ++j) {
      Tensor ai = reshape(slice(slice(a, 0, i, i + 1), 1, j, j + 1), {4, 5});
      Tensor bi = reshape(slice(slice(b, 0, i, i + 1), 1, j, j + 1), {5, 6});
      Tensor ci = reshape(slice(slice(c, 0, i, i + 1), 1, j, j + 1), {4, 6});
      Tensor di = reshape(slice(slice(d, 0, i, i + 1), 1, j, j + 1), {4, 6});
      testing::require_close(ci.to_vector(), naive_matmul(ai, bi), 1e-12);
      testing::require_close(di.to_vector(), naive_matmul(ai, w), 1e-12);
    }
}

TEST_CASE("matmul errors name both shapes", "[matmul]") {
  Tensor a = Tensor::ones({3, 4});
  Tensor b = Tensor::ones({5, 2});
  REQUIRE_THROWS_WITH(matmul(a, b), Catch::Contains("[3, 4]") && Catch::Contains("[5, 2]") &&
                                        Catch::Contains("inner dimensions"));
  REQUIRE_THROWS_WITH(matmul(Tensor::ones({2, 3, 4}), Tensor::ones({3, 4, 2})),
                      Catch::Contains("batch shapes"));
  REQUIRE_THROWS_WITH(matmul(Tensor::ones({4}), Tensor::ones({4, 2})), Catch::Contains("rank"));
}

TEST_CASE("gradcheck: matmul 2-D, transposed views, batched, shared weight",
          "[matmul][gradcheck]") {
  Rng rng(32);
  Tensor a = leaf({3, 4}, rng), b = leaf({4, 5}, rng);
  Tensor at = testing::transposed_leaf({3, 4}, rng), bt = testing::transposed_leaf({4, 5}, rng);
  require_gradcheck([](const auto& in) { return matmul(in[0], in[1]); }, {a, b});
  require_gradcheck([](const auto& in) { return matmul(in[0], in[1]); }, {at, bt});
  require_gradcheck([](const auto& in) { return matmul(in[0], transpose(in[1], 0, 1)); },
                    {a, leaf({5, 4}, rng)});
  Tensor x = leaf({2, 3, 3, 4}, rng), y = leaf({2, 3, 4, 2}, rng), w = leaf({4, 2}, rng);
  require_gradcheck([](const auto& in) { return matmul(in[0], in[1]); }, {x, y});
  require_gradcheck([](const auto& in) { return matmul(in[0], in[1]); }, {x, w});
  require_gradcheck([](const auto& in) { return matmul(transpose(in[0], -1, -2), in[1]); },
                    {leaf({2, 4, 3}, rng), leaf({2, 4, 5}, rng)});
  require_gradcheck([](const auto& in) { return matmul(in[0], in[1]); },
                    {leaf({3, 4}, rng), leaf({2, 4, 2}, rng)});
}
