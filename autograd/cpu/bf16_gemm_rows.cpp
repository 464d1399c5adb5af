// bf16 products of the tiled attention on AMX tiles (autograd/cpu/amx_tile_product.cpp)
// or AVX512-BF16 (vdpbf16ps), with a software fallback. Only this file knows the packed
// layout. AMX reads B as packed below (a tile row is 16 words of one pair row), and A as
// rows of words like the broadcast A, padded to 16 rows and 16 words (pack_a_for_tiles).
//
// Tile layout. vdpbf16ps multiplies two vectors of 32 bf16 as 16 pairs and adds each
// pair's two products to one f32 lane: lane l += x[2l]·y[2l] + x[2l+1]·y[2l+1]. A
// product C (m, n) = Σ_k A(m, k)·B(k, n) therefore walks k two at a time, and every
// operand is packed as 32-bit words that each hold two consecutive k (the even k in
// the low half, the odd k in the high half), rounded to nearest even:
//   A, broadcast: word A[m][kk] = (A(m, 2kk), A(m, 2kk+1)), one word per (row, pair),
//                 copied to all 16 lanes;
//   B, per lane:  word B[kk][n] = (B(2kk, n), B(2kk+1, n)), rows of n padded with zero
//                 words to a multiple of 16, so that 16 neighbouring n load as a vector.
// A missing last k (odd k) packs as 0. Which layout each operand of the attention
// needs, and how it is built from the f32 rows (row stride ld):
//   q_tile·k_blockᵀ, dO_tile·v_blockᵀ (A as is, B transposed):
//     A: the row's floats in order (a row of q is already its pairs, two by two);
//     B: the key rows converted the same way, then 16 keys × 16 words transposed, so
//        that a word row holds one pair of head dimensions for 16 consecutive keys.
//   p·v_block, ds·k_block (A as is, B as is): B interleaves key rows 2kk and 2kk+1,
//     lanes over head dimensions.
//   pᵀ·dO_tile, dsᵀ·q_tile (A transposed, B as is): both interleave pairs of query
//     rows; A's word for (key m, pair kk) is then read at [kk][m].
// The micro-kernel keeps a block of up to 6 rows × 64 columns of C in 24 registers and
// accumulates in f32 from zero; alpha and beta apply when it stores.
#include "autograd/cpu/bf16_gemm_rows.h"

#include <immintrin.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <bit>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "autograd/cpu/amx_tile_product.h"
#include "autograd/cpu/blas_call.h"
#include "autograd/cpu/cpu_features.h"

// The rest of the build keeps its flags; only these functions use AVX512-BF16, and
// they run only after has_avx512_bf16() said yes.
#define RELPOS_BF16_TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16")))

// GCC 12's AVX-512 intrinsics pass an undefined vector as the unused merge source of
// unmasked operations, which -Wmaybe-uninitialized (or, inlined into a loop,
// -Wuninitialized) reports once they are inlined.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif

