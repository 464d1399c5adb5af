// The tiled attention's bf16 products on AMX tiles (autograd/cpu/amx_tile_product.*,
// chosen in autograd/cpu/bf16_gemm_rows.cpp) against the vdpbf16ps products they replace
// (cpu::AmxTilesSwitchedOff) and an f64 reference. Both multiply the same operands rounded
// to bf16 the same way; the products are exact in f32, so the two may differ only by the
// order of their f32 sums. Every case reports itself skipped where AMX does not run: a
// CPU without AMX-BF16, a kernel that refuses the tile state, or RELPOS_ATTENTION_AMX=0.
#include <algorithm>
#include <array>
#include <catch2/catch.hpp>
#include <cmath>
#include <vector>

#include "attention_harness.h"
#include "autograd/cpu/bf16_gemm_rows.h"
#include "autograd/cpu/bf16_round.h"
#include "autograd/precision.h"
#include "autograd/threads.h"
#include "test_helpers.h"

using namespace relpos;
using testing::EveryTermCase;
using testing::f32_bits;
using testing::relative_error;

namespace {

bool amx_runs() {
  if (cpu::bf16_products_on_amx()) return true;
  WARN(
      "SKIPPED: the bf16 attention products do not run on AMX here (no AMX-BF16 or "
      "AVX512-BF16, no tile state from the kernel, or RELPOS_ATTENTION_AMX=0)");
  return false;
}

double bf16_value(float x) { return cpu::from_bf16(cpu::to_bf16(x)); }  // as the packing rounds

// An (rows, cols) f32 matrix with row stride cols + 3, as a vector.
std::vector<float> random_matrix(std::int64_t rows, std::int64_t cols, Rng& rng) {
  const Tensor t = randn({rows, cols + 3}, rng);
  return {t.data<float>(), t.data<float>() + t.numel()};
}

struct Product {
  bool trans_a, trans_b;
  std::int64_t m, n, k;
  float alpha, beta;
};

// Checks C from AMX and from vdpbf16ps against the f64 sum of the rounded operands' exact
// products: each within an f32 summation bound of it (k terms, each sum off by at most
// 2^-24 of the running sum of absolute terms), the columns past n untouched.
void check_product(const Product& p, const std::vector<float>& a, std::int64_t lda,
                   const std::vector<float>& b, std::int64_t ldb, const std::vector<float>& c0,
                   const std::vector<float>& amx, const std::vector<float>& avx) {
  const std::int64_t ldc = p.n + 3;
  for (std::int64_t i = 0; i < p.m; ++i)
    for (std::int64_t j = 0; j < ldc; ++j) {
      const std::size_t e = static_cast<std::size_t>(i * ldc + j);
      if (j >= p.n) {
        REQUIRE(amx[e] == c0[e]);
        continue;
      }
      double sum = 0, magnitude = 0;
      for (std::int64_t l = 0; l < p.k; ++l) {
        const float x = p.trans_a ? a[l * lda + i] : a[i * lda + l];
        const float y = p.trans_b ? b[j * ldb + l] : b[l * ldb + j];
        const double t = bf16_value(x) * bf16_value(y);
        sum += t;
        magnitude += std::abs(t);
      }
      const double want = p.alpha * sum + p.beta * c0[e];
      const double bound =
          (p.k + 2) * std::ldexp(1.0, -24) * (p.alpha * magnitude + std::abs(p.beta * c0[e]));
      INFO("C(" << i << ", " << j << ") = " << want << ", bound " << bound);
      REQUIRE(std::abs(amx[e] - want) <= bound);
      REQUIRE(std::abs(avx[e] - want) <= bound);
    }
}

}  // namespace

