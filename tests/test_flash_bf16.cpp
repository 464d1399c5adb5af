// The tiled attention in bf16 (Precision::bf16; autograd/cpu/bf16_gemm_rows.*): its products
// against the software rounding path, every scheme against the fp64 composed reference,
// determinism of the table gradients, that bf16 is really used, and the fallback
// without AVX512-BF16.
//
// Tolerance. bfloat16 keeps 8 significant bits, so rounding to nearest has relative
// error at most u = 2^-8 ≈ 3.9e-3, and a product of two rounded operands (exact in f32)
// is off by at most 2u. Each bf16 product adds up to 2u of its sum of absolute terms:
// the output passes q·kᵀ (into p) and p·v; a gradient passes the recomputed q·kᵀ,
// dO·vᵀ (into dp), then pᵀ·dO, dsᵀ·q or ds·k, and a scheme table's gradient sums ds
// (built from both p and dp) through the scheme's own f32 ops. Four such steps give
// 4 · 2u = 8u ≈ 3.1e-2 of the reference's largest entry, the bound for every tensor.
// Measured: output 1.2e-2, q/k/v gradients 1.1e-2, table gradients 2.3e-2 (the T5 table,
// causal, Lq=70, Lk=181); the fp32 kernel is within 5.1e-6 on the same cases.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <string>

#include "autograd/cpu/bf16_gemm_rows.h"
#include "autograd/cpu/cpu_features.h"
#include "autograd/ops/flash_attention.h"
#include "autograd/precision.h"
#include "autograd/tape.h"
#include "autograd/threads.h"
#include "scheme_harness.h"
#include "test_helpers.h"

using namespace relpos;
using testing::relative_error;

namespace {

constexpr double kUnitRoundoff = 1.0 / 256;  // bf16: 8 significant bits
constexpr double kBf16Tolerance = 8 * kUnitRoundoff;

bool same_bits(const Tensor& a, const Tensor& b) {
  const auto av = a.contiguous(), bv = b.contiguous();
  return av.numel() == bv.numel() &&
         std::memcmp(av.data<float>(), bv.data<float>(), av.numel() * sizeof(float)) == 0;
}

// An (rows, cols) f32 matrix with row stride cols + 3, as a vector.
std::vector<float> random_matrix(std::int64_t rows, std::int64_t cols, Rng& rng) {
  const Tensor t = randn({rows, cols + 3}, rng);
  return {t.data<float>(), t.data<float>() + t.numel()};
}

// The output and the gradients of q, k, v and every scheme parameter, with q, k, v and the
// parameters from `inputs` in `dtype`; the forward runs under `precision`, the backward
// after the scope ends (it must repeat the recorded precision).
std::vector<Tensor> run(testing::SchemeUnderTest& s, bool causal, const std::vector<Tensor>& inputs,
                        DType dtype, AttentionPath path, Precision precision,
                        const Tensor& weights) {
  std::vector<Tensor> x;
  for (std::size_t i = 0; i < 3; ++i) {
    Tensor copy = inputs[i].detach().to(dtype);
    copy.set_requires_grad(true);
    x.push_back(copy);
  }
  const std::vector<Tensor> values(inputs.begin() + 3, inputs.end());
  for (const Tensor& p : testing::set_parameters(*s.scheme, values, dtype)) x.push_back(p);
  Tensor out;
  {
    PrecisionScope scope(precision);
    out = testing::attention_through(*s.scheme, x[0], x[1], x[2], causal, path);
  }
  backward(out, weights.to(dtype));
  std::vector<Tensor> result{out.detach()};
  for (const Tensor& t : x) result.push_back(t.grad());
  return result;
}

std::string tensor_name(std::size_t i) {
  return i == 0 ? std::string("output") : "gradient of input " + std::to_string(i - 1);
}

// The flash op with every term (T5/ALiBi bias, Shaw keys and value bins, XL when causal)
// in f32, its forward under `precision` and its backward outside that scope unless
// `backward_in_scope`: B=2, H=2, D=18, Lq=90 of Lk=201, k=20. Returns the output and
// every input's gradient.
std::vector<Tensor> flash_every_term(bool causal, Precision precision, std::int64_t query_tile = 0,
                                     std::int64_t key_tile = 0, std::uint64_t seed = 81,
                                     bool backward_in_scope = false) {
  Rng rng(seed);
  const std::int64_t b = 2, h = 2, d = 18, lq = 90, lk = 201, clip = 20;
  std::vector<Tensor> x;
  for (const Shape& shape : std::vector<Shape>{{b, h, lq, d},
                                               {b, h, lk, d},
                                               {b, h, lk, d},
                                               {h, lq + lk - 1},
                                               {b, h, lq, 2 * clip + 1},
                                               {b, h, lq, d},
                                               {h, lk, d}}) {
    Tensor t = randn(shape, rng);
    t.set_requires_grad(true);
    x.push_back(t);
  }
  FlashTerms t;
  t.distance_bias = x[3];
  t.clipped = x[4];
  t.clip = clip;
  t.value_bins = true;
  if (causal) {
    t.xl_query = x[5];
    t.xl_r = x[6];
  }
  t.scale = 0.25;
  t.term_scale = 0.25;
  t.causal = causal;
  t.query_tile = query_tile;
  t.key_tile = key_tile;
  Tensor out;
  {
    PrecisionScope scope(precision);
    out = flash_attention(x[0], x[1], x[2], t);
  }
  const Tensor grad = randn(out.shape(), rng);
  PrecisionScope scope(backward_in_scope ? precision : current_precision());
  backward(out, grad);
  std::vector<Tensor> result{out.detach()};
  for (std::size_t i = 0; i < (causal ? 7u : 5u); ++i) result.push_back(x[i].grad());
  return result;
}

}  // namespace

