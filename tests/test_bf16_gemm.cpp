// train.precision=bf16 on the CPU (docs/bf16.md): linear and matmul, forward and
// backward, against f64 products of the same f32 values, within the bound that bf16
// rounding allows; proof that the operands are really rounded; the recorded precision
// reaching the backward; and the one-line errors of train.precision.
//
// The bound. bf16 keeps 8 significant bits, so rounding an f32 value a to nearest gives
// a' = a(1 + d) with |d| <= u = 2^-9. A product of two rounded operands,
//   a'b' = ab(1 + da)(1 + db),   |a'b' - ab| <= (2u + u^2)|ab|,
// is exact in f32 (8 + 8 significant bits fit in f32's 24). Summing K such products in
// f32 adds at most gamma_K = K 2^-24 / (1 - K 2^-24) times sum |a'b'|. So each entry c
// of a product of length K satisfies
//   |c_bf16 - c_exact| <= (2u + u^2 + gamma_K (1 + u)^2) sum_k |a_k||b_k|,
// which the tests check entry by entry with sum |a||b| computed in f64. Relative to the
// entry itself this is ~2 2^-9 sum|a||b| / |sum ab|: large where the sum cancels, which
// is why the bound is taken per entry and not as one relative tolerance.
#include <catch2/catch.hpp>
#include <cmath>
#include <string>
#include <vector>

#include "autograd/bf16_support.h"
#include "autograd/error.h"
#include "autograd/ops/linear.h"
#include "autograd/ops/matmul.h"
#include "autograd/ops/shape.h"
#include "autograd/precision.h"
#include "autograd/tape.h"
#include "test_helpers.h"
#include "train/config/config.h"
#include "train/train_precision.h"

using namespace relpos;

namespace {

constexpr double kUnitRoundoff = 0x1p-9;  // bf16: 8 significant bits, rounding to nearest

// Per-entry bound on |c_bf16 - c_exact| for a length-k product, per unit of sum |a||b|.
double bf16_product_bound(std::int64_t k) {
  const double u = kUnitRoundoff;
  const double gamma = static_cast<double>(k) * 0x1p-24 / (1.0 - static_cast<double>(k) * 0x1p-24);
  return 2 * u + u * u + gamma * (1 + u) * (1 + u);
}

// Entry i of the leading axis, without it.
Tensor entry(const Tensor& t, std::int64_t i) { return squeeze(slice(t.detach(), 0, i, i + 1), 0); }

std::vector<double> values(const Tensor& t) {
  const Tensor c = t.detach().to(DType::f64).contiguous();
  return {c.data<double>(), c.data<double>() + c.numel()};
}

// Row-major (m, k) @ (k, n) in f64, and sum_k |a||b| for each entry.
struct Reference {
  std::vector<double> product, magnitude;
};
Reference reference(const std::vector<double>& a, const std::vector<double>& b, std::int64_t m,
                    std::int64_t k, std::int64_t n) {
  Reference r{std::vector<double>(m * n), std::vector<double>(m * n)};
  for (std::int64_t i = 0; i < m; ++i)
    for (std::int64_t j = 0; j < n; ++j)
      for (std::int64_t p = 0; p < k; ++p) {
        r.product[i * n + j] += a[i * k + p] * b[p * n + j];
        r.magnitude[i * n + j] += std::abs(a[i * k + p] * b[p * n + j]);
      }
  return r;
}

void require_within_bf16_bound(const Tensor& actual, const Reference& ref, std::int64_t k) {
  const std::vector<double> got = values(actual);
  REQUIRE(got.size() == ref.product.size());
  const double bound = bf16_product_bound(k);
  for (std::size_t i = 0; i < got.size(); ++i) {
    INFO("entry " << i << ": " << got[i] << " vs exact " << ref.product[i]);
    REQUIRE(std::abs(got[i] - ref.product[i]) <= bound * ref.magnitude[i]);
  }
}

// The largest |actual - exact| over the entries, in units of the entry's sum |a||b|.
double largest_scaled_error(const Tensor& actual, const Reference& ref) {
  const std::vector<double> got = values(actual);
  double worst = 0;
  for (std::size_t i = 0; i < got.size(); ++i)
    worst = std::max(worst, std::abs(got[i] - ref.product[i]) / ref.magnitude[i]);
  return worst;
}

Tensor f32_leaf(const Shape& shape, Rng& rng) {
  Tensor t = randn(shape, rng, DType::f32);
  t.set_requires_grad(true);
  return t;
}

// (m, k) -> (k, m) as values.
std::vector<double> transposed(const std::vector<double>& a, std::int64_t m, std::int64_t k) {
  std::vector<double> t(a.size());
  for (std::int64_t i = 0; i < m; ++i)
    for (std::int64_t p = 0; p < k; ++p) t[p * m + i] = a[i * k + p];
  return t;
}

}  // namespace

