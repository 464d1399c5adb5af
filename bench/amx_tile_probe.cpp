// bench_amx_probe: how much faster AMX tiles (tdpbf16ps) would run the tiled attention's
// block products than its AVX512-BF16 micro-kernel (cpu::bf16_gemm_rows, vdpbf16ps), on
// the kernel's block shapes, one thread (bench/results/xl-floor.md). A measurement for
// deciding on AMX inside the tiled attention, not a kernel: the AMX product here handles
// only the sizes below (multiples of 32) and C = A·B.
// Both products take f32 A and B and write f32 C. B is converted once, as the kernel caches
// its B operands for a whole call. A is converted per call, as the kernel packs it per block.
// Usage: bench_amx_probe [--reps N]. Exit 77 (skipped) without AMX-BF16 or AVX512-BF16.
#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "autograd/cpu/bf16_gemm_rows.h"
#include "autograd/cpu/cpu_features.h"
#include "autograd/random.h"
#include "bench/timing.h"

namespace {

#define PROBE_AMX_TARGET \
  __attribute__((target("amx-tile,amx-bf16,avx512f,avx512bw,avx512vl,avx512bf16")))

// The tile configuration (palette 1): tiles 0-3 hold C (16 rows of 16 f32), 4-5 A (16 rows
// of 32 bf16), 6-7 B (16 pairs of rows of 16 bf16 pairs).
struct alignas(64) TileConfig {
  std::uint8_t palette = 1, start_row = 0, reserved[14] = {};
  std::uint16_t bytes_per_row[16] = {};
  std::uint8_t rows[16] = {};
};

PROBE_AMX_TARGET void load_tile_config() {
  static TileConfig config = [] {
    TileConfig c;
    for (int t = 0; t < 8; ++t) {
      c.bytes_per_row[t] = 64;
      c.rows[t] = 16;
    }
    return c;
  }();
  _tile_loadconfig(&config);
}

std::uint16_t round_to_bf16(float f) {
  std::uint32_t u = 0;
  std::memcpy(&u, &f, sizeof u);
  u += 0x7fff + ((u >> 16) & 1);  // to nearest even
  return static_cast<std::uint16_t>(u >> 16);
}

// B (k, n) f32 -> pairs of rows: word (kk, j) = (B(2kk, j), B(2kk + 1, j)), as tdpbf16ps reads B.
std::vector<std::uint16_t> pack_b(const std::vector<float>& b, int k, int n) {
  std::vector<std::uint16_t> packed(static_cast<std::size_t>(k * n));
  for (int r = 0; r < k; ++r)
    for (int j = 0; j < n; ++j)
      packed[(r / 2) * n * 2 + j * 2 + r % 2] = round_to_bf16(b[r * n + j]);
  return packed;
}

// C (m, n) = A (m, k) · B, m, n, k multiples of 32: A rounded to bf16 rows into a_words, then
// 32 × 32 blocks of C, each from four tiles.
PROBE_AMX_TARGET void amx_product(int m, int n, int k, const float* a, const std::uint16_t* b_pairs,
                                  float* c, std::uint16_t* a_words) {
  for (int r = 0; r < m; ++r)
    for (int kk = 0; kk < k; kk += 32) {
      const __m512 lo = _mm512_loadu_ps(a + r * k + kk), hi = _mm512_loadu_ps(a + r * k + kk + 16);
      _mm512_storeu_si512(a_words + r * k + kk, (__m512i)_mm512_cvtne2ps_pbh(hi, lo));
    }
  for (int i0 = 0; i0 < m; i0 += 32)
    for (int j0 = 0; j0 < n; j0 += 32) {
      _tile_zero(0);
      _tile_zero(1);
      _tile_zero(2);
      _tile_zero(3);
      for (int k0 = 0; k0 < k; k0 += 32) {
        _tile_loadd(4, a_words + i0 * k + k0, k * 2);
        _tile_loadd(5, a_words + (i0 + 16) * k + k0, k * 2);
        _tile_loadd(6, b_pairs + (k0 / 2) * n * 2 + j0 * 2, n * 4);
        _tile_loadd(7, b_pairs + (k0 / 2) * n * 2 + (j0 + 16) * 2, n * 4);
        _tile_dpbf16ps(0, 4, 6);
        _tile_dpbf16ps(1, 4, 7);
        _tile_dpbf16ps(2, 5, 6);
        _tile_dpbf16ps(3, 5, 7);
      }
      _tile_stored(0, c + i0 * n + j0, n * 4);
      _tile_stored(1, c + i0 * n + j0 + 16, n * 4);
      _tile_stored(2, c + (i0 + 16) * n + j0, n * 4);
      _tile_stored(3, c + (i0 + 16) * n + j0 + 16, n * 4);
    }
}

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
  if (!relpos::cpu::has_amx_bf16() || !relpos::cpu::has_avx512_bf16()) {
    std::printf("SKIPPED: this CPU (or its kernel) offers no AMX-BF16 or no AVX512-BF16\n");
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
    std::vector<std::uint16_t> a_words(a.size());
    const std::vector<std::uint16_t> b_pairs = pack_b(b, s.k, s.n);
    auto reference = [&] {
      relpos::cpu::bf16_gemm_rows(false, false, s.m, s.n, s.k, 1.0f, a.data(), s.k, b.data(), s.n,
                                  0.0f, c_ref.data(), s.n);
    };
    auto amx = [&] {
      amx_product(s.m, s.n, s.k, a.data(), b_pairs.data(), c_amx.data(), a_words.data());
    };
    relpos::cpu::bf16_begin_kernel_call();
    reference();  // packs B once
    double best_ref = 1e30, best_amx = 1e30;
    for (int round = 0; round < 5; ++round) {  // alternating; the fastest round of each
      const double t0 = relpos::bench::process_cpu_seconds();
      for (int r = 0; r < reps; ++r) reference();
      const double t1 = relpos::bench::process_cpu_seconds();
      load_tile_config();
      for (int r = 0; r < reps; ++r) amx();
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