namespace relpos::cpu {
namespace {

using Word = std::uint32_t;

std::atomic<bool> g_switched_off{false};
std::atomic<bool> g_amx_switched_off{false};

constexpr std::int64_t kRowsPerTile = 6;     // micro-kernel rows of C
constexpr std::int64_t kVectorsPerTile = 4;  // micro-kernel 16-lane vectors of C

std::int64_t round_up16(std::int64_t n) { return (n + 15) / 16 * 16; }

// Mask of the lanes l with first + l < end.
__mmask16 lanes_below(std::int64_t first, std::int64_t end) {
  const std::int64_t n = std::clamp<std::int64_t>(end - first, 0, 16);
  return static_cast<__mmask16>((1u << n) - 1u);
}

// Lanes l with lead <= first + l < end: a vector's lanes that hold columns of a row that
// starts with `lead` zero columns, of `end` in all.
__mmask16 lanes_after_lead(std::int64_t first, std::int64_t lead, std::int64_t end) {
  return static_cast<__mmask16>(lanes_below(first, end) & ~lanes_below(first, lead));
}

// Columns [first, first + 16) of `row` preceded by `lead` (0 or 1) zero columns, of
// width = lead + (the row's columns) in all; lanes beyond width are 0.
RELPOS_BF16_TARGET __m512 load_after_lead(const float* row, std::int64_t first, std::int64_t lead,
                                          std::int64_t width) {
  const __mmask16 mask = lanes_after_lead(first, lead, width);
  if (first >= lead) return _mm512_maskz_loadu_ps(mask, row + (first - lead));
  return _mm512_maskz_expandloadu_ps(mask, row);  // row[0] goes to lane `lead`
}

// Rows [0, rows) of (rows, cols) f32, each after `lead` (0 or 1) zero columns → words
// dst[r * ld + kk], kk < (lead + cols + 1) / 2.
RELPOS_BF16_TARGET void pack_pairs_along_rows(const float* src, std::int64_t src_ld,
                                              std::int64_t rows, std::int64_t cols,
                                              std::int64_t lead, Word* dst, std::int64_t ld) {
  const std::int64_t width = lead + cols, pairs = (width + 1) / 2;
  for (std::int64_t r = 0; r < rows; ++r) {
    const float* row = src + r * src_ld;
    for (std::int64_t c = 0; c < width; c += 32) {
      const __m512 lo = load_after_lead(row, c, lead, width);
      const __m512 hi = load_after_lead(row, c + 16, lead, width);
      const __m512i words = (__m512i)_mm512_cvtne2ps_pbh(hi, lo);
      _mm512_mask_storeu_epi32(dst + r * ld + c / 2, lanes_below(c / 2, pairs), words);
    }
  }
}

// (rows, cols) f32 after `lead` (0 or 1) zero rows → words dst[rr * ld + c] =
// (row 2rr, row 2rr+1 at column c) for rr < (lead + rows + 1) / 2 and c < ld =
// round_up16(cols), zero beyond cols and beyond the rows.
RELPOS_BF16_TARGET void pack_pairs_of_rows(const float* src, std::int64_t src_ld, std::int64_t rows,
                                           std::int64_t cols, std::int64_t lead, Word* dst,
                                           std::int64_t ld) {
  const std::int64_t height = lead + rows;
  const auto row_at = [&](std::int64_t v) -> const float* {
    return v >= lead && v < height ? src + (v - lead) * src_ld : nullptr;
  };
  for (std::int64_t rr = 0; 2 * rr < height; ++rr) {
    const float* even = row_at(2 * rr);
    const float* odd = row_at(2 * rr + 1);
    for (std::int64_t c = 0; c < ld; c += 16) {
      const __mmask16 mask = lanes_below(c, cols);
      __m512i words = _mm512_setzero_si512();
      if (even)
        words = _mm512_cvtepu16_epi32(
            (__m256i)_mm512_cvtneps_pbh(_mm512_maskz_loadu_ps(mask, even + c)));
      if (odd) {
        const __m512i hi = _mm512_cvtepu16_epi32(
            (__m256i)_mm512_cvtneps_pbh(_mm512_maskz_loadu_ps(mask, odd + c)));
        words = _mm512_or_si512(words, _mm512_slli_epi32(hi, 16));
      }
      _mm512_storeu_si512(dst + rr * ld + c, words);
    }
  }
}

// r[i][j] → r[j][i] for 16 vectors of 16 words.
RELPOS_BF16_TARGET void transpose16(__m512i (&r)[16]) {
  __m512i t[16], u[16];
  for (int i = 0; i < 8; ++i) {  // t: rows 2i, 2i+1 interleaved within 128-bit lanes
    t[2 * i] = _mm512_unpacklo_epi32(r[2 * i], r[2 * i + 1]);
    t[2 * i + 1] = _mm512_unpackhi_epi32(r[2 * i], r[2 * i + 1]);
  }
  for (int i = 0; i < 4; ++i) {  // u[4i + c], lane L: rows 4i..4i+3 of column 4L + c
    u[4 * i + 0] = _mm512_unpacklo_epi64(t[4 * i], t[4 * i + 2]);
    u[4 * i + 1] = _mm512_unpackhi_epi64(t[4 * i], t[4 * i + 2]);
    u[4 * i + 2] = _mm512_unpacklo_epi64(t[4 * i + 1], t[4 * i + 3]);
    u[4 * i + 3] = _mm512_unpackhi_epi64(t[4 * i + 1], t[4 * i + 3]);
  }
  for (int c = 0; c < 4; ++c) {  // column 4L + c gathers lane L of u[c], u[4+c], u[8+c], u[12+c]
    const __m512i v0 = _mm512_shuffle_i32x4(u[c], u[4 + c], 0x88);
    const __m512i v1 = _mm512_shuffle_i32x4(u[c], u[4 + c], 0xDD);
    const __m512i w0 = _mm512_shuffle_i32x4(u[8 + c], u[12 + c], 0x88);
    const __m512i w1 = _mm512_shuffle_i32x4(u[8 + c], u[12 + c], 0xDD);
    r[c] = _mm512_shuffle_i32x4(v0, w0, 0x88);
    r[4 + c] = _mm512_shuffle_i32x4(v1, w1, 0x88);
    r[8 + c] = _mm512_shuffle_i32x4(v0, w0, 0xDD);
    r[12 + c] = _mm512_shuffle_i32x4(v1, w1, 0xDD);
  }
}

// (n, k) f32 rows → words dst[kk * ld + j] = (src(j, 2kk), src(j, 2kk+1)) for
// kk < (k + 1) / 2 and j < ld = round_up16(n), zero for j >= n.
RELPOS_BF16_TARGET void pack_pairs_transposed(const float* src, std::int64_t src_ld, std::int64_t n,
                                              std::int64_t k, Word* dst, std::int64_t ld) {
  const std::int64_t pairs = (k + 1) / 2;
  __m512i block[16];
  for (std::int64_t j0 = 0; j0 < ld; j0 += 16) {
    for (std::int64_t c = 0; c < k; c += 32) {  // pairs c/2 .. c/2 + 15
      for (std::int64_t i = 0; i < 16; ++i) {
        if (j0 + i >= n) {
          block[i] = _mm512_setzero_si512();
          continue;
        }
        const float* row = src + (j0 + i) * src_ld;
        const __m512 lo = _mm512_maskz_loadu_ps(lanes_below(c, k), row + c);
        const __m512 hi = _mm512_maskz_loadu_ps(lanes_below(c + 16, k), row + c + 16);
        block[i] = (__m512i)_mm512_cvtne2ps_pbh(hi, lo);
      }
      transpose16(block);
      for (std::int64_t p = 0; p < 16 && c / 2 + p < pairs; ++p)
        _mm512_storeu_si512(dst + (c / 2 + p) * ld + j0, block[p]);
    }
  }
}

// src (rows, cols) words, both multiples of 16 → dst (cols, rows): dst[j * rows + i] =
// src[i * cols + j].
RELPOS_BF16_TARGET void transpose_words(const Word* src, std::int64_t rows, std::int64_t cols,
                                        Word* dst) {
  __m512i block[16];
  for (std::int64_t i0 = 0; i0 < rows; i0 += 16)
    for (std::int64_t j0 = 0; j0 < cols; j0 += 16) {
      for (std::int64_t i = 0; i < 16; ++i)
        block[i] = _mm512_loadu_si512(src + (i0 + i) * cols + j0);
      transpose16(block);
      for (std::int64_t j = 0; j < 16; ++j)
        _mm512_storeu_si512(dst + (j0 + j) * rows + i0, block[j]);
    }
}

// C rows [0, MR) × vectors [0, NV) += or = alpha · Σ_kk A[m][kk] ⊙ B[kk][16v ..], where
// A[m][kk] is a[m * a_m + kk * a_k] and B[kk][n] is b[kk * ldb + n]; `last` masks the
// final vector's lanes.
template <int MR, int NV>
RELPOS_BF16_TARGET void micro_tile(std::int64_t pairs, const Word* a, std::int64_t a_m,
                                   std::int64_t a_k, const Word* b, std::int64_t ldb, float* c,
                                   std::int64_t ldc, float alpha, bool accumulate, __mmask16 last) {
  __m512 acc[MR][NV];
#pragma GCC unroll 8
  for (int m = 0; m < MR; ++m)
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) acc[m][v] = _mm512_setzero_ps();
  for (std::int64_t kk = 0; kk < pairs; ++kk) {
    __m512bh bv[NV];
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) bv[v] = (__m512bh)_mm512_loadu_si512(b + kk * ldb + 16 * v);
#pragma GCC unroll 8
    for (int m = 0; m < MR; ++m) {
      const __m512bh av = (__m512bh)_mm512_set1_epi32(static_cast<int>(a[m * a_m + kk * a_k]));
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) acc[m][v] = _mm512_dpbf16_ps(acc[m][v], av, bv[v]);
    }
  }
  const __m512 scale = _mm512_set1_ps(alpha);