TEST_CASE("bf16 products on AMX tiles match vdpbf16ps and the f64 sum, odd sizes",
          "[attention][flash][bf16][amx]") {
  if (!amx_runs()) return;
  Rng rng(91);
  // Partial 16-row and 16-column tiles, one and two of each per 32 × 32 block, an odd k
  // (a half pair), k over one tile's 32 (several tiles of k, the last partial).
  const std::vector<std::array<std::int64_t, 3>> sizes = {
      {37, 45, 19}, {5, 3, 1}, {16, 16, 32}, {70, 53, 75}, {33, 130, 64}};
  for (const auto& size : sizes)
    for (bool trans_a : {false, true})
      for (bool trans_b : {false, true})
        for (float beta : {0.0f, 1.0f}) {
          const Product p{trans_a, trans_b, size[0], size[1], size[2], 0.5f, beta};
          INFO("m=" << p.m << " n=" << p.n << " k=" << p.k << " trans_a=" << trans_a
                    << " trans_b=" << trans_b << " beta=" << beta);
          const std::int64_t a_rows = trans_a ? p.k : p.m, a_cols = trans_a ? p.m : p.k;
          const std::int64_t b_rows = trans_b ? p.n : p.k, b_cols = trans_b ? p.k : p.n;
          const auto a = random_matrix(a_rows, a_cols, rng);
          const auto b = random_matrix(b_rows, b_cols, rng);
          const auto c0 = random_matrix(p.m, p.n, rng);
          auto amx = c0, avx = c0;
          cpu::bf16_begin_kernel_call();  // b is new: forget packings at its address
          cpu::bf16_gemm_rows(trans_a, trans_b, p.m, p.n, p.k, p.alpha, a.data(), a_cols + 3,
                              b.data(), b_cols + 3, beta, amx.data(), p.n + 3);
          {
            cpu::AmxTilesSwitchedOff off;
            REQUIRE_FALSE(cpu::bf16_products_on_amx());
            REQUIRE(cpu::bf16_products_native());
            cpu::bf16_gemm_rows(trans_a, trans_b, p.m, p.n, p.k, p.alpha, a.data(), a_cols + 3,
                                b.data(), b_cols + 3, beta, avx.data(), p.n + 3);
          }
          check_product(p, a, a_cols + 3, b, b_cols + 3, c0, amx, avx);
        }
}

TEST_CASE("bf16 products on AMX tiles against a window of a larger operand",
          "[attention][flash][bf16][amx]") {
  // Transformer-XL's position products: a window of W_r R's packing, at odd and even first
  // rows, near the end of the whole (the tiles then read the packing's zero padding).
  if (!amx_runs()) return;
  Rng rng(92);
  const std::int64_t whole_rows = 83, m = 37;
  for (bool trans_a : {false, true})
    for (bool trans_b : {false, true})
      for (std::int64_t first : {0, 1, 18, 40}) {
        const std::int64_t window = whole_rows - first - (first % 3);
        const std::int64_t n = trans_b ? window : 21, k = trans_b ? 21 : window;
        const Product p{trans_a, trans_b, m, n, k, 0.25f, 1.0f};
        INFO("trans_a=" << trans_a << " trans_b=" << trans_b << " first=" << first);
        const std::int64_t a_rows = trans_a ? k : m, a_cols = trans_a ? m : k;
        const std::int64_t whole_cols = trans_b ? k : n, ldb = whole_cols + 3;
        const auto a = random_matrix(a_rows, a_cols, rng);
        const auto whole = random_matrix(whole_rows, whole_cols, rng);
        const auto c0 = random_matrix(m, n, rng);
        auto amx = c0, avx = c0;
        cpu::bf16_begin_kernel_call();
        cpu::bf16_gemm_rows_window(trans_a, trans_b, m, n, k, p.alpha, a.data(), a_cols + 3,
                                   whole.data(), ldb, whole_rows, first, p.beta, amx.data(), n + 3);
        {
          cpu::AmxTilesSwitchedOff off;
          cpu::bf16_gemm_rows_window(trans_a, trans_b, m, n, k, p.alpha, a.data(), a_cols + 3,
                                     whole.data(), ldb, whole_rows, first, p.beta, avx.data(),
                                     n + 3);
        }
        const std::vector<float> window_b(whole.begin() + first * ldb, whole.end());
        check_product(p, a, a_cols + 3, window_b, ldb, c0, amx, avx);
      }
}

