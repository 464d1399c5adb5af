// bench_gemm_mkl: Intel oneMKL on the 12 GEMMs of one training step of bench/results/cpu.md's
// model (d_model 256, d_ff 1024, 8192 tokens), in the layouts relpos's linear layers use
// (row-major; forward x·Wᵀ, backward dx = dz·W and dW = dzᵀ·x):
//   sgemm        cblas_sgemm, f32 operands;
//   bf16         cblas_gemm_bf16bf16f32 on operands that are bf16 already (f32 result);
//   bf16+round   the same after rounding both f32 operands to bf16 (relpos's rounding,
//                autograd/cpu/bf16_round.h), as relpos's bf16 products do when an operand
//                has no bf16 copy yet;
//   bf16-packed  cblas_gemm_bf16bf16f32_compute with the weight (B of x·Wᵀ and dz·W) packed
//                into MKL's own layout once, outside the timing, as a weight kept so across
//                a step would be (dzᵀ·x has no weight operand: not run);
//   onednn-f32, onednn-bf16  oneDNN's matmul primitive alone, f32 and on bf16 operands
//                (bench/onednn_matmul.h; what relpos's products run, without its rounding):
//                in the same process and interleaved with MKL, so that the load of a
//                shared machine falls on both alike (built with oneDNN only).
// A standalone probe: it links MKL and oneDNN and nothing of relpos (MKL's cblas_* would
// clash with OpenBLAS's in one process), built only when CMake finds MKL
// (RELPOS_MKL_PREFIX, tools/install-mkl.sh). bench/gemm_mkl.py runs it beside
// bench_gemm_precision and torch.matmul. Prints one JSON line; the paths run interleaved,
// repetition by repetition, and the fastest repetition of each is reported.
#include <mkl.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "autograd/cpu/bf16_round.h"
#include "bench/model_gemms.h"
#include "bench/parse_arguments.h"
#include "bench/timing.h"

#if RELPOS_HAVE_ONEDNN
#include "bench/onednn_matmul.h"
#endif

namespace {

using relpos::bench::Gemm;

std::vector<float> random_floats(std::int64_t n, std::mt19937& rng) {
  std::normal_distribution<float> normal;
  std::vector<float> v(static_cast<std::size_t>(n));
  for (float& x : v) x = normal(rng);
  return v;
}

std::vector<std::uint16_t> rounded(const std::vector<float>& v) {
  std::vector<std::uint16_t> out(v.size());
  relpos::cpu::round_row_to_bf16(v.data(), static_cast<std::int64_t>(v.size()), out.data());
  return out;
}

// Rounds `in` into `out` in parallel rows of `cols`, as relpos's bf16 products do.
void round_rows(const std::vector<float>& in, std::int64_t cols, std::vector<std::uint16_t>& out) {
  const auto rows = static_cast<std::int64_t>(in.size()) / cols;
#pragma omp parallel for schedule(static)
  for (std::int64_t r = 0; r < rows; ++r)
    relpos::cpu::round_row_to_bf16(in.data() + r * cols, cols, out.data() + r * cols);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"The model's GEMMs through oneMKL: cblas_sgemm and cblas_gemm_bf16bf16f32"};
  int repetitions = 5, threads = 2;
  double seconds = 0.2;
  std::int64_t tokens = 8192, d_model = 256, d_ff = 1024;
  app.add_option("--reps", repetitions, "interleaved repetitions per shape (fastest reported)")
      ->check(CLI::PositiveNumber);
  app.add_option("--seconds", seconds, "target duration of one timed repetition")
      ->check(CLI::PositiveNumber);
  app.add_option("--threads", threads, "MKL threads")->check(CLI::PositiveNumber);
  app.add_option("--tokens", tokens, "rows of every activation (batch × sequence)")
      ->check(CLI::PositiveNumber);
  app.add_option("--d-model", d_model, "model width")->check(CLI::PositiveNumber);
  app.add_option("--d-ff", d_ff, "MLP hidden width")->check(CLI::PositiveNumber);
  if (const auto code = relpos::bench::parse_arguments(app, argc, argv)) return *code;
  mkl_set_num_threads(threads);

  const std::vector<Gemm> gemms = relpos::bench::model_gemms(tokens, d_model, d_ff);

