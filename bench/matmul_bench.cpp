// bench_matmul: C = A·B forward + backward through the engine (matmul on two
// leaves that require grad, then backward(C, G): three GEMMs) against the same
// three raw cblas_sgemm calls on preallocated buffers. Engine and raw runs are
// interleaved, repetition by repetition, so that both see the same machine load,
// and the fastest repetition of each is reported: on a shared machine the slower
// ones measure the neighbours.
#include <cblas.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <vector>

#include "autograd/blas_kernel.h"
#include "autograd/ops/matmul.h"
#include "autograd/random.h"
#include "autograd/tape.h"
#include "autograd/threads.h"
#include "bench/parse_arguments.h"
#include "bench/timing.h"

namespace {

using relpos::Tensor;

struct GemmShape {
  std::int64_t m, k, n;
};

// C = A·B, dA = G·Bᵀ, dB = Aᵀ·G.
double flops_fwd_bwd(const GemmShape& s) {
  return 3.0 * 2.0 * double(s.m) * double(s.k) * double(s.n);
}

struct Operands {
  Tensor a, b, g;  // (M, K), (K, N), (M, N)
};

Operands make_operands(const GemmShape& s, relpos::Rng& rng) {
  Operands o{relpos::randn({s.m, s.k}, rng), relpos::randn({s.k, s.n}, rng),
             relpos::randn({s.m, s.n}, rng)};
  o.a.set_requires_grad(true);
  o.b.set_requires_grad(true);
  return o;
}

void engine_step(const Operands& o) {
  o.a.zero_grad();
  o.b.zero_grad();
  Tensor c = relpos::matmul(o.a, o.b);  // (M, N)
  relpos::backward(c, o.g);
}

// The same three products with OpenBLAS directly, into buffers allocated once.
class RawGemm {
 public:
  explicit RawGemm(const GemmShape& s)
      : s_(s), c_(size_t(s.m * s.n)), da_(size_t(s.m * s.k)), db_(size_t(s.k * s.n)) {}

  void step(const Operands& o) {
    const auto m = blasint(s_.m), k = blasint(s_.k), n = blasint(s_.n);
    const float* a = o.a.data<float>();
    const float* b = o.b.data<float>();
    const float* g = o.g.data<float>();
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k, 1.f, a, k, b, n, 0.f, c_.data(),
                n);  // C = A·B: (M, N)
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, m, k, n, 1.f, g, n, b, n, 0.f, da_.data(),
                k);  // dA = G·Bᵀ: (M, K)
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, k, n, m, 1.f, a, k, g, n, 0.f, db_.data(),
                n);  // dB = Aᵀ·G: (K, N)
  }

 private:
  GemmShape s_;
  std::vector<float> c_, da_, db_;
};

}  // namespace

int main(int argc, char** argv) {
  relpos::use_best_blas_kernel(argv);
  CLI::App app{"GEMM forward+backward: relpos engine vs raw OpenBLAS"};
  int repetitions = 9;
  double seconds = 0.2;
  app.add_option("--reps", repetitions, "interleaved repetitions per shape (fastest reported)")
      ->check(CLI::PositiveNumber);
  app.add_option("--seconds", seconds, "target duration of one timed repetition")
      ->check(CLI::PositiveNumber);
  if (const auto code = relpos::bench::parse_arguments(app, argc, argv)) return *code;

  const std::vector<GemmShape> shapes{
      {256, 256, 256}, {512, 512, 512}, {1024, 1024, 1024}, {2048, 256, 256}};
  relpos::Rng rng(1234);
  std::printf("GEMM forward+backward (3 GEMMs), f32, %d threads, best of %d\n\n",
              relpos::num_threads(), repetitions);
  std::printf("| M×K×N | engine GFLOP/s | OpenBLAS GFLOP/s | engine/raw |\n");
  std::printf("|---|---:|---:|---:|\n");
  for (const GemmShape& s : shapes) {
    Operands o = make_operands(s, rng);
    RawGemm raw(s);
    auto engine_fn = [&] { engine_step(o); };
    auto raw_fn = [&] { raw.step(o); };
    const std::int64_t engine_calls = relpos::bench::calls_for(engine_fn, seconds);
    const std::int64_t raw_calls = relpos::bench::calls_for(raw_fn, seconds);
    std::vector<double> engine_s, raw_s;
    for (int r = 0; r < repetitions; ++r) {
      engine_s.push_back(relpos::bench::seconds_per_call(engine_fn, engine_calls));
      raw_s.push_back(relpos::bench::seconds_per_call(raw_fn, raw_calls));
    }
    const double best_engine_s = *std::min_element(engine_s.begin(), engine_s.end());
    const double best_raw_s = *std::min_element(raw_s.begin(), raw_s.end());
    const double engine_gflops = flops_fwd_bwd(s) / best_engine_s * 1e-9;
    const double raw_gflops = flops_fwd_bwd(s) / best_raw_s * 1e-9;
    std::printf("| %lld×%lld×%lld | %.1f | %.1f | %.2f |\n", static_cast<long long>(s.m),
                static_cast<long long>(s.k), static_cast<long long>(s.n), engine_gflops, raw_gflops,
                engine_gflops / raw_gflops);
  }
  return 0;
}