TEST_CASE("bf16 flash attention on AMX tiles matches vdpbf16ps, every term, forward and backward",
          "[attention][flash][bf16][amx]") {
  // Every term of the kernel at once (none's content products, T5/ALiBi's bias, Shaw's
  // keys and value bins, XL's position products when causal; RoPE rotates q and k before
  // the kernel), with the default tiles and with tiles of 7 queries by 13 keys (blocks
  // that start at odd keys and end mid-pair).
  if (!amx_runs()) return;
  for (bool causal : {true, false})
    for (auto [query_tile, key_tile] : {std::pair<std::int64_t, std::int64_t>{0, 0}, {7, 13}}) {
      EveryTermCase c{.dim = 18, .k_len = 201, .causal = causal, .seed = 93};
      c.query_tile = query_tile;
      c.key_tile = key_tile;
      INFO(testing::describe(c));
      const auto amx = testing::every_term_results(c, DType::f32, Precision::bf16);
      const auto fp32 = testing::every_term_results(c, DType::f32, Precision::fp32);
      std::vector<Tensor> avx;
      {
        cpu::AmxTilesSwitchedOff off;
        avx = testing::every_term_results(c, DType::f32, Precision::bf16);
      }
      for (std::size_t i = 0; i < amx.size(); ++i) {
        REQUIRE(amx[i].defined());
        const double apart = relative_error(amx[i], avx[i]);
        const double bf16_vs_fp32 = relative_error(amx[i], fp32[i]);
        INFO(testing::result_name(i)
             << ": AMX vs vdpbf16ps " << apart << ", AMX vs fp32 " << bf16_vs_fp32);
        // Still bf16 (far from fp32, measured >= 2.7e-3), and the same rounded products in
        // another order. An intermediate that is rounded to bf16 (p, ds) moves by u = 2^-8
        // of itself where a last-bit difference of its f32 sum flips the rounding: measured
        // 1.2e-4 (output), <= 2.9e-5 (gradients). The vdpbf16ps kernel itself moves by up to
        // 2.3e-3 when only its tiles change (7 × 13 against the default).
        CHECK(bf16_vs_fp32 > 1e-3);
        CHECK(apart <= 1e-3);
      }
    }
}

TEST_CASE("bf16 flash attention on AMX tiles is bit-identical with 1 and 2 threads",
          "[attention][flash][bf16][amx]") {
  if (!amx_runs()) return;
  for (bool causal : {true, false}) {
    const EveryTermCase c{.dim = 64, .q_len = 100, .k_len = 230, .causal = causal, .seed = 94};
    const int threads = num_threads();
    set_num_threads(1);
    const auto one = testing::every_term_results(c, DType::f32, Precision::bf16);
    set_num_threads(2);
    const auto two = testing::every_term_results(c, DType::f32, Precision::bf16);
    set_num_threads(threads);
    for (std::size_t i = 0; i < one.size(); ++i) {
      INFO(testing::describe(c) << " " << testing::result_name(i));
      CHECK(f32_bits(one[i]) == f32_bits(two[i]));
    }
  }
}

TEST_CASE("bf16 flash attention on vdpbf16ps (AMX switched off) matches fp64, every scheme",
          "[attention][flash][bf16][amx][slow]") {
  // test_flash_bf16.cpp's sweep runs on AMX where it runs; this one keeps the vdpbf16ps
  // path of a CPU without AMX checked against the fp64 composed reference here too.
  if (!amx_runs()) return;
  cpu::AmxTilesSwitchedOff off;
  testing::AttentionSweep sweep;
  sweep.seed = 95;
  sweep.head_dim = 18;
  sweep.options = {{.causal = true}, {.causal = false}};
  sweep.lengths = {{150, 150}, {70, 181}};
  sweep.paths = {testing::flash_bf16_path()};
  testing::check_against_composed(sweep);
}
