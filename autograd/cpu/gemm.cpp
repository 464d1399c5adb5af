// GEMM through OpenBLAS, or oneDNN (autograd/cpu/onednn_gemm.h) for bf16 products and, by
// measurement (f32_through_onednn), single f32 products. Batched OpenBLAS calls run one
// single-threaded GEMM per batch entry across OpenMP threads when each GEMM is small;
// large ones use OpenBLAS's own threads.
#include <cblas.h>
#include <omp.h>

#include "autograd/cpu/cpu_backend.h"
#include "autograd/cpu/onednn_gemm.h"

namespace relpos {
namespace {

// Below this many multiply-adds per GEMM, parallelising over the batch beats
// threading inside each GEMM.
constexpr std::int64_t kSmallGemmWork = std::int64_t{1} << 22;

template <class T>
void gemm_one(const GemmArgs& g, const T* a, const T* b, T* c) {
  const auto ta = g.trans_a ? CblasTrans : CblasNoTrans;
  const auto tb = g.trans_b ? CblasTrans : CblasNoTrans;
  const auto m = static_cast<blasint>(g.m), n = static_cast<blasint>(g.n),
             k = static_cast<blasint>(g.k);
  const auto lda = static_cast<blasint>(g.lda), ldb = static_cast<blasint>(g.ldb),
             ldc = static_cast<blasint>(g.ldc);
  if constexpr (std::is_same_v<T, float>) {
    cblas_sgemm(CblasRowMajor, ta, tb, m, n, k, static_cast<float>(g.alpha), a, lda, b, ldb,
                static_cast<float>(g.beta), c, ldc);
  } else {
    cblas_dgemm(CblasRowMajor, ta, tb, m, n, k, g.alpha, a, lda, b, ldb, g.beta, c, ldc);
  }
}

template <class T>
void gemm_typed(const GemmArgs& g) {
  const T* a = static_cast<const T*>(g.a);
  const T* b = static_cast<const T*>(g.b);
  T* c = static_cast<T*>(g.c);
  if (g.batch == 1) {
    gemm_one<T>(g, a, b, c);
    return;
  }
  const bool small = g.m * g.n * g.k < kSmallGemmWork;
  if (small && omp_get_max_threads() > 1) {
    // OpenBLAS's OpenMP build runs single-threaded inside a parallel region.
#pragma omp parallel for schedule(static)
    for (std::int64_t i = 0; i < g.batch; ++i)
      gemm_one<T>(g, a + i * g.stride_a, b + i * g.stride_b, c + i * g.stride_c);
    return;
  }
  for (std::int64_t i = 0; i < g.batch; ++i)
    gemm_one<T>(g, a + i * g.stride_a, b + i * g.stride_b, c + i * g.stride_c);
}

// Which library multiplies an fp32 product. Measured with bench_gemm_precision on the
// 12 GEMMs of bench/results/cpu.md's model (8192 tokens, d_model 256, d_ff 1024: each
// linear layer's x·Wᵀ, dz·W and dzᵀ·x), 2 threads of a Zen 5 EPYC shared with other
// builds (load 11 to 20, so single figures move by 2x; bench/results/bf16.md), GFLOP/s
// over the 12: oneDNN f32 37.2 against OpenBLAS 18.5 with its Haswell kernels (this
// environment's OPENBLAS_CORETYPE), and 17.9 against 9.8 with its SkylakeX (AVX-512)
// kernels; oneDNN was ahead on 10 to 12 of the 12 shapes in each run. Those are single
// (unbatched) products; batches of small products (attention's per-head products off the
// flash path) were not measured and stay with OpenBLAS's per-entry parallel loop above.
// f64 (the gradchecks) always uses OpenBLAS.
// oneMKL (PyPI's mkl-devel 2025.3: cblas_sgemm, and cblas_gemm_bf16bf16f32 on its AMX
// kernels) was measured on the same 12 GEMMs, interleaved with oneDNN's primitive in one
// process, 2 threads of the AMX Xeon, two runs (bench/gemm_mkl.py;
// bench/results/gemm-mkl.md): over the 12, MKL sgemm ran 0.95x and 0.98x oneDNN f32, and
// MKL bf16 0.78x and 0.72x the raw oneDNN bf16 primitive (1.04x and 1.06x with the weight
// packed in MKL's layout, on the 8 products that have a weight). Nowhere near the 1.3x that
// would pay for a second GEMM library, so no product goes to MKL; bench_gemm_mkl stays as
// the probe to run again on another CPU.
// bf16 products stay on oneDNN's matmul primitive (onednn_gemm.cpp). Timed in one process
// with torch.matmul bf16 (bench/gemm_in_torch.py, AMX Xeon, 1 and 2 threads), they ran
// 0.67-0.80 of its rate over the 12; oneDNN 2.6's inner product with W reordered into its
// blocked layout ran 1.07-1.32x the matmul in 11 of 14 such runs and 0.82x in 3, but the bf16
// training step at 2 threads was slower with it whenever a neighbour held a core (5 of 5
// such steps) and level or faster in the 2 clean pairs, so it is not used
// (bench/results/gemm-gap.md).
bool f32_through_onednn(const GemmArgs& args) { return cpu::onednn_built() && args.batch == 1; }

}  // namespace

void CpuBackend::gemm(const GemmArgs& args) {
  if (args.m == 0 || args.n == 0 || args.batch == 0) return;
  if (args.dtype == DType::f32 && (args.precision == Precision::bf16 || f32_through_onednn(args))) {
    cpu::onednn_gemm(args);
    return;
  }
  dispatch_floating(args.dtype, [&](auto zero) { gemm_typed<decltype(zero)>(args); });
}

}  // namespace relpos