#pragma GCC unroll 8
  for (int m = 0; m < MR; ++m)
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) {
      const __mmask16 mask = v == NV - 1 ? last : __mmask16{0xFFFF};
      float* out = c + m * ldc + 16 * v;
      __m512 x = _mm512_mul_ps(acc[m][v], scale);
      if (accumulate) x = _mm512_add_ps(x, _mm512_maskz_loadu_ps(mask, out));
      _mm512_mask_storeu_ps(out, mask, x);
    }
}

using MicroTile = void (*)(std::int64_t, const Word*, std::int64_t, std::int64_t, const Word*,
                           std::int64_t, float*, std::int64_t, float, bool, __mmask16);

template <int MR>
constexpr std::array<MicroTile, kVectorsPerTile> micro_row() {
  return {micro_tile<MR, 1>, micro_tile<MR, 2>, micro_tile<MR, 3>, micro_tile<MR, 4>};
}

constexpr std::array<std::array<MicroTile, kVectorsPerTile>, kRowsPerTile> kMicroTiles = {
    micro_row<1>(), micro_row<2>(), micro_row<3>(), micro_row<4>(), micro_row<5>(), micro_row<6>()};

// C (m, n) from packed A (word (m, kk) at a[m * a_m + kk * a_k]) and packed B (ldb).
void packed_product(std::int64_t m, std::int64_t n, std::int64_t pairs, const Word* a,
                    std::int64_t a_m, std::int64_t a_k, const Word* b, std::int64_t ldb, float* c,
                    std::int64_t ldc, float alpha, bool accumulate) {
  const std::int64_t vectors = (n + 15) / 16;
  // Column blocks outside, so that one block of B stays in L1 while the rows pass.
  for (std::int64_t v0 = 0; v0 < vectors; v0 += kVectorsPerTile) {
    const std::int64_t nv = std::min(kVectorsPerTile, vectors - v0);
    const __mmask16 last = lanes_below(16 * (v0 + nv - 1), n);
    for (std::int64_t m0 = 0; m0 < m; m0 += kRowsPerTile) {
      const std::int64_t mr = std::min(kRowsPerTile, m - m0);
      kMicroTiles[mr - 1][nv - 1](pairs, a + m0 * a_m, a_m, a_k, b + 16 * v0, ldb,
                                  c + m0 * ldc + 16 * v0, ldc, alpha, accumulate, last);
    }
  }
}

