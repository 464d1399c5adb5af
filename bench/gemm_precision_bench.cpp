// bench_gemm_precision: the GEMMs of one training step of bench/results/cpu.md's model
// (d_model 256, d_ff 1024, 8192 tokens per step), each linear layer's forward x·Wᵀ,
// dx = dz·W and dW = dzᵀ·x, through
//   - OpenBLAS f32 (cblas_sgemm),
//   - oneDNN f32 (relpos's oneDNN path with Precision::fp32),
//   - relpos bf16 (Precision::bf16: rounds the f32 operands to bf16, then oneDNN),
//   - raw oneDNN bf16 (operands already bf16: the matmul primitive alone),
//   - the same writing a bf16 C, as torch.matmul on bf16 tensors does (half the bytes).
// Paths run interleaved, repetition by repetition, and the fastest repetition of each
// is reported (the slower ones measure the neighbours on a shared machine). --json prints
// one JSON line instead of the markdown table (bench/gemm_mkl.py reads it).
#include <cblas.h>
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "autograd/blas_kernel.h"
#include "autograd/cpu/bf16_round.h"
#include "autograd/cpu/onednn_gemm.h"
#include "autograd/random.h"
#include "autograd/storage.h"
#include "autograd/tensor.h"
#include "autograd/threads.h"
#include "bench/model_gemms.h"
#include "bench/parse_arguments.h"
#include "bench/timing.h"

#if RELPOS_HAVE_ONEDNN
#include "bench/onednn_matmul.h"
#endif

namespace {

using relpos::GemmArgs;

using relpos::bench::Gemm;

GemmArgs args_of(const Gemm& g, const float* a, const float* b, float* c) {
  GemmArgs args;
  args.m = g.m;
  args.n = g.n;
  args.k = g.k;
  args.trans_a = g.trans_a;
  args.trans_b = g.trans_b;
  args.a = a;
  args.lda = g.trans_a ? g.m : g.k;
  args.b = b;
  args.ldb = g.trans_b ? g.k : g.n;
  args.c = c;
  args.ldc = g.n;
  return args;
}

// Every operand and result lives in relpos's tensor allocator: 64-byte aligned, as in
// training and as PyTorch's tensors are. (std::vector's large blocks start 16 bytes into a
// page, and oneDNN 2.6's AMX kernels ran up to 3.5x slower on them: bench/results/gemm-gap.md.)
relpos::Tensor random_floats(std::int64_t n, relpos::Rng& rng) { return relpos::randn({n}, rng); }

// A 64-byte aligned block of n bf16 values (uint16 bits).
struct Bf16Block {
  explicit Bf16Block(std::size_t n)
      : storage(n * sizeof(std::uint16_t), relpos::Device::cpu),
        bits(static_cast<std::uint16_t*>(storage.data())) {}
  relpos::Storage storage;
  std::uint16_t* bits;
};

void openblas(const GemmArgs& g) {
  cblas_sgemm(CblasRowMajor, g.trans_a ? CblasTrans : CblasNoTrans,
              g.trans_b ? CblasTrans : CblasNoTrans, blasint(g.m), blasint(g.n), blasint(g.k), 1.f,
              static_cast<const float*>(g.a), blasint(g.lda), static_cast<const float*>(g.b),
              blasint(g.ldb), 0.f, static_cast<float*>(g.c), blasint(g.ldc));
}

#if RELPOS_HAVE_ONEDNN
// The bf16 matmul primitive on operands that are bf16 already, writing `c` (f32) or, when
// bf16_c, a bf16 C of its own.
class RawBf16 {
 public:
  RawBf16(const Gemm& g, const relpos::Tensor& a, const relpos::Tensor& b, float* c, bool bf16_c)
      : a16_(static_cast<std::size_t>(a.numel())),
        b16_(static_cast<std::size_t>(b.numel())),
        c16_(bf16_c ? static_cast<std::size_t>(g.m * g.n) : 0),
        matmul_(g.m, g.n, g.k, g.trans_a, g.trans_b, true, rounded(a, a16_), rounded(b, b16_),
                bf16_c ? static_cast<void*>(c16_.bits) : c, bf16_c) {}
  void run() { matmul_.run(); }

 private:
  static const std::uint16_t* rounded(const relpos::Tensor& x, Bf16Block& out) {
    std::transform(x.data<float>(), x.data<float>() + x.numel(), out.bits, relpos::cpu::to_bf16);
    return out.bits;
  }
  Bf16Block a16_, b16_, c16_;
  relpos::bench::OnednnMatmul matmul_;
};
#endif

}  // namespace

