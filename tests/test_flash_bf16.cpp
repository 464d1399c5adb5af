// The tiled attention in bf16 (Precision::bf16; autograd/cpu/bf16_gemm_rows.*), cases over
// tests/attention_harness.h: its products against the software rounding path, every
// scheme against the fp64 composed reference,
// determinism of the table gradients, that bf16 is really used, and the fallback
// without AVX512-BF16. Where AMX runs, the kernel's products run on AMX tiles except where a
// case names vdpbf16ps (cpu::AmxTilesSwitchedOff); tests/test_flash_amx.cpp compares the two.
//
// Tolerance. bfloat16 keeps 8 significant bits, so rounding to nearest has relative
// error at most u = 2^-8 ≈ 3.9e-3, and a product of two rounded operands (exact in f32)
// is off by at most 2u. Each bf16 product adds up to 2u of its sum of absolute terms:
// the output passes q·kᵀ (into p) and p·v; a gradient passes the recomputed q·kᵀ,
// dO·vᵀ (into dp), then pᵀ·dO, dsᵀ·q or ds·k, and a scheme table's gradient sums ds
// (built from both p and dp) through the scheme's own f32 ops. Four such steps give
// 4 · 2u = 8u ≈ 3.1e-2 of the reference's largest entry, the bound for every tensor.
// Measured: output 1.2e-2, q/k/v gradients 1.1e-2, table gradients 2.3e-2 (the T5 table,
// causal, Lq=70, Lk=181); the fp32 kernel is within 5.1e-6 on the same cases. XL's
// position products are bf16 too: its output 9.0e-3 (3.7e-3 with them in f32); its v
// gradient has a conditioning factor (tests/attention_harness.cpp).
#include <algorithm>
#include <bit>
#include <catch2/catch.hpp>
#include <cmath>
#include <string>

#include "attention_harness.h"
#include "autograd/cpu/bf16_gemm_rows.h"
#include "autograd/cpu/cpu_features.h"
#include "autograd/precision.h"
#include "autograd/threads.h"
#include "test_helpers.h"

using namespace relpos;
using testing::EveryTermCase;
using testing::f32_bits;
using testing::relative_error;

namespace {

// The flash op with every term (T5/ALiBi bias, Shaw keys and value bins, XL when causal):
// B=2, H=2, D=18, Lq=90 of Lk=201, k=20.
EveryTermCase every_term(bool causal) {
  return {.dim = 18, .k_len = 201, .causal = causal, .seed = 81};
}

// An (rows, cols) f32 matrix with row stride cols + 3, as a vector.
std::vector<float> random_matrix(std::int64_t rows, std::int64_t cols, Rng& rng) {
  const Tensor t = randn({rows, cols + 3}, rng);
  return {t.data<float>(), t.data<float>() + t.numel()};
}

}  // namespace

TEST_CASE("bf16 products on vdpbf16ps equal the software rounding to f32 summation order",
          "[attention][flash][bf16]") {
  if (!cpu::has_avx512_bf16()) {
    WARN("SKIPPED: this CPU lacks AVX512-BF16, so there is no vdpbf16ps path to compare");
    return;
  }
  cpu::AmxTilesSwitchedOff vdpbf16ps;  // AMX against both: tests/test_flash_amx.cpp
  Rng rng(80);
  // Odd sizes: partial 16-lane vectors, partial 6-row micro-tiles, an odd k (a half pair).
  const std::int64_t m = 37, n = 45, k = 19;
  for (bool trans_a : {false, true}) {
    for (bool trans_b : {false, true}) {
      for (float beta : {0.0f, 1.0f}) {
        INFO("trans_a=" << trans_a << " trans_b=" << trans_b << " beta=" << beta);
        const std::int64_t a_rows = trans_a ? k : m, a_cols = trans_a ? m : k;
        const std::int64_t b_rows = trans_b ? n : k, b_cols = trans_b ? k : n;
        const auto a = random_matrix(a_rows, a_cols, rng), b = random_matrix(b_rows, b_cols, rng);
        const auto c0 = random_matrix(m, n, rng);
        auto native = c0, software = c0;
        cpu::bf16_begin_kernel_call();  // b is new: forget packings of earlier b at its address
        cpu::bf16_gemm_rows(trans_a, trans_b, m, n, k, 0.5f, a.data(), a_cols + 3, b.data(),
                            b_cols + 3, beta, native.data(), n + 3);
        {
          cpu::Bf16InstructionsSwitchedOff off;
          REQUIRE_FALSE(cpu::bf16_products_native());
          cpu::bf16_gemm_rows(trans_a, trans_b, m, n, k, 0.5f, a.data(), a_cols + 3, b.data(),
                              b_cols + 3, beta, software.data(), n + 3);
        }
        // The products are exact in f32; only the order of the sums differs.
        double worst = 0;
        for (std::int64_t i = 0; i < m; ++i)
          for (std::int64_t j = 0; j < n + 3; ++j) {
            const std::size_t e = static_cast<std::size_t>(i * (n + 3) + j);
            if (j >= n) {
              REQUIRE(native[e] == c0[e]);  // the padding columns stay untouched
              continue;
            }
            worst = std::max(worst, static_cast<double>(std::abs(native[e] - software[e])));
          }
        CHECK(worst <= 1e-5);
      }
    }
  }
}

