// GPU (cuBLAS) vs CPU (OpenBLAS) GEMM: every transpose combination, padded
// leading dimensions, batches with a shared (stride 0) operand, alpha / beta,
// f64, and TF32 only when allowed.
#include <catch2/catch.hpp>

#include <cmath>

#include "cuda_test_helpers.h"

using namespace relpos;
using namespace relpos::cuda_testing;

namespace {

// One GEMM problem with its operands on both devices.
struct Problem {
  GemmArgs args;
  Pair a, b, c;
};

// Row-major A (m, k) or its transpose stored (k, m), B likewise, C (m, n); every
// leading dimension padded by 3 so that ld != the logical width.
Problem make_problem(Rng& rng, bool trans_a, bool trans_b, std::int64_t batch, bool shared_b,
                     double beta, DType dtype) {
  const std::int64_t m = 17, n = 23, k = 31, pad = 3;
  Problem p;
  GemmArgs& g = p.args;
  g.trans_a = trans_a;
  g.trans_b = trans_b;
  g.batch = batch;
  g.m = m;
  g.n = n;
  g.k = k;
  g.alpha = 1.5;
  g.beta = beta;
  g.dtype = dtype;
  const std::int64_t a_rows = trans_a ? k : m, b_rows = trans_b ? n : k;
  g.lda = (trans_a ? m : k) + pad;
  g.ldb = (trans_b ? k : n) + pad;
  g.ldc = n + pad;
  g.stride_a = a_rows * g.lda;
  g.stride_b = shared_b ? 0 : b_rows * g.ldb;
  g.stride_c = m * g.ldc;
  p.a = randn_pair({batch, a_rows, g.lda}, rng, 1.0, dtype);
  p.b = randn_pair({shared_b ? 1 : batch, b_rows, g.ldb}, rng, 1.0, dtype);
  // beta == 0: C is write-only and starts as NaN; otherwise it is an input.
  p.c = beta == 0.0 ? poisoned_pair({batch, m, g.ldc}, dtype)
                    : randn_pair({batch, m, g.ldc}, rng, 1.0, dtype);
  return p;
}

void run(Backend& backend, GemmArgs g, const Tensor& a, const Tensor& b, const Tensor& c) {
  g.a = a.raw_data();
  g.b = b.raw_data();
  g.c = c.raw_data();
  backend.gemm(g);
}

// The columns of C that GEMM writes (the padding keeps its poison).
Tensor written_part(const Tensor& c, std::int64_t n) {
  return Tensor::view_of(c, {c.size(0), c.size(1), n}, c.strides(), 0).contiguous();
}

void require_gemm_matches(Problem& p, double rtol) {
  run(cpu(), p.args, p.a.host, p.b.host, p.c.host);
  run(gpu(), p.args, p.a.device, p.b.device, p.c.device);
  // Sums of k products of N(0, 1) values: errors scale with sqrt(k).
  require_match(written_part(p.c.device, p.args.n), written_part(p.c.host, p.args.n),
                std::sqrt(static_cast<double>(p.args.k)), rtol);
}

// Restores the TF32 setting even when a REQUIRE fails.
struct AllowTf32 {
  explicit AllowTf32(bool allow) : saved(gpu().allow_tf32()) { gpu().set_allow_tf32(allow); }
  ~AllowTf32() { gpu().set_allow_tf32(saved); }
  bool saved;
};

}  // namespace

TEST_CASE("gemm matches the CPU for every transpose, batch and beta", "[cuda]") {
  REQUIRE_FALSE(gpu().allow_tf32());  // TF32 is opt-in
  Rng rng(41);
  for (const bool trans_a : {false, true}) {
    for (const bool trans_b : {false, true}) {
      for (const std::int64_t batch : {1, 3}) {
        for (const bool shared_b : {false, true}) {
          for (const double beta : {0.0, 0.5}) {
            INFO("trans_a " << trans_a << " trans_b " << trans_b << " batch " << batch
                            << " shared_b " << shared_b << " beta " << beta);
            Problem p = make_problem(rng, trans_a, trans_b, batch, shared_b, beta, DType::f32);
            require_gemm_matches(p, kRtol);
          }
        }
      }
    }
  }
}

TEST_CASE("gemm in f64", "[cuda]") {
  Rng rng(42);
  Problem p = make_problem(rng, true, false, 2, false, 0.5, DType::f64);
  require_gemm_matches(p, 1e-13);
}

TEST_CASE("gemm with TF32 allowed stays within TF32 precision", "[cuda]") {
  Rng rng(43);
  AllowTf32 allow(true);
  Problem p = make_problem(rng, false, true, 2, false, 0.0, DType::f32);
  // TF32 keeps 10 mantissa bits: products are exact to about 1e-3.
  require_gemm_matches(p, 5e-3);
}
