// AMX block product: C is walked in blocks of up to 32 × 32, each held in up to four
// 16 × 16 f32 tiles (0-3) and summed over k, 32 bf16 (16 words) at a time, from up to two
// A tiles (4-5: 16 rows of 16 words) and two B tiles (6-7: 16 pair rows of 16 columns).
// A block whose rows (columns) fit in 16 uses one row (column) of tiles. The tiles are
// stored to a scratch block and scaled and masked into C with AVX-512, so that partial
// blocks never touch C outside (m, n).
#include "autograd/cpu/amx_tile_product.h"

#include <immintrin.h>

#include <algorithm>

// The rest of the build keeps its flags; these functions run only after
// cpu::has_amx_bf16() (and has_avx512_bf16()) said yes.
#define RELPOS_AMX_TARGET \
  __attribute__((target("amx-tile,amx-bf16,avx512f,avx512bw,avx512vl,avx512bf16")))

// GCC 12's AVX-512 intrinsics pass an undefined vector as the unused merge source of
// unmasked operations, which -Wmaybe-uninitialized reports once they are inlined.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

namespace relpos::cpu {
namespace {

constexpr std::int64_t kTile = 16;  // rows of a tile, and f32 columns (or words) of a row

// The tile configuration (palette 1): tiles 0-7, each 16 rows of 64 bytes.
struct alignas(64) TileConfig {
  std::uint8_t palette = 1, start_row = 0, reserved[14] = {};
  std::uint16_t bytes_per_row[16] = {};
  std::uint8_t rows[16] = {};
};

constexpr TileConfig make_config() {
  TileConfig c;
  for (int t = 0; t < 8; ++t) {
    c.bytes_per_row[t] = 64;
    c.rows[t] = 16;
  }
  return c;
}

alignas(64) constexpr TileConfig kConfig = make_config();

// Rows [0, rows) and columns [0, cols) of a 16 × 16 f32 tile `t` into C (row stride ldc):
// alpha · t, plus C when accumulate.
RELPOS_AMX_TARGET void store_scaled(const float* t, std::int64_t rows, std::int64_t cols, float* c,
                                    std::int64_t ldc, float alpha, bool accumulate) {
  const __mmask16 mask = static_cast<__mmask16>((1u << std::min<std::int64_t>(cols, kTile)) - 1u);
  const __m512 scale = _mm512_set1_ps(alpha);
  for (std::int64_t r = 0; r < std::min<std::int64_t>(rows, kTile); ++r) {
    __m512 x = _mm512_mul_ps(_mm512_loadu_ps(t + r * kTile), scale);
    if (accumulate) x = _mm512_add_ps(x, _mm512_maskz_loadu_ps(mask, c + r * ldc));
    _mm512_mask_storeu_ps(c + r * ldc, mask, x);
  }
}

// One block of C: rows [0, rows) (two row tiles when TwoRows), columns [0, cols) (two
// column tiles when TwoCols); a and b point at the block's first row and column.
template <bool TwoRows, bool TwoCols>
RELPOS_AMX_TARGET void block(std::int64_t rows, std::int64_t cols, std::int64_t padded_pairs,
                             const std::uint32_t* a, std::int64_t lda, const std::uint32_t* b,
                             std::int64_t ldb, float* c, std::int64_t ldc, float alpha,
                             bool accumulate) {
  const std::int64_t a_stride = lda * 4, b_stride = ldb * 4;  // bytes
  _tile_zero(0);
  if constexpr (TwoCols) _tile_zero(1);
  if constexpr (TwoRows) _tile_zero(2);
  if constexpr (TwoRows && TwoCols) _tile_zero(3);
  for (std::int64_t k0 = 0; k0 < padded_pairs; k0 += kTile) {
    _tile_loadd(4, a + k0, a_stride);
    if constexpr (TwoRows) _tile_loadd(5, a + kTile * lda + k0, a_stride);
    _tile_loadd(6, b + k0 * ldb, b_stride);
    if constexpr (TwoCols) _tile_loadd(7, b + k0 * ldb + kTile, b_stride);
    _tile_dpbf16ps(0, 4, 6);
    if constexpr (TwoCols) _tile_dpbf16ps(1, 4, 7);
    if constexpr (TwoRows) _tile_dpbf16ps(2, 5, 6);
    if constexpr (TwoRows && TwoCols) _tile_dpbf16ps(3, 5, 7);
  }
  alignas(64) float out[4][kTile * kTile];
  _tile_stored(0, out[0], kTile * 4);
  if constexpr (TwoCols) _tile_stored(1, out[1], kTile * 4);
  if constexpr (TwoRows) _tile_stored(2, out[2], kTile * 4);
  if constexpr (TwoRows && TwoCols) _tile_stored(3, out[3], kTile * 4);
  store_scaled(out[0], rows, cols, c, ldc, alpha, accumulate);
  if constexpr (TwoCols)
    store_scaled(out[1], rows, cols - kTile, c + kTile, ldc, alpha, accumulate);
  if constexpr (TwoRows)
    store_scaled(out[2], rows - kTile, cols, c + kTile * ldc, ldc, alpha, accumulate);
  if constexpr (TwoRows && TwoCols)
    store_scaled(out[3], rows - kTile, cols - kTile, c + kTile * ldc + kTile, ldc, alpha,
                 accumulate);
}

RELPOS_AMX_TARGET void load_config() { _tile_loadconfig(&kConfig); }
RELPOS_AMX_TARGET void release_tiles() { _tile_release(); }

}  // namespace

void amx_tile_product(std::int64_t m, std::int64_t n, std::int64_t pairs, const std::uint32_t* a,
                      std::int64_t lda, const std::uint32_t* b, std::int64_t ldb, float* c,
                      std::int64_t ldc, float alpha, bool accumulate) {
  if (m <= 0 || n <= 0) return;
  const std::int64_t padded_pairs = (pairs + kTile - 1) / kTile * kTile;
  load_config();
  for (std::int64_t i0 = 0; i0 < m; i0 += 2 * kTile) {
    const std::int64_t rows = std::min(m - i0, 2 * kTile);
    for (std::int64_t j0 = 0; j0 < n; j0 += 2 * kTile) {
      const std::int64_t cols = std::min(n - j0, 2 * kTile);
      const std::uint32_t* ab = a + i0 * lda;
      const std::uint32_t* bb = b + j0;
      float* cb = c + i0 * ldc + j0;
      if (rows > kTile && cols > kTile)
        block<true, true>(rows, cols, padded_pairs, ab, lda, bb, ldb, cb, ldc, alpha, accumulate);
      else if (rows > kTile)
        block<true, false>(rows, cols, padded_pairs, ab, lda, bb, ldb, cb, ldc, alpha, accumulate);
      else if (cols > kTile)
        block<false, true>(rows, cols, padded_pairs, ab, lda, bb, ldb, cb, ldc, alpha, accumulate);
      else
        block<false, false>(rows, cols, padded_pairs, ab, lda, bb, ldb, cb, ldc, alpha, accumulate);
    }
  }
  release_tiles();
}

}  // namespace relpos::cpu