TEST_CASE("bf16 products against a window of a larger operand equal the plain products",
          "[attention][flash][bf16]") {
  // Transformer-XL's position products read each block's window of W_r R from one packing
  // of the whole per call (cpu::bf16_gemm_rows_window). A window of columns (trans_b)
  // reads the words a packing of the window alone would hold: the same bits. A window of
  // rows that starts at an odd row pairs the sums differently (a zero column before A's
  // first): the same exact products, summed in another order.
  if (!cpu::has_avx512_bf16()) {
    WARN("SKIPPED: this CPU lacks AVX512-BF16, so there is no vdpbf16ps path to compare");
    return;
  }
  Rng rng(85);
  const std::int64_t whole_rows = 41, m = 13, window = 23, other = 19;  // other: k or n, odd
  for (bool trans_a : {false, true}) {
    for (bool trans_b : {false, true}) {
      for (std::int64_t first : {0, 1, 2, 7, 18}) {
        for (float beta : {0.0f, 1.0f}) {
          INFO("trans_a=" << trans_a << " trans_b=" << trans_b << " first=" << first
                          << " beta=" << beta);
          // trans_b: B (n, k) = rows [first, first + n) of whole (whole_rows, k);
          // otherwise B (k, n) = rows [first, first + k) of whole (whole_rows, n).
          const std::int64_t n = trans_b ? window : other, k = trans_b ? other : window;
          const std::int64_t a_rows = trans_a ? k : m, a_cols = trans_a ? m : k;
          const std::int64_t whole_cols = trans_b ? k : n, ldb = whole_cols + 3;
          const auto a = random_matrix(a_rows, a_cols, rng);
          const auto whole = random_matrix(whole_rows, whole_cols, rng);
          const auto c0 = random_matrix(m, n, rng);
          auto windowed = c0, plain = c0, software = c0;
          cpu::bf16_begin_kernel_call();  // a new whole: forget packings at its address
          cpu::bf16_gemm_rows_window(trans_a, trans_b, m, n, k, 0.5f, a.data(), a_cols + 3,
                                     whole.data(), ldb, whole_rows, first, beta, windowed.data(),
                                     n + 3);
          cpu::bf16_begin_kernel_call();  // the plain product packs the window by itself
          cpu::bf16_gemm_rows(trans_a, trans_b, m, n, k, 0.5f, a.data(), a_cols + 3,
                              whole.data() + first * ldb, ldb, beta, plain.data(), n + 3);
          {
            cpu::Bf16InstructionsSwitchedOff off;
            cpu::bf16_gemm_rows_window(trans_a, trans_b, m, n, k, 0.5f, a.data(), a_cols + 3,
                                       whole.data(), ldb, whole_rows, first, beta, software.data(),
                                       n + 3);
          }
          const bool same_pairs = trans_b || first % 2 == 0;
          double worst_plain = 0, worst_software = 0;
          for (std::int64_t i = 0; i < m; ++i)
            for (std::int64_t j = 0; j < n + 3; ++j) {
              const std::size_t e = static_cast<std::size_t>(i * (n + 3) + j);
              if (j >= n) {
                REQUIRE(windowed[e] == c0[e]);  // the padding columns stay untouched
                continue;
              }
              if (same_pairs)
                REQUIRE(std::bit_cast<std::uint32_t>(windowed[e]) ==
                        std::bit_cast<std::uint32_t>(plain[e]));
              worst_plain = std::max(worst_plain, double(std::abs(windowed[e] - plain[e])));
              worst_software =
                  std::max(worst_software, double(std::abs(windowed[e] - software[e])));
            }
          CHECK(worst_plain <= 1e-5);
          CHECK(worst_software <= 1e-5);
        }
      }
    }
  }
}