  MKLVersion version;
  mkl_get_version(&version);
  std::mt19937 rng(1234);
  nlohmann::json rows = nlohmann::json::array();
  for (const Gemm& g : gemms) {
    const std::vector<float> a = random_floats(g.m * g.k, rng);
    const std::vector<float> b = random_floats(g.k * g.n, rng);
    const std::vector<std::uint16_t> a16 = rounded(a), b16 = rounded(b);
    std::vector<std::uint16_t> a_round(a.size()), b_round(b.size());
    std::vector<float> c(static_cast<std::size_t>(g.m * g.n));
    const auto ta = g.trans_a ? CblasTrans : CblasNoTrans;
    const auto tb = g.trans_b ? CblasTrans : CblasNoTrans;
    const MKL_INT m = g.m, n = g.n, k = g.k;
    const MKL_INT lda = g.trans_a ? m : k, ldb = g.trans_b ? k : n;
    // Stored operands: A is (k, m) when transposed, else (m, k); B likewise.
    const std::int64_t a_cols = g.trans_a ? g.m : g.k, b_cols = g.trans_b ? g.k : g.n;
    auto bf16 = [&](const std::uint16_t* x, const std::uint16_t* y) {
      cblas_gemm_bf16bf16f32(CblasRowMajor, ta, tb, m, n, k, 1.f, x, lda, y, ldb, 0.f, c.data(), n);
    };
    std::vector<std::uint16_t> b_packed;
    if (!g.trans_a) {  // B is the weight W
      b_packed.resize(cblas_gemm_bf16bf16f32_pack_get_size(CblasBMatrix, m, n, k) /
                      sizeof(std::uint16_t));
      cblas_gemm_bf16bf16f32_pack(CblasRowMajor, CblasBMatrix, tb, m, n, k, b16.data(), ldb,
                                  b_packed.data());
    }
    // (name in the JSON, call), timed in this order, repetition by repetition.
    std::vector<std::pair<std::string, std::function<void()>>> paths{
        {"mkl-sgemm",
         [&] {
           cblas_sgemm(CblasRowMajor, ta, tb, m, n, k, 1.f, a.data(), lda, b.data(), ldb, 0.f,
                       c.data(), n);
         }},
        {"mkl-bf16", [&] { bf16(a16.data(), b16.data()); }},
        {"mkl-bf16-round", [&] {
           round_rows(a, a_cols, a_round);
           round_rows(b, b_cols, b_round);
           bf16(a_round.data(), b_round.data());
         }}};
    if (!b_packed.empty())
      paths.emplace_back("mkl-bf16-packed", [&] {
        cblas_gemm_bf16bf16f32_compute(CblasRowMajor, ta, CblasPacked, m, n, k, 1.f, a16.data(),
                                       lda, b_packed.data(), ldb, 0.f, c.data(), n);
      });
#if RELPOS_HAVE_ONEDNN
    relpos::bench::OnednnMatmul onednn_f32(g.m, g.n, g.k, g.trans_a, g.trans_b, false, a.data(),
                                           b.data(), c.data());
    relpos::bench::OnednnMatmul onednn_bf16(g.m, g.n, g.k, g.trans_a, g.trans_b, true, a16.data(),
                                            b16.data(), c.data());
    paths.emplace_back("onednn-f32", [&] { onednn_f32.run(); });
    paths.emplace_back("onednn-bf16", [&] { onednn_bf16.run(); });
#endif
    std::vector<std::int64_t> calls;
    for (const auto& p : paths) calls.push_back(relpos::bench::calls_for(p.second, seconds));
    std::vector<double> best(paths.size(), 1e30);
    for (int r = 0; r < repetitions; ++r)
      for (std::size_t i = 0; i < paths.size(); ++i)
        best[i] = std::min(best[i], relpos::bench::seconds_per_call(paths[i].second, calls[i]));
    const double flops = 2.0 * double(g.m) * double(g.n) * double(g.k);
    nlohmann::json rates = nlohmann::json::object();
    for (std::size_t i = 0; i < paths.size(); ++i) rates[paths[i].first] = flops / best[i] * 1e-9;
    rows.push_back(relpos::bench::gemm_report_row(g, rates));
  }
  const nlohmann::json report{
      {"framework", "mkl"},
      {"mkl_version", std::to_string(version.MajorVersion) + "." +
                          std::to_string(version.MinorVersion) + " update " +
                          std::to_string(version.UpdateVersion)},
      {"mkl_isa", version.Processor},
      {"threads", mkl_get_max_threads()},
      {"reps", repetitions},
      {"shapes", rows}};
  std::printf("%s\n", report.dump().c_str());
  return 0;
}