int main(int argc, char** argv) {
  relpos::use_best_blas_kernel(argv);
  CLI::App app{"The model's GEMMs: OpenBLAS f32 vs oneDNN f32 and bf16"};
  int repetitions = 5;
  double seconds = 0.2;
  std::int64_t tokens = 8192, d_model = 256, d_ff = 1024;
  bool json = false;
  app.add_option("--reps", repetitions, "interleaved repetitions per shape (fastest reported)")
      ->check(CLI::PositiveNumber);
  app.add_option("--seconds", seconds, "target duration of one timed repetition")
      ->check(CLI::PositiveNumber);
  app.add_option("--tokens", tokens, "rows of every activation (batch × sequence)")
      ->check(CLI::PositiveNumber);
  app.add_option("--d-model", d_model, "model width")->check(CLI::PositiveNumber);
  app.add_option("--d-ff", d_ff, "MLP hidden width")->check(CLI::PositiveNumber);
  app.add_flag("--json", json, "one JSON line instead of the markdown table");
  if (const auto code = relpos::bench::parse_arguments(app, argc, argv)) return *code;

  const std::vector<Gemm> gemms = relpos::bench::model_gemms(tokens, d_model, d_ff);

  const bool bf16 = relpos::bf16_unavailable_reason().empty();
  if (!json) {
    std::printf(
        "The model's GEMMs (%lld tokens, d_model %lld, d_ff %lld), %d threads, best of %d, "
        "GFLOP/s\n\n",
        static_cast<long long>(tokens), static_cast<long long>(d_model),
        static_cast<long long>(d_ff), relpos::num_threads(), repetitions);
    if (!bf16) std::printf("(no bf16 columns: %s)\n\n", relpos::bf16_unavailable_reason().c_str());
    std::printf(
        "| GEMM | M×N×K | OpenBLAS f32 | oneDNN f32 | relpos bf16 | raw oneDNN bf16 | raw, bf16 C "
        "|\n");
    std::printf("|---|---|---:|---:|---:|---:|---:|\n");
  }
  // The JSON names of the paths, in the table's column order.
  const std::vector<std::string> path_names{"openblas-f32", "onednn-f32", "relpos-bf16",
                                            "onednn-bf16", "onednn-bf16-c16"};
  nlohmann::json rows = nlohmann::json::array();
  relpos::Rng rng(1234);
  double total_flops = 0;
  std::vector<double> total_seconds(path_names.size(), 0.0);
  for (const Gemm& g : gemms) {
    const relpos::Tensor a = random_floats(g.m * g.k, rng);  // f32
    const relpos::Tensor b = random_floats(g.k * g.n, rng);
    const relpos::Tensor c = relpos::Tensor::zeros({g.m * g.n});
    float* const c_data = c.data<float>();
    const GemmArgs fp32 = args_of(g, a.data<float>(), b.data<float>(), c_data);
    std::vector<std::function<void()>> paths{[&] { openblas(fp32); }};
    if (relpos::cpu::onednn_built()) paths.push_back([&] { relpos::cpu::onednn_gemm(fp32); });
#if RELPOS_HAVE_ONEDNN
    GemmArgs bf16_args = fp32;
    bf16_args.precision = relpos::Precision::bf16;
    std::unique_ptr<RawBf16> raw, raw_c16;
    if (bf16) {
      raw = std::make_unique<RawBf16>(g, a, b, c_data, false);
      raw_c16 = std::make_unique<RawBf16>(g, a, b, c_data, true);
      paths.push_back([&] { relpos::cpu::onednn_gemm(bf16_args); });
      paths.push_back([&] { raw->run(); });
      paths.push_back([&] { raw_c16->run(); });
    }
#endif
    std::vector<std::int64_t> calls;
    for (auto& p : paths) calls.push_back(relpos::bench::calls_for(p, seconds));
    std::vector<double> best(paths.size(), 1e30);
    for (int r = 0; r < repetitions; ++r)
      for (std::size_t i = 0; i < paths.size(); ++i)
        best[i] = std::min(best[i], relpos::bench::seconds_per_call(paths[i], calls[i]));
    const double flops = 2.0 * double(g.m) * double(g.n) * double(g.k);
    total_flops += flops;
    nlohmann::json rates = nlohmann::json::object();
    for (std::size_t i = 0; i < paths.size(); ++i) {
      total_seconds[i] += best[i];
      rates[path_names[i]] = flops / best[i] * 1e-9;
    }
    rows.push_back(relpos::bench::gemm_report_row(g, rates));
    if (json) continue;
    std::printf("| %s | %lld×%lld×%lld |", g.what.c_str(), static_cast<long long>(g.m),
                static_cast<long long>(g.n), static_cast<long long>(g.k));
    for (std::size_t i = 0; i < path_names.size(); ++i) {
      if (i < paths.size())
        std::printf(" %.1f |", flops / best[i] * 1e-9);
      else
        std::printf(" – |");
    }
    std::printf("\n");
  }
  if (json) {
    nlohmann::json report{{"framework", "relpos"},
                          {"threads", relpos::num_threads()},
                          {"reps", repetitions},
                          {"shapes", rows}};
#if RELPOS_HAVE_ONEDNN
    const dnnl_version_t* v = dnnl_version();  // the library loaded, not the headers
    report["onednn_version"] = fmt::format("{}.{}.{}", v->major, v->minor, v->patch);
#endif
    std::printf("%s\n", report.dump().c_str());
    return 0;
  }
  std::printf("| all 12 | |");
  for (double s : total_seconds) {
    if (s > 0)
      std::printf(" %.1f |", total_flops / s * 1e-9);
    else
      std::printf(" – |");
  }
  std::printf("\n");
  return 0;
}