TEST_CASE("bf16 flash attention matches the fp64 composed reference, every scheme",
          "[attention][flash][bf16][slow]") {
  // (Shaw's terms outside the kernel are bf16 products too.)
  testing::AttentionSweep sweep;
  sweep.seed = 82;
  sweep.head_dim = 18;
  sweep.options = {{.causal = true}, {.causal = false}};
  // 150 queries: four full query tiles and a partial one; 181 keys: an odd count.
  sweep.lengths = {{150, 150}, {70, 181}};
  sweep.paths = {// bf16 is really used: the output is off by far more than f32 rounding (the fp32
                 // kernel is within 1e-5, tests/test_flash_attention.cpp).
                 testing::flash_bf16_path(),
                 // f64 inputs compute in f64 under Precision::bf16 too.
                 {AttentionPath::flash, DType::f64, Precision::bf16, 1e-12, 1e-12, 0}};
  testing::check_against_composed(sweep);
}

TEST_CASE("bf16 flash attention is bit-identical between runs and with 1 and 2 threads",
          "[attention][flash][bf16]") {
  for (bool causal : {true, false}) {
    const EveryTermCase c = every_term(causal);
    const int threads = num_threads();
    set_num_threads(1);
    const auto one = testing::every_term_results(c, DType::f32, Precision::bf16);
    const auto again = testing::every_term_results(c, DType::f32, Precision::bf16);
    set_num_threads(2);
    const auto two = testing::every_term_results(c, DType::f32, Precision::bf16);
    set_num_threads(threads);
    for (std::size_t i = 0; i < one.size(); ++i) {
      INFO(testing::describe(c) << " " << testing::result_name(i));
      REQUIRE(one[i].defined());
      CHECK(f32_bits(one[i]) == f32_bits(again[i]));
      CHECK(f32_bits(one[i]) == f32_bits(two[i]));
    }
  }
}

TEST_CASE("bf16 flash attention's output does not depend on the query tile",
          "[attention][flash][bf16]") {
  // A key block is packed once per call at its widest (FlashGeometry::key_extent) and
  // read by every query tile, whose causal rows see more of it each time. Without a band,
  // key blocks start at multiples of the key tile for every query tile, so each output
  // sums the same keys in the same order whatever the tiles of queries. (With a band a
  // tile's blocks start at its first visible key, so the sums' order moves with the tile.)
  for (bool causal : {true, false})
    for (std::int64_t key_tile : {0, 13}) {
      EveryTermCase c = every_term(causal);
      c.key_tile = key_tile;
      const Tensor default_tiles = testing::every_term_results(c, DType::f32, Precision::bf16)[0];
      for (std::int64_t query_tile : {1, 7}) {
        c.query_tile = query_tile;
        INFO(testing::describe(c));
        CHECK(f32_bits(testing::every_term_results(c, DType::f32, Precision::bf16)[0]) ==
              f32_bits(default_tiles));
      }
    }
}

TEST_CASE("bf16 flash attention repacks new inputs that reuse an earlier call's memory",
          "[attention][flash][bf16]") {
  // The kernel packs k, v, q and dO once per call; the allocator hands the next call's
  // tensors the same addresses, which must not find the last call's packing.
  for (bool causal : {true, false}) {
    const EveryTermCase c = every_term(causal);
    EveryTermCase other = c;
    other.seed = 84;
    testing::every_term_results(other, DType::f32, Precision::bf16);
    const auto after_other = testing::every_term_results(c, DType::f32, Precision::bf16);
    testing::every_term_results(c, DType::f32, Precision::bf16);
    const auto after_same = testing::every_term_results(c, DType::f32, Precision::bf16);
    for (std::size_t i = 0; i < after_same.size(); ++i) {
      INFO(testing::describe(c) << " " << testing::result_name(i));
      CHECK(f32_bits(after_other[i]) == f32_bits(after_same[i]));
    }
  }
}