// The packed B operands of the current kernel call on this thread, by address: a key
// block's k and v serve every query tile, a query tile's q and dO every key block, and
// Transformer-XL's W_r R of a head every block of the task.
std::atomic<std::uint64_t> g_kernel_call{0};

struct PackedB {
  const float* src = nullptr;
  std::int64_t src_ld = 0, n = 0, k = 0, ld = 0;
  bool trans = false;
  std::uint64_t call = 0, last_use = 0;
  std::vector<Word> words;  // (k + 1) / 2 rows of ld words, then 16 zero words
};

// B packed for (trans_b, n, k) from b: a cached entry of this call, or a fresh packing
// into the least recently used entry. A transposed packing of more columns serves fewer
// (lanes are independent); any other packing must match exactly, so a cached result has
// the bits of a fresh one. Each query tile of the backward reads three packings per key
// block (k and v transposed, k as is) and two of its own (dO, q): 64 entries hold them for
// up to 20 key blocks (10,240 keys in tiles of 512). With 16, past 4 blocks the tile's
// reads cycled through the LRU order and repacked every block for every query tile.
thread_local std::array<PackedB, 64> t_packed_b;
thread_local std::uint64_t t_packed_b_uses = 0;

const PackedB& packed_b_operand(bool trans_b, std::int64_t n, std::int64_t k, const float* b,
                                std::int64_t ldb) {
  auto& cache = t_packed_b;
  auto& uses = t_packed_b_uses;
  const std::uint64_t call = g_kernel_call.load(std::memory_order_relaxed);
  PackedB* slot = nullptr;
  for (PackedB& e : cache) {
    if (e.call != call || e.src != b || e.src_ld != ldb || e.k != k || e.trans != trans_b) continue;
    if (e.n == n || (trans_b && e.n > n)) {
      e.last_use = ++uses;
      return e;
    }
    slot = &e;  // the same operand, now needed wider: repack it in place
    break;
  }
  if (!slot)
    slot = &*std::min_element(cache.begin(), cache.end(), [](const PackedB& x, const PackedB& y) {
      return x.last_use < y.last_use;
    });
  const std::int64_t pairs = (k + 1) / 2;
  *slot = {b, ldb, n, k, round_up16(n), trans_b, call, ++uses, std::move(slot->words)};
  // The 16 words after the last row let a window of columns that starts anywhere load
  // whole vectors (their extra lanes are masked when C is stored); the 16 zero rows
  // before them let AMX load whole 16-row tiles from any pair (A is zero there).
  slot->words.assign(static_cast<std::size_t>((pairs + 16) * slot->ld + 16), Word{0});
  if (trans_b)  // B is (n, k)
    pack_pairs_transposed(b, ldb, n, k, slot->words.data(), slot->ld);
  else
    pack_pairs_of_rows(b, ldb, k, n, 0, slot->words.data(), slot->ld);
  return *slot;
}

