#include "attention_harness.h"

#include <catch2/catch.hpp>
#include <sstream>

#include "autograd/ops/flash_attention.h"
#include "autograd/tape.h"
#include "test_helpers.h"

namespace relpos::testing {

std::string describe(const AttentionOptions& options) {
  std::ostringstream out;
  out << (options.causal ? "causal" : "bidirectional");
  if (options.chunk.enabled())
    out << ", chunk " << options.chunk.size << " left " << options.chunk.left_chunks << " origin "
        << options.chunk.key_origin;
  if (options.chunk.window > 0) out << ", window " << options.chunk.window;
  return out.str();
}

PathUnderTest flash_bf16_path() {
  constexpr double kTolerance = 8.0 / 256;  // bf16: 8 significant bits
  return {AttentionPath::flash, DType::f32, Precision::bf16, kTolerance, kTolerance, 1e-4};
}

std::string describe(const PathUnderTest& p) {
  std::ostringstream out;
  out << name_of(p.path) << " " << name_of(p.dtype) << " under " << name_of(p.precision);
  return out.str();
}

Tensor attend(const SchemeUnderTest& s, const Tensor& q, const Tensor& k, const Tensor& v,
              const AttentionOptions& options, AttentionPath path) {
  return attention_through(*s.scheme, q, k, v, options.causal, path, 0, options.chunk);
}

namespace {

// One case's inputs, all f64: q (B, H, Lq, D), k and v (B, H, Lk, D), the values of the
// scheme's parameters, and the weights w (B, H, Lq, D) of the checked sum <out, w>.
struct CaseInputs {
  std::vector<Tensor> qkv, parameters;
  Tensor weights;
};

CaseInputs case_inputs(const AttentionSweep& sweep, const SchemeUnderTest& s, std::int64_t q_len,
                       std::int64_t k_len) {
  Rng rng(sweep.seed + 1);
  const std::int64_t b = sweep.batch, h = sweep.heads, d = sweep.head_dim;
  CaseInputs in;
  in.qkv = {randn({b, h, q_len, d}, rng, DType::f64), randn({b, h, k_len, d}, rng, DType::f64),
            randn({b, h, k_len, d}, rng, DType::f64)};
  for (const NamedParameter& p : s.scheme->parameters())
    in.parameters.push_back(randn(p.tensor.shape(), rng, DType::f64, 0.5));
  in.weights = randn({b, h, q_len, d}, rng, DType::f64);
  return in;
}

// The output and the gradients of q, k, v and every scheme parameter for <out, w>, all in
// the path's dtype; the forward under the path's precision, the backward after its scope.
std::vector<Tensor> results(const SchemeUnderTest& s, const CaseInputs& in,
                            const AttentionOptions& options, const PathUnderTest& p) {
  std::vector<Tensor> x;
  for (const Tensor& t : in.qkv) {
    Tensor copy = t.detach().to(p.dtype);
    copy.set_requires_grad(true);
    x.push_back(copy);
  }
  for (const Tensor& t : set_parameters(*s.scheme, in.parameters, p.dtype)) x.push_back(t);
  Tensor out;
  {
    PrecisionScope scope(p.precision);
    out = attend(s, x[0], x[1], x[2], options, p.path);
  }
  backward(out, in.weights.to(p.dtype));
  std::vector<Tensor> result{out.detach()};
  for (const Tensor& t : x) result.push_back(t.grad());
  return result;
}

// "output", "gradient of q" ... "gradient of <parameter name>".
std::vector<std::string> result_names(const SchemeUnderTest& s) {
  std::vector<std::string> names{"output", "gradient of q", "gradient of k", "gradient of v"};
  for (const NamedParameter& p : s.scheme->parameters()) names.push_back("gradient of " + p.name);
  return names;
}

// How much larger than the table tolerance a scheme's parameter gradients may be off.
// FIRE's are sums over every (query, key) pair of dLogit times a function of the pair's
// MLP input, and each row's dLogits sum to zero: small differences of large sums. Measured
// at Lq = Lk = 560 (relative to the f64 composed path): f32 flash 3.2e-3 (w1, b1), bf16
// products 0.11 (w2); and c enters x = log(1 + c·d) / log(1 + c·m) through a ratio whose
// dependence on c nearly cancels, so even the f64 composed reference is good to only about
// 1e-10 there. tests/test_fire.cpp checks every FIRE gradient at 1e-12 against the composed
// ops in f64 at L <= 50, and by an fp64 gradcheck.
// Transformer-XL's u and v gradients under bf16 products: v's sums d(q + v) = E·(W_r R)
// over every row, and each row of E (the dLogits) sums to zero, so where many distances
// read the same row of W_r R (clamp_len = 3) the exact sum cancels while E's bf16 rounding
// does not. Measured (Lq = Lk = 150): 1.5e-2 with XL's products in f32, 3.4e-2 in bf16.
double conditioning(const SchemeUnderTest& s, std::size_t result, Precision precision) {
  if (s.config.scheme == "fire" && result > 3) return 200.0;
  if (s.config.scheme == "xl" && result > 3 && precision == Precision::bf16) return 2.0;
  return 1.0;
}

}  // namespace

std::size_t check_against_composed(const AttentionSweep& sweep) {
  for (const PathUnderTest& p : sweep.paths)
    if (p.precision == Precision::bf16 && !bf16_usable()) return 0;
  const PathUnderTest reference_path{AttentionPath::composed, DType::f64, Precision::fp32, 0, 0, 0};
  std::size_t comparisons = 0;
  for (const AttentionOptions& options : sweep.options) {
    const ModelDims dims{sweep.d_model, sweep.heads, 1, options.causal, sweep.head_dim};
    for (SchemeUnderTest& s : attention_variants(dims, sweep.seed)) {
      const std::vector<std::string> names = result_names(s);
      for (auto [q_len, k_len] : sweep.lengths) {
        INFO(s.label << ", " << describe(options) << ", Lq=" << q_len << " Lk=" << k_len);
        const CaseInputs in = case_inputs(sweep, s, q_len, k_len);
        const auto reference = results(s, in, options, reference_path);
        if (options.chunk.banded()) {  // the band is real: without it the output differs
          NoGradGuard no_grad;
          const Tensor unbanded = attend(s, in.qkv[0], in.qkv[1], in.qkv[2], {options.causal, {}},
                                         AttentionPath::composed);
          CHECK(largest_difference(unbanded, reference[0]) > 1e-3);
        }
        for (const PathUnderTest& p : sweep.paths) {
          INFO(describe(p));
          const auto got = results(s, in, options, p);
          REQUIRE(got.size() == reference.size());
          for (std::size_t i = 0; i < reference.size(); ++i) {
            INFO(names[i]);
            REQUIRE(got[i].defined());
            // An exactly zero reference (a window of 1: each row's one weight is 1 whatever
            // its logit, so q, k and the logit terms get no gradient) is compared absolutely;
            // equal results pass (FIRE's threshold gradient is exactly 0 on both paths when
            // every query lies beyond it).
            const bool zero = largest_difference(reference[i], Tensor::zeros(reference[i].shape(),
                                                                             DType::f64)) == 0.0;
            const double difference = largest_difference(got[i], reference[i]);
            const double error =
                zero || difference == 0 ? difference : relative_error(got[i], reference[i]);
            CHECK(error <=
                  (i <= 3 ? p.tolerance : p.table_tolerance) * conditioning(s, i, p.precision));
            if (i == 0 && p.output_error_above > 0) CHECK(error > p.output_error_above);
          }
          ++comparisons;
        }
      }
    }
  }
  return comparisons;
}

std::string describe(const EveryTermCase& c) {
  std::ostringstream out;
  out << (c.causal ? "causal" : "bidirectional") << " Lq=" << c.q_len << " Lk=" << c.k_len
      << " tiles " << c.query_tile << "x" << c.key_tile;
  if (c.chunk.enabled())
    out << " chunk " << c.chunk.size << " left " << c.chunk.left_chunks << " origin "
        << c.chunk.key_origin;
  if (c.chunk.window > 0) out << " window " << c.chunk.window;
  return out.str();
}

EveryTermCase gradcheck_case(bool causal, const AttentionChunk& chunk) {
  EveryTermCase c{.batch = 1, .dim = 2, .q_len = 20, .k_len = 50, .clip = 3, .causal = causal};
  c.scale = 0.6;
  c.term_scale = 0.4;
  c.chunk = chunk;
  c.query_tile = 8;
  c.key_tile = 16;
  return c;
}

std::vector<Tensor> every_term_inputs(const EveryTermCase& c, DType dtype, Rng& rng) {
  const std::int64_t b = c.batch, h = c.heads, d = c.dim, lq = c.q_len, lk = c.k_len;
  const std::vector<std::pair<Shape, double>> shapes{{{b, h, lq, d}, 1.0},
                                                     {{b, h, lk, d}, 1.0},
                                                     {{b, h, lk, d}, 1.0},
                                                     {{h, lq + lk - 1}, 1.0},
                                                     {{b, h, lq, 2 * c.clip + 1}, 1.0},
                                                     {{b, h, lq, d}, 0.5},
                                                     {{h, lk, d}, 0.5}};
  std::vector<Tensor> x;
  for (const auto& [shape, scale] : shapes) {
    Tensor t = randn(shape, rng, dtype, scale);
    t.set_requires_grad(true);
    x.push_back(t);
  }
  return x;
}

Tensor flash_every_term(const std::vector<Tensor>& x, const EveryTermCase& c) {
  FlashTerms t;
  t.distance_bias = x[3];
  t.clipped = x[4];
  t.clip = c.clip;
  t.value_bins = true;
  if (c.causal) {
    t.xl_query = x[5];
    t.xl_r = x[6];
  }
  t.scale = c.scale;
  t.term_scale = c.term_scale;
  t.causal = c.causal;
  t.chunk = c.chunk;
  t.query_tile = c.query_tile;
  t.key_tile = c.key_tile;
  return flash_attention(x[0], x[1], x[2], t);
}

std::vector<Tensor> every_term_results(const EveryTermCase& c, DType dtype, Precision precision,
                                       bool backward_in_scope) {
  Rng rng(c.seed);
  const std::vector<Tensor> x = every_term_inputs(c, dtype, rng);
  Tensor out;
  {
    PrecisionScope scope(precision);
    out = flash_every_term(x, c);
  }
  const Tensor weights = randn(out.shape(), rng, dtype);
  {
    PrecisionScope scope(backward_in_scope ? precision : current_precision());
    backward(out, weights);
  }
  std::vector<Tensor> result{out.detach()};
  for (std::size_t i = 0; i < (c.causal ? 7u : 5u); ++i) result.push_back(x[i].grad());
  return result;
}

std::string result_name(std::size_t i) {
  return i == 0 ? std::string("output") : "gradient of input " + std::to_string(i - 1);
}

}  // namespace relpos::testing