TEST_CASE("bf16 flash attention's backward repeats the precision recorded by its forward",
          "[attention][flash][bf16]") {
  for (bool causal : {true, false}) {
    const EveryTermCase c = every_term(causal);
    const auto outside = testing::every_term_results(c, DType::f32, Precision::bf16);
    const auto inside = testing::every_term_results(c, DType::f32, Precision::bf16, true);
    for (std::size_t i = 0; i < outside.size(); ++i) {
      INFO(testing::describe(c) << " " << testing::result_name(i));
      CHECK(f32_bits(outside[i]) == f32_bits(inside[i]));
    }
  }
}

TEST_CASE("bf16 flash attention without AVX512-BF16 rounds in software to the same numbers",
          "[attention][flash][bf16]") {
  // Three inputs: the same rounding must hold for any data, and a flip (below) lands on
  // different elements of each.
  for (std::uint64_t seed : {81u, 10u, 18u}) {
    for (bool causal : {true, false}) {
      // Tiles of 7 queries by 13 keys start key blocks at odd keys and end them mid-pair.
      // Tiles of 5 by 4 make 51 key blocks, whose 153 packings in the backward overflow
      // the 64 a thread keeps: the least recently used are dropped and packed again.
      for (auto [query_tile, key_tile] :
           {std::pair<std::int64_t, std::int64_t>{0, 0}, {7, 13}, {5, 4}}) {
        EveryTermCase c = every_term(causal);
        c.seed = seed;
        c.query_tile = query_tile;
        c.key_tile = key_tile;
        INFO(testing::describe(c) << " seed " << seed);
        std::vector<Tensor> native, software;
        {
          cpu::AmxTilesSwitchedOff vdpbf16ps;  // AMX against vdpbf16ps: tests/test_flash_amx.cpp
          native = testing::every_term_results(c, DType::f32, Precision::bf16);
        }
        const auto fp32 = testing::every_term_results(c, DType::f32, Precision::fp32);
        {
          cpu::Bf16InstructionsSwitchedOff off;
          software = testing::every_term_results(c, DType::f32, Precision::bf16);
        }
        for (std::size_t i = 0; i < native.size(); ++i) {
          const double apart = testing::share_apart(software[i], native[i], 1e-4);
          const double bf16_vs_fp32 = relative_error(software[i], fp32[i]);
          INFO(testing::result_name(i)
               << ": software vs native " << apart << " of the elements beyond 1e-4, largest "
               << relative_error(software[i], native[i]) << "; software vs fp32 " << bf16_vs_fp32);
          // The software path is bf16 too: far from fp32 (measured >= 3.3e-3). Where the
          // instructions exist it is close to them: the same exact products summed in another
          // order (within 4.4e-6 measured), except where an intermediate's f32 value differs
          // in its last bits across a bf16 rounding boundary. That rounding flips by one bf16
          // ulp (e.g. one element of ds: 0x3d808000, a tie, on one path, 0x3d808001 on the
          // other) and moves the elements it feeds (a row of dq, of dk, of d(W_r R)) by up to
          // 1.3e-3 of the largest (21 seeds, clang 14 -O1 + ASan, before and after XL's u/v
          // fold). So 1e-4 binds all but 1% of the elements (measured: at most 0.14% beyond);
          // a software path that rounds otherwise moves most (truncating: >= 53%; B left
          // unrounded: >= 29%). No element moves by more than a few flips (5e-3).
          CHECK(bf16_vs_fp32 > 1e-4);
          if (cpu::has_avx512_bf16()) {
            CHECK(apart <= 0.01);
            CHECK(relative_error(software[i], native[i]) <= 5e-3);
          }
        }
      }
    }
  }
}