// A (f32; (m, k) or, trans_a, (k, m); after `lead` zero columns of op(A)) packed for
// amx_tile_product: word (r, kk) at dst[r * round_up16(pairs) + kk], zero at kk >= pairs
// and at rows r >= m, round_up16(m) rows.
void pack_a_for_tiles(bool trans_a, std::int64_t m, std::int64_t k, std::int64_t lead,
                      const float* a, std::int64_t lda, std::vector<Word>& dst) {
  const std::int64_t pairs = (lead + k + 1) / 2, ld = round_up16(pairs), rows = round_up16(m);
  dst.resize(static_cast<std::size_t>(rows * ld));
  if (!trans_a) {
    pack_pairs_along_rows(a, lda, m, k, lead, dst.data(), ld);
    for (std::int64_t r = 0; r < m; ++r)
      std::fill(dst.begin() + r * ld + pairs, dst.begin() + (r + 1) * ld, Word{0});
    std::fill(dst.begin() + m * ld, dst.end(), Word{0});
    return;
  }
  // Pairs of A's rows, word (kk, r) at by_pairs[kk * rows + r], then 16 × 16 transposes.
  thread_local std::vector<Word> by_pairs;
  by_pairs.resize(static_cast<std::size_t>(ld * rows));
  pack_pairs_of_rows(a, lda, k, m, lead, by_pairs.data(), rows);
  std::fill(by_pairs.begin() + pairs * rows, by_pairs.end(), Word{0});
  transpose_words(by_pairs.data(), ld, rows, dst.data());
}

// C (m, n) from A (f32, with `lead` zero columns of op(A) before its k) and B packed
// (pairs of its k, from the pair that meets A's first, row stride ldb words).
void product_with_packed_b(bool trans_a, std::int64_t m, std::int64_t n, std::int64_t k,
                           std::int64_t lead, float alpha, const float* a, std::int64_t lda,
                           const Word* b, std::int64_t ldb, float beta, float* c,
                           std::int64_t ldc) {
  thread_local std::vector<Word> packed_a;
  const std::int64_t pairs = (lead + k + 1) / 2;
  if (bf16_products_on_amx()) {
    pack_a_for_tiles(trans_a, m, k, lead, a, lda, packed_a);
    amx_tile_product(m, n, pairs, packed_a.data(), round_up16(pairs), b, ldb, c, ldc, alpha,
                     beta != 0.0f);
    return;
  }
  std::int64_t a_m = pairs, a_k = 1;
  if (trans_a) {  // A is (k, m): pairs of its rows, read at [kk][m]
    a_m = 1;
    a_k = round_up16(m);
    packed_a.resize(static_cast<std::size_t>(pairs * a_k));
    pack_pairs_of_rows(a, lda, k, m, lead, packed_a.data(), a_k);
  } else {
    packed_a.resize(static_cast<std::size_t>(m * pairs));
    pack_pairs_along_rows(a, lda, m, k, lead, packed_a.data(), pairs);
  }
  packed_product(m, n, pairs, packed_a.data(), a_m, a_k, b, ldb, c, ldc, alpha, beta != 0.0f);
}

void native_gemm(bool trans_a, bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k,
                 float alpha, const float* a, std::int64_t lda, const float* b, std::int64_t ldb,
                 float beta, float* c, std::int64_t ldc) {
  const PackedB& packed_b = packed_b_operand(trans_b, n, k, b, ldb);
  product_with_packed_b(trans_a, m, n, k, 0, alpha, a, lda, packed_b.words.data(), packed_b.ld,
                        beta, c, ldc);
}

// bf16_gemm_rows_window on vdpbf16ps: `whole` is packed once per call; a window of its
// columns (trans_b) starts at word `first` of each packed row, a window of its rows at
// the pair that holds row `first`, after one zero column of A when `first` is odd.
void native_gemm_window(bool trans_a, bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k,
                        float alpha, const float* a, std::int64_t lda, const float* whole,
                        std::int64_t ldb, std::int64_t whole_rows, std::int64_t first, float beta,
                        float* c, std::int64_t ldc) {
  if (trans_b) {
    const PackedB& packed = packed_b_operand(true, whole_rows, k, whole, ldb);
    product_with_packed_b(trans_a, m, n, k, 0, alpha, a, lda, packed.words.data() + first,
                          packed.ld, beta, c, ldc);
    return;
  }
  const PackedB& packed = packed_b_operand(false, n, whole_rows, whole, ldb);
  const std::int64_t lead = first % 2;
  product_with_packed_b(trans_a, m, n, k, lead, alpha, a, lda,
                        packed.words.data() + (first - lead) / 2 * packed.ld, packed.ld, beta, c,
                        ldc);
}

