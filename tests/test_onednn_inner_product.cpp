// A bf16 x·Wᵀ or dz·W (a linear layer's forward and dx) runs through oneDNN's inner product
// on a CPU with AMX (autograd/cpu/onednn_gemm.cpp): the same products as the matmul
// primitive it replaces, on shapes with and without tails, W stored either way, with beta 0
// and 1 (linear's bias-first product), entry by entry within what f32 summation order can
// change.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <utility>
#include <vector>

#include "autograd/cpu/bf16_round.h"
#include "autograd/cpu/cpu_features.h"
#include "autograd/cpu/onednn_gemm.h"
#include "test_helpers.h"

using namespace relpos;

namespace {

// Sets the inner-product switch for one scope and restores it.
class InnerProductSwitch {
 public:
  explicit InnerProductSwitch(bool on) : was_(cpu::onednn_inner_product_enabled()) {
    cpu::set_onednn_inner_product_enabled(on);
  }
  ~InnerProductSwitch() { cpu::set_onednn_inner_product_enabled(was_); }
  InnerProductSwitch(const InnerProductSwitch&) = delete;
  InnerProductSwitch& operator=(const InnerProductSwitch&) = delete;

 private:
  bool was_;
};

// Deterministic values in [-1, 1) with many significant bits, so that rounding them to
// bf16 matters.
std::vector<float> values(std::int64_t n, std::uint32_t seed) {
  std::vector<float> v(static_cast<std::size_t>(n));
  for (float& x : v) {
    seed = seed * 1664525u + 1013904223u;
    x = static_cast<float>(seed >> 8) * 0x1p-23f - 1.f;
  }
  return v;
}

// C (m, n) = A (m, k) · Wᵀ + beta·C in bf16 products, W (n, k) stored as it is (x·Wᵀ) or
// transposed, (k, n) (dz·W).
GemmArgs x_wt(const std::vector<float>& a, const std::vector<float>& w, std::vector<float>& c,
              std::int64_t m, std::int64_t n, std::int64_t k, double beta,
              bool w_transposed = false) {
  GemmArgs g;
  g.precision = Precision::bf16;
  g.m = m, g.n = n, g.k = k;
  g.trans_b = !w_transposed;
  g.beta = beta;
  g.a = a.data(), g.lda = k;
  g.b = w.data(), g.ldb = w_transposed ? n : k;
  g.c = c.data(), g.ldc = n;
  return g;
}

}  // namespace

TEST_CASE("onednn: bf16 x·Wᵀ and dz·W through the inner product equal the matmul primitive's",
          "[onednn][bf16]") {
  if (!testing::bf16_usable()) return;
  if (!cpu::has_amx_bf16()) {
    WARN("SKIPPED: this CPU has no AMX, where x·Wᵀ stays on the matmul primitive");
    return;
  }
  struct Shape {
    std::int64_t m, n, k;
  };
  // Full AMX tiles, and tails in every dimension (the inner product blocks W by 16 and 64).
  for (const Shape s : {Shape{256, 128, 64}, Shape{67, 45, 37}, Shape{300, 96, 1024}}) {
    for (const auto& [beta, w_transposed] :
         {std::pair{0.0, false}, std::pair{1.0, false}, std::pair{0.0, true}}) {
      INFO("m " << s.m << ", n " << s.n << ", k " << s.k << ", beta " << beta << ", W stored "
                << (w_transposed ? "(k, n)" : "(n, k)"));
      // W (n, k) or, transposed, (k, n): w_at(j, p) is W's (j, p) either way.
      const std::vector<float> a = values(s.m * s.k, 1), w = values(s.n * s.k, 2);
      const auto w_at = [&, transposed = w_transposed](std::int64_t j, std::int64_t p) {
        return w[static_cast<std::size_t>(transposed ? p * s.n + j : j * s.k + p)];
      };
      const std::vector<float> c0 = values(s.m * s.n, 3);  // C's values before the product
      std::vector<float> via_matmul = c0, via_inner_product = c0;
      {
        const InnerProductSwitch off(false);
        const GemmArgs g = x_wt(a, w, via_matmul, s.m, s.n, s.k, beta, w_transposed);
        REQUIRE_FALSE(cpu::onednn_gemm_uses_inner_product(g));
        cpu::onednn_gemm(g);
      }
      {
        const InnerProductSwitch on(true);
        const GemmArgs g = x_wt(a, w, via_inner_product, s.m, s.n, s.k, beta, w_transposed);
        REQUIRE(cpu::onednn_gemm_uses_inner_product(g));
        cpu::onednn_gemm(g);
      }
      // Both sum the same exact products of bf16 values in f32, in their own order: each
      // entry's two sums differ by at most 2 gamma_K sum |a'w'| (plus beta·|c0| once).
      const double gamma = static_cast<double>(s.k + 1) * 0x1p-24;
      for (std::int64_t i = 0; i < s.m; ++i)
        for (std::int64_t j = 0; j < s.n; ++j) {
          double magnitude = beta * std::abs(c0[i * s.n + j]);
          for (std::int64_t p = 0; p < s.k; ++p)
            magnitude += std::abs(cpu::from_bf16(cpu::to_bf16(a[i * s.k + p])) *
                                  cpu::from_bf16(cpu::to_bf16(w_at(j, p))));
          const auto at = static_cast<std::size_t>(i * s.n + j);
          INFO("entry (" << i << ", " << j << "): " << via_inner_product[at] << " vs "
                         << via_matmul[at]);
          REQUIRE(std::abs(via_inner_product[at] - via_matmul[at]) <= 2 * gamma * magnitude);
        }
    }
  }
}

TEST_CASE("onednn: only dense bf16 products with A not transposed go to the inner product",
          "[onednn][bf16]") {
  if (!cpu::has_amx_bf16() || !cpu::onednn_built()) {
    WARN("SKIPPED: this CPU has no AMX or this build no oneDNN");
    return;
  }
  const std::vector<float> a = values(8 * 4, 1), w = values(6 * 4, 2);
  std::vector<float> c(8 * 6);
  const GemmArgs g = x_wt(a, w, c, 8, 6, 4, 0.0);
  REQUIRE(cpu::onednn_gemm_uses_inner_product(g));
  GemmArgs fp32 = g;
  fp32.precision = Precision::fp32;
  REQUIRE_FALSE(cpu::onednn_gemm_uses_inner_product(fp32));  // fp32 stays bit for bit
  GemmArgs dz_w = g;                                         // dz·W: B not transposed
  dz_w.trans_b = false, dz_w.ldb = 6;
  REQUIRE(cpu::onednn_gemm_uses_inner_product(dz_w));
  GemmArgs dw = g;  // dW = dzᵀ·x: A transposed
  dw.trans_a = true, dw.lda = 8;
  REQUIRE_FALSE(cpu::onednn_gemm_uses_inner_product(dw));
  GemmArgs strided = g;  // A's rows further apart than k
  strided.lda = 5;
  REQUIRE_FALSE(cpu::onednn_gemm_uses_inner_product(strided));
  GemmArgs scaled = g;
  scaled.alpha = 2;
  REQUIRE_FALSE(cpu::onednn_gemm_uses_inner_product(scaled));
  GemmArgs batched = g;
  batched.batch = 2;
  REQUIRE_FALSE(cpu::onednn_gemm_uses_inner_product(batched));
}
