// bench_amx_probe: the tiled attention's bf16 block products (cpu::bf16_gemm_rows) on AMX
// tiles (tdpbf16ps, autograd/cpu/amx_tile_product.cpp) against its AVX512-BF16 micro-kernel
// (vdpbf16ps, forced by cpu::AmxTilesSwitchedOff), on the kernel's block shapes, one thread
// (bench/results/xl-floor.md, amx-attention.md). Both paths are the library's own: f32 A
// and B in, f32 C out; B packed once per kernel call, as the kernel does, A per call.
// Usage: bench_amx_probe [--reps N]. Exit 77 (skipped) where bf16_gemm_rows does not run
// on AMX (no AMX-BF16 or AVX512-BF16, or RELPOS_ATTENTION_AMX=0).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "autograd/cpu/bf16_gemm_rows.h"
#include "autograd/random.h"
#include "bench/timing.h"

namespace {

struct Shape {
  int m, n, k;
  const char* what;
};

}  // namespace

int main(int argc, char** argv) {
  int reps = 2000;
  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]) == "--reps" && i + 1 < argc && std::atoi(argv[i + 1]) > 0) {
      reps = std::atoi(argv[++i]);
    } else {
      std::fprintf(stderr, "bench_amx_probe: unknown argument '%s' (usage: [--reps N], N > 0)\n",
                   argv[i]);
      return 2;
    }
  }
  if (!relpos::cpu::bf16_products_on_amx()) {
    std::printf(
        "SKIPPED: bf16_gemm_rows does not run on AMX here (no AMX-BF16 or AVX512-BF16, or "
        "RELPOS_ATTENTION_AMX=0)\n");
    return 77;
  }
  const Shape shapes[] = {{32, 512, 64, "q·kᵀ (32×64)·(64×512)"},
                          {32, 544, 64, "XL (q+v)·R_sliceᵀ (32×64)·(64×544)"},
                          {32, 64, 512, "p·v (32×512)·(512×64)"}};
  relpos::Rng rng(5);
  std::printf(
      "| block product | vdpbf16ps GFLOP/s | AMX GFLOP/s | AMX / vdpbf16ps | max |diff| / max |C| "
      "|\n");
  std::printf("|---|---:|---:|---:|---:|\n");
  for (const Shape& s : shapes) {
    std::vector<float> a(static_cast<std::size_t>(s.m * s.k)),
        b(static_cast<std::size_t>(s.k * s.n));
    for (float& x : a) x = static_cast<float>(rng.normal());
    for (float& x : b) x = static_cast<float>(rng.normal());
    std::vector<float> c_amx(static_cast<std::size_t>(s.m * s.n)), c_ref(c_amx.size());
    auto product = [&](std::vector<float>& c) {
      relpos::cpu::bf16_gemm_rows(false, false, s.m, s.n, s.k, 1.0f, a.data(), s.k, b.data(), s.n,
                                  0.0f, c.data(), s.n);
    };
    relpos::cpu::bf16_begin_kernel_call();
    product(c_amx);  // packs B once, for both paths
    double best_ref = 1e30, best_amx = 1e30;
    for (int round = 0; round < 5; ++round) {  // alternating; the fastest round of each
      const double t0 = relpos::bench::process_cpu_seconds();
      {
        const relpos::cpu::AmxTilesSwitchedOff vdpbf16ps;
        for (int r = 0; r < reps; ++r) product(c_ref);
      }
      const double t1 = relpos::bench::process_cpu_seconds();
      for (int r = 0; r < reps; ++r) product(c_amx);
      const double t2 = relpos::bench::process_cpu_seconds();
      best_ref = std::min(best_ref, t1 - t0);
      best_amx = std::min(best_amx, t2 - t1);
    }
    double diff = 0, scale = 0;
    for (std::size_t i = 0; i < c_ref.size(); ++i) {
      diff = std::max(diff, static_cast<double>(std::abs(c_amx[i] - c_ref[i])));
      scale = std::max(scale, static_cast<double>(std::abs(c_ref[i])));
    }
    const double flops = 2.0 * s.m * s.n * s.k * reps;
    std::printf("| %s | %.1f | %.1f | %.2f× | %.1e |\n", s.what, flops / best_ref / 1e9,
                flops / best_amx / 1e9, best_ref / best_amx, diff / scale);
  }
  return 0;
}