// x rounded to the nearest bfloat16 (ties to even), kept as a float.
float round_to_bf16(float x) {
  if (x != x) return x;
  std::uint32_t u = std::bit_cast<std::uint32_t>(x);
  u += 0x7FFFu + ((u >> 16) & 1u);
  return std::bit_cast<float>(u & 0xFFFF0000u);
}

// A (rows, cols) with stride ld, rounded, into `out` (stride cols).
const float* rounded_copy(const float* src, std::int64_t ld, std::int64_t rows, std::int64_t cols,
                          std::vector<float>& out) {
  out.resize(static_cast<std::size_t>(rows * cols));
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t c = 0; c < cols; ++c) out[r * cols + c] = round_to_bf16(src[r * ld + c]);
  return out.data();
}

void software_gemm(bool trans_a, bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k,
                   float alpha, const float* a, std::int64_t lda, const float* b, std::int64_t ldb,
                   float beta, float* c, std::int64_t ldc) {
  thread_local std::vector<float> rounded_a, rounded_b;
  const std::int64_t a_rows = trans_a ? k : m, a_cols = trans_a ? m : k;
  const std::int64_t b_rows = trans_b ? n : k, b_cols = trans_b ? k : n;
  const float* ra = rounded_copy(a, lda, a_rows, a_cols, rounded_a);
  const float* rb = rounded_copy(b, ldb, b_rows, b_cols, rounded_b);
  gemm_rows<float>(trans_a, trans_b, m, n, k, alpha, ra, a_cols, rb, b_cols, beta, c, ldc);
}

}  // namespace

void bf16_begin_kernel_call() { g_kernel_call.fetch_add(1, std::memory_order_relaxed); }

void bf16_forget_operand(const float* b) {
  for (PackedB& e : t_packed_b)
    if (e.src == b) e.src = nullptr;
}

bool bf16_products_native() {
  return has_avx512_bf16() && !g_switched_off.load(std::memory_order_relaxed);
}

bool bf16_products_on_amx() {
  static const bool allowed = [] {
    const char* env = std::getenv("RELPOS_ATTENTION_AMX");
    return !(env && std::strcmp(env, "0") == 0);
  }();
  return allowed && bf16_products_native() && has_amx_bf16() &&
         !g_amx_switched_off.load(std::memory_order_relaxed);
}

void bf16_gemm_rows(bool trans_a, bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k,
                    float alpha, const float* a, std::int64_t lda, const float* b, std::int64_t ldb,
                    float beta, float* c, std::int64_t ldc) {
  if (m == 0 || n == 0) return;
  if (bf16_products_native())
    native_gemm(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  else
    software_gemm(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

void bf16_gemm_rows_window(bool trans_a, bool trans_b, std::int64_t m, std::int64_t n,
                           std::int64_t k, float alpha, const float* a, std::int64_t lda,
                           const float* whole, std::int64_t ldb, std::int64_t whole_rows,
                           std::int64_t first, float beta, float* c, std::int64_t ldc) {
  if (m == 0 || n == 0) return;
  if (bf16_products_native())
    native_gemm_window(trans_a, trans_b, m, n, k, alpha, a, lda, whole, ldb, whole_rows, first,
                       beta, c, ldc);
  else
    software_gemm(trans_a, trans_b, m, n, k, alpha, a, lda, whole + first * ldb, ldb, beta, c, ldc);
}

Bf16InstructionsSwitchedOff::Bf16InstructionsSwitchedOff()
    : was_off_(g_switched_off.exchange(true)) {}

Bf16InstructionsSwitchedOff::~Bf16InstructionsSwitchedOff() { g_switched_off.store(was_off_); }

AmxTilesSwitchedOff::AmxTilesSwitchedOff() : was_off_(g_amx_switched_off.exchange(true)) {}

AmxTilesSwitchedOff::~AmxTilesSwitchedOff() { g_amx_switched_off.store(was_off_); }

}  // namespace relpos::cpu