TEST_CASE("bf16 linear: forward, dx and dW within the bf16 bound of f64", "[bf16]") {
  if (!testing::bf16_usable()) return;
  const std::int64_t rows = 37, in = 70, out = 23;  // odd sizes: no kernel's favourite tile
  Rng rng(11);
  Tensor x = f32_leaf({rows, in}, rng), w = f32_leaf({out, in}, rng);
  const Tensor gy = randn({rows, out}, rng, DType::f32);
  Tensor y;
  {
    const PrecisionScope bf16(Precision::bf16);
    y = linear(x, w, Tensor());
  }
  backward(y, gy);
  const std::vector<double> xv = values(x), wv = values(w), gv = values(gy);
  // y = x Wᵀ: (rows, in) @ (in, out)
  require_within_bf16_bound(y, reference(xv, transposed(wv, out, in), rows, in, out), in);
  // dx = gy W: (rows, out) @ (out, in)
  require_within_bf16_bound(x.grad(), reference(gv, wv, rows, out, in), out);
  // dW = gyᵀ x: (out, rows) @ (rows, in)
  require_within_bf16_bound(w.grad(), reference(transposed(gv, rows, out), xv, out, rows, in),
                            rows);
}

TEST_CASE("bf16 matmul: batched and transposed operands within the bf16 bound of f64", "[bf16]") {
  if (!testing::bf16_usable()) return;
  const std::int64_t batch = 3, m = 9, k = 33, n = 14;
  Rng rng(12);
  Tensor a = f32_leaf({batch, m, k}, rng);
  Tensor bt = f32_leaf({batch, n, k}, rng);  // used as its transpose: (batch, k, n)
  const Tensor g = randn({batch, m, n}, rng, DType::f32);
  Tensor c;
  {
    const PrecisionScope bf16(Precision::bf16);
    c = matmul(a, transpose(bt, -1, -2));
  }
  backward(c, g);
  for (std::int64_t i = 0; i < batch; ++i) {
    INFO("batch entry " << i);
    const std::vector<double> av = values(entry(a, i)), btv = values(entry(bt, i));
    const std::vector<double> gv = values(entry(g, i));
    require_within_bf16_bound(entry(c, i), reference(av, transposed(btv, n, k), m, k, n), k);
    // da = g b: (m, n) @ (n, k); d(bt) = gᵀ a: (n, m) @ (m, k)
    require_within_bf16_bound(entry(a.grad(), i), reference(gv, btv, m, n, k), n);
    require_within_bf16_bound(entry(bt.grad(), i), reference(transposed(gv, m, n), av, n, m, k), m);
  }
}

TEST_CASE("bf16 matmul: a batch times a shared matrix, and its folded dB", "[bf16]") {
  if (!testing::bf16_usable()) return;
  const std::int64_t batch = 2, m = 5, k = 40, n = 7;
  Rng rng(13);
  Tensor a = f32_leaf({batch, m, k}, rng), b = f32_leaf({k, n}, rng);
  const Tensor g = randn({batch, m, n}, rng, DType::f32);
  Tensor c;
  {
    const PrecisionScope bf16(Precision::bf16);
    c = matmul(a, b);
  }
  backward(c, g);
  const std::vector<double> av = values(a), bv = values(b), gv = values(g);
  require_within_bf16_bound(c, reference(av, bv, batch * m, k, n), k);
  // dB = Aᵀ G with the batch folded into the contraction: (k, batch m) @ (batch m, n)
  require_within_bf16_bound(b.grad(), reference(transposed(av, batch * m, k), gv, k, batch * m, n),
                            batch * m);
}