TEST_CASE("bf16 products on vdpbf16ps equal the software rounding to f32 summation order",
          "[attention][flash][bf16]") {
  if (!cpu::has_avx512_bf16()) {
    WARN("SKIPPED: this CPU lacks AVX512-BF16, so there is no vdpbf16ps path to compare");
    return;
  }
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

TEST_CASE("bf16 flash attention matches the fp64 composed reference, every scheme",
          "[attention][flash][bf16][slow]") {
  if (!testing::bf16_usable()) return;  // Shaw's terms outside the kernel are bf16 products
  const std::int64_t batch = 2, heads = 2, dim = 18;
  for (bool causal : {true, false}) {
    for (auto& s : testing::attention_variants({24, heads, 1, causal, dim}, 82)) {
      // 150 queries: four full query tiles and a partial one; 181 keys: an odd count.
      for (auto [lq, lk] : {std::pair<std::int64_t, std::int64_t>{150, 150}, {70, 181}}) {
        INFO(s.label << " causal=" << causal << " Lq=" << lq << " Lk=" << lk);
        Rng rng(83);
        std::vector<Tensor> inputs{randn({batch, heads, lq, dim}, rng, DType::f64),
                                   randn({batch, heads, lk, dim}, rng, DType::f64),
                                   randn({batch, heads, lk, dim}, rng, DType::f64)};
        for (const NamedParameter& p : s.scheme->parameters())
          inputs.push_back(randn(p.tensor.shape(), rng, DType::f64, 0.5));
        const Tensor weights = randn({batch, heads, lq, dim}, rng, DType::f64);
        const auto reference =
            run(s, causal, inputs, DType::f64, AttentionPath::composed, Precision::fp32, weights);
        const auto bf16 =
            run(s, causal, inputs, DType::f32, AttentionPath::flash, Precision::bf16, weights);
        const auto fp32 =
            run(s, causal, inputs, DType::f32, AttentionPath::flash, Precision::fp32, weights);
        for (std::size_t i = 0; i < reference.size(); ++i) {
          INFO(tensor_name(i) << ": bf16 error " << relative_error(bf16[i], reference[i])
                              << ", fp32 error " << relative_error(fp32[i], reference[i]));
          REQUIRE(bf16[i].defined());
          CHECK(relative_error(bf16[i], reference[i]) <= kBf16Tolerance);
        }
        // bf16 is really used: the output is off by far more than f32 rounding (the fp32
        // kernel is within 1e-5, tests/test_flash_attention.cpp).
        CHECK(relative_error(bf16[0], reference[0]) > 1e-4);
        // f64 inputs compute in f64 under Precision::bf16 too.
        const auto f64 =
            run(s, causal, inputs, DType::f64, AttentionPath::flash, Precision::bf16, weights);
        for (std::size_t i = 0; i < reference.size(); ++i)
          CHECK(relative_error(f64[i], reference[i]) <= 1e-12);
      }
    }
  }
}

TEST_CASE("bf16 flash attention is bit-identical between runs and with 1 and 2 threads",
          "[attention][flash][bf16]") {
  for (bool causal : {true, false}) {
    const int threads = num_threads();
    set_num_threads(1);
    const auto one = flash_every_term(causal, Precision::bf16);
    const auto again = flash_every_term(causal, Precision::bf16);
    set_num_threads(2);
    const auto two = flash_every_term(causal, Precision::bf16);
    set_num_threads(threads);
    for (std::size_t i = 0; i < one.size(); ++i) {
      INFO("causal=" << causal << " " << tensor_name(i));
      REQUIRE(one[i].defined());
      CHECK(same_bits(one[i], again[i]));
      CHECK(same_bits(one[i], two[i]));
    }
  }
}

TEST_CASE("bf16 flash attention repacks new inputs that reuse an earlier call's memory",
          "[attention][flash][bf16]") {
  // The kernel packs k, v, q and dO once per call; the allocator hands the next call's
  // tensors the same addresses, which must not find the last call's packing.
  for (bool causal : {true, false}) {
    flash_every_term(causal, Precision::bf16, 0, 0, 84);
    const auto after_other = flash_every_term(causal, Precision::bf16);
    flash_every_term(causal, Precision::bf16);
    const auto after_same = flash_every_term(causal, Precision::bf16);
    for (std::size_t i = 0; i < after_same.size(); ++i) {
      INFO("causal=" << causal << " " << tensor_name(i));
      CHECK(same_bits(after_other[i], after_same[i]));
    }
  }
}

TEST_CASE("bf16 flash attention's backward repeats the precision recorded by its forward",
          "[attention][flash][bf16]") {
  for (bool causal : {true, false}) {
    const auto outside = flash_every_term(causal, Precision::bf16);
    const auto inside = flash_every_term(causal, Precision::bf16, 0, 0, 81, true);
    for (std::size_t i = 0; i < outside.size(); ++i) {
      INFO("causal=" << causal << " " << tensor_name(i));
      CHECK(same_bits(outside[i], inside[i]));
    }
  }
}

TEST_CASE("bf16 flash attention without AVX512-BF16 rounds in software to the same numbers",
          "[attention][flash][bf16]") {
  for (bool causal : {true, false}) {
    // Tiles of 7 queries by 13 keys start key blocks at odd keys and end them mid-pair.
    for (auto [query_tile, key_tile] : {std::pair<std::int64_t, std::int64_t>{0, 0}, {7, 13}}) {
      INFO("causal=" << causal << " tiles " << query_tile << "x" << key_tile);
      const auto native = flash_every_term(causal, Precision::bf16, query_tile, key_tile);
      const auto fp32 = flash_every_term(causal, Precision::fp32, query_tile, key_tile);
      std::vector<Tensor> software;
      {
        cpu::Bf16InstructionsSwitchedOff off;
        software = flash_every_term(causal, Precision::bf16, query_tile, key_tile);
      }
      for (std::size_t i = 0; i < native.size(); ++i) {
        const double apart = relative_error(software[i], native[i]);
        const double bf16_vs_fp32 = relative_error(software[i], fp32[i]);
        INFO(tensor_name(i) << ": software vs native " << apart << ", software vs fp32 "
                            << bf16_vs_fp32);
        // The software path is bf16 too: far from fp32 (measured >= 3.3e-3), and, where the
        // instructions exist, close to them: the same exact products summed in another order
        // (measured <= 4.4e-6; an intermediate whose bf16 rounding flips moves by u of itself).
        CHECK(bf16_vs_fp32 > 1e-4);
        if (cpu::has_avx512_bf16()) CHECK(apart <= 1e-4);
      }
    }
  }
}
