// The tape: recording, no-grad, accumulation, freeing and in-place detection.
#include <catch2/catch.hpp>

#include "autograd/error.h"
#include "autograd/ops/elementwise.h"
#include "autograd/ops/matmul.h"
#include "autograd/ops/reduce.h"
#include "autograd/ops/shape.h"
#include "autograd/tape.h"
#include "test_helpers.h"

using namespace relpos;

TEST_CASE("backward accumulates into leaves used twice", "[tape]") {
  Tensor x = Tensor::from_data(std::vector<double>{1, 2, 3}, {3}, DType::f64);
  x.set_requires_grad(true);
  Tensor y = sum(mul(x, x) + x * 3.0);  // dy/dx = 2x + 3
  backward(y);
  REQUIRE(x.grad().to_vector() == std::vector<double>{5, 7, 9});
  REQUIRE(Tape::current().size() == 0);  // freed after backward
  backward(sum(x));                      // a second graph accumulates
  REQUIRE(x.grad().to_vector() == std::vector<double>{6, 8, 10});
}

TEST_CASE("gradients of a permuted view from two uses add up in its layout", "[tape]") {
  Rng rng(5);
  const Tensor a = testing::leaf(randn({2, 3, 4, 5}, rng, DType::f64));
  const Tensor w1 = randn({2, 3, 4, 5}, rng, DType::f64), w2 = randn({2, 3, 4, 5}, rng, DType::f64);
  const Tensor v = permute(a, {0, 2, 1, 3});  // (2, 4, 3, 5), a view
  // Each use permutes v back and weights it, so both gradients reaching v are the same
  // permutation of a fresh block: the tape adds the second into the first as flat blocks.
  const Tensor first = sum(mul(permute(v, {0, 2, 1, 3}), w1));
  backward(add(first, sum(mul(permute(v, {0, 2, 1, 3}), w2))));
  CHECK(a.grad().to_vector() == add(w1, w2).to_vector());
}

TEST_CASE("no node is recorded in a no-grad scope", "[tape]") {
  Tensor x = Tensor::ones({2}, DType::f64);
  x.set_requires_grad(true);
  const auto before = Tape::current().size();
  {
    NoGradGuard guard;
    Tensor y = exp(x);
    REQUIRE_FALSE(y.requires_grad());
  }
  REQUIRE(Tape::current().size() == before);
  REQUIRE(grad_enabled());
}

TEST_CASE("gradients reach only tensors that require them", "[tape]") {
  Tensor a = Tensor::ones({2}, DType::f64);
  Tensor b = Tensor::full({2}, 2.0, DType::f64);
  b.set_requires_grad(true);
  backward(sum(mul(a, b)));
  REQUIRE_FALSE(a.grad().defined());
  REQUIRE(b.grad().to_vector() == std::vector<double>{1, 1});
  Tensor c = mul(a, a);
  REQUIRE_FALSE(c.requires_grad());
}

TEST_CASE("backward needs a scalar or an explicit gradient of the right shape", "[tape]") {
  Tensor x = Tensor::ones({2, 3}, DType::f64);
  x.set_requires_grad(true);
  Tensor y = exp(x);
  REQUIRE_THROWS_WITH(backward(y), Catch::Contains("not a scalar") && Catch::Contains("[2, 3]"));
  REQUIRE_THROWS_WITH(backward(y, Tensor::ones({3, 2}, DType::f64)),
                      Catch::Contains("[3, 2]") && Catch::Contains("[2, 3]"));
  backward(y, Tensor::ones({2, 3}, DType::f64));
  REQUIRE(x.grad().to_vector()[0] == Approx(std::exp(1.0)));
}

TEST_CASE("modifying a saved tensor in place before backward is an error naming the op", "[tape]") {
  Tensor w = Tensor::ones({2, 2}, DType::f64);
  w.set_requires_grad(true);
  Tensor x = Tensor::ones({2, 2}, DType::f64);
  Tensor y = sum(matmul(x, w));
  x.fill_(3.0);  // matmul saved x for dW
  REQUIRE_THROWS_WITH(backward(y), Catch::Contains("matmul") && Catch::Contains("in place"));
  Tape::current().clear();
}

TEST_CASE("a graph freed by backward cannot be reused", "[tape]") {
  Tensor x = Tensor::ones({2}, DType::f64);
  x.set_requires_grad(true);
  Tensor h = exp(x);
  backward(sum(h));
  REQUIRE_THROWS_WITH(backward(sum(h)), Catch::Contains("already freed"));
  REQUIRE_THROWS_WITH(backward(h * 2.0, Tensor::ones({2}, DType::f64)),
                      Catch::Contains("already freed"));
  backward(sum(h.detach() * x));  // detach() makes it a constant again
  REQUIRE(x.grad().defined());
}

TEST_CASE("in-place writes to a tensor requiring grad need a no-grad scope", "[tape]") {
  Tensor w = Tensor::ones({2}, DType::f64);
  w.set_requires_grad(true);
  REQUIRE_THROWS_WITH(w.fill_(0.0), Catch::Contains("NoGradGuard"));
  NoGradGuard guard;
  w.fill_(0.0);
  REQUIRE(w.to_vector() == std::vector<double>{0, 0});
}