TEST_CASE("bf16 rounds the operands: 1 + 2^-10 becomes 1, where fp32 keeps it", "[bf16]") {
  if (!testing::bf16_usable()) return;
  // 1 + 2^-10 lies between the bf16 neighbours 1 and 1 + 2^-7, nearer 1.
  const Tensor a = Tensor::from_data(std::vector<float>{1.0f + 0x1p-10f}, {1, 1});
  const Tensor b = Tensor::from_data(std::vector<float>{1.0f}, {1, 1});
  REQUIRE(matmul(a, b).item() == 1.0 + 0x1p-10);
  const PrecisionScope bf16(Precision::bf16);
  REQUIRE(matmul(a, b).item() == 1.0);
  REQUIRE(linear(a, b, Tensor()).item() == 1.0);
}

TEST_CASE("bf16 products err by more than fp32's on random data, and within the bound", "[bf16]") {
  if (!testing::bf16_usable()) return;
  const std::int64_t m = 16, k = 64, n = 16;
  Rng rng(14);
  const Tensor a = randn({m, k}, rng, DType::f32), b = randn({k, n}, rng, DType::f32);
  const Reference ref = reference(values(a), values(b), m, k, n);
  const double fp32_error = largest_scaled_error(matmul(a, b), ref);
  const PrecisionScope bf16(Precision::bf16);
  const double bf16_error = largest_scaled_error(matmul(a, b), ref);
  INFO("fp32 " << fp32_error << ", bf16 " << bf16_error);
  REQUIRE(bf16_error > 16 * fp32_error);  // 2^-9 against 2^-24 per operand
  REQUIRE(bf16_error > 0x1p-12);          // a worst entry of many shows the rounding
  REQUIRE(bf16_error <= bf16_product_bound(k));
}

TEST_CASE("the backward uses the precision its op recorded, not the one in force", "[bf16]") {
  if (!testing::bf16_usable()) return;
  Rng rng(15);
  const Tensor x0 = randn({6, 30}, rng, DType::f32), w0 = randn({4, 30}, rng, DType::f32);
  const Tensor gy = randn({6, 4}, rng, DType::f32);
  const auto grads = [&](bool backward_in_scope) {
    Tensor x = x0.clone(), w = w0.clone();
    x.set_requires_grad(true);
    w.set_requires_grad(true);
    Tensor y;
    {
      const PrecisionScope bf16(Precision::bf16);
      y = linear(x, w, Tensor());
      if (backward_in_scope) backward(y, gy);
    }
    if (!backward_in_scope) backward(y, gy);
    return values(x.grad());
  };
  const std::vector<double> inside = grads(true), outside = grads(false);
  REQUIRE(inside == outside);
  Tensor x = x0.clone();
  x.set_requires_grad(true);
  backward(linear(x, w0, Tensor()), gy);  // fp32 throughout
  REQUIRE(values(x.grad()) != outside);
}

TEST_CASE("f64 products ignore the bf16 precision (gradchecks stay exact)", "[bf16]") {
  Rng rng(16);
  const Tensor a = randn({5, 8}, rng, DType::f64), b = randn({8, 3}, rng, DType::f64);
  const Tensor bt = transpose(b, 0, 1).contiguous();
  const std::vector<double> plain = values(matmul(a, b)), plain_linear = values(linear(a, bt, {}));
  const PrecisionScope bf16(Precision::bf16);
  REQUIRE(values(matmul(a, b)) == plain);
  REQUIRE(values(linear(a, bt, {})) == plain_linear);
}

TEST_CASE("train.precision: values, the CPU-only rule and the availability error", "[bf16]") {
  REQUIRE(train_precision("fp32", "cpu") == Precision::fp32);
  REQUIRE(train_precision("fp32", "cuda") == Precision::fp32);
  REQUIRE_THROWS_WITH(train_precision("fp16", "cpu"),
                      "train.precision must be fp32 or bf16, got 'fp16'");
  REQUIRE_THROWS_WITH(
      train_precision("bf16", "cuda"),
      "train.precision: bf16 runs on the CPU only (train.device=cpu), got train.device=cuda");
  const std::string why = bf16_unavailable_reason();
  if (why.empty()) {
    REQUIRE(train_precision("bf16", "cpu") == Precision::bf16);
  } else {
    REQUIRE_THROWS_WITH(train_precision("bf16", "cpu"), "train.precision: bf16 is not available: " +
                                                            why + "; use train.precision=fp32");
  }
  REQUIRE_THROWS_WITH(load_config({}, {"train.precision=fp16"}),
                      Catch::Contains("train.precision") && Catch::Contains("fp16"));
}
