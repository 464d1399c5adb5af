#pragma once
// What the tiled attention's forward and backward share: the geometry of one
// (batch, head) slice and the logits of one (query tile, key tile) block with
// every position term added (see FlashAttentionArgs in autograd/backend.h).
#include <algorithm>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <vector>

#include "autograd/backend.h"
#include "autograd/cpu/bf16_gemm_rows.h"
#include "autograd/cpu/blas_call.h"
#include "autograd/kernel_math/relative_geometry.h"

namespace relpos::cpu {

// Default queries and keys per tile. Transformer-XL's position GEMM per block
// spans query_tile + key_tile - 1 distances, so short, wide tiles keep its
// overhead over the content GEMM small; wide key tiles also make each GEMM call
// large enough to amortise OpenBLAS's packing.
inline constexpr std::int64_t kQueryTile = 32;
inline constexpr std::int64_t kKeyTile = 512;

// Rows of one (b, h) slice of a (B, H, L, C) tensor whose last axis is contiguous.
template <class T>
struct HeadRows {
  T* base = nullptr;
  std::int64_t stride = 0;
  T* row(std::int64_t r) const { return base + r * stride; }
};

template <class T>
HeadRows<T> head_rows(const Tensor& t, std::int64_t b, std::int64_t h) {
  if (!t.defined()) return {};
  const Shape& s = t.strides();
  return {t.data<T>() + b * s[0] + h * s[1], s[2]};
}

// head_rows, read-only.
template <class T>
HeadRows<const T> head_rows_const(const Tensor& t, std::int64_t b, std::int64_t h) {
  const HeadRows<T> rows = head_rows<T>(t, b, h);
  return {rows.base, rows.stride};
}

struct FlashGeometry {
  std::int64_t batch, heads, q_len, k_len, dim, clip, width, n_dist;
  std::int64_t q_tile, k_tile;  // tile sizes
  // Row stride of a block's logits and their gradient, and the words kept before their first
  // row. Transformer-XL's rows are q_tile - 1 words wider and its blocks start q_tile words in,
  // so that the block read with stride s_ld + 1 is its term by distance (FlashBlock::xl_*).
  std::int64_t s_ld, s_front;
  bool causal;
  AttentionChunk chunk;

  explicit FlashGeometry(const FlashAttentionArgs& a)
      : batch(a.q.size(0)),
        heads(a.q.size(1)),
        q_len(a.q.size(2)),
        k_len(a.k.size(2)),
        dim(a.q.size(3)),
        clip(a.clip),
        width(2 * a.clip + 1),
        n_dist(a.q.size(2) + a.k.size(2) - 1),
        q_tile(a.query_tile > 0 ? a.query_tile : kQueryTile),
        k_tile(a.key_tile > 0 ? a.key_tile : kKeyTile),
        s_ld(a.xl_r.defined() ? q_tile + k_tile - 1 : k_tile),
        s_front(a.xl_r.defined() ? q_tile : 0),
        causal(a.causal),
        chunk(a.chunk) {}

  // Whether the (batch, head) tasks are big enough to pay for starting threads.
  bool worth_threads() const { return batch * heads * q_len * k_len * dim > (1 << 18); }
  std::int64_t qpos(std::int64_t i) const { return kernel_math::query_position(i, q_len, k_len); }
  // Keys key_begin(i) <= j < key_end(i) are visible to query i; both never decrease with i.
  std::int64_t key_begin(std::int64_t i) const { return chunk.key_begin(qpos(i)); }
  std::int64_t key_end(std::int64_t i) const {
    return std::min({causal ? qpos(i) + 1 : k_len, chunk.key_end(qpos(i)), k_len});
  }
  // Keys a block from key j0 spans at its widest over the query tiles (cols: this block's).
  // With no band after key 0, blocks start at multiples of k_tile for every query tile, and
  // a causal block gains keys with each later tile; with a band a block serves its own.
  std::int64_t key_extent(std::int64_t j0, std::int64_t cols) const {
    if (key_begin(q_len - 1) > 0) return cols;
    return std::min(k_tile, key_end(q_len - 1) - j0);
  }
  // Index of key j in a vector over relative distances, for query i.
  std::int64_t distance_index(std::int64_t i, std::int64_t j) const {
    return j + kernel_math::distance_offset(i, q_len);
  }
};

// One block: queries [i0, i0 + rows) against keys [j0, j0 + cols).
struct FlashBlock {
  std::int64_t i0, rows, j0, cols;
  // Block row r computes its first visible(r) columns; of those, the first hidden(r)
  // lie before the row's chunk band and are masked like the columns after visible(r).
  std::int64_t visible(const FlashGeometry& g, std::int64_t r) const {
    return std::clamp(g.key_end(i0 + r) - j0, std::int64_t{0}, cols);
  }
  std::int64_t hidden(const FlashGeometry& g, std::int64_t r) const {
    return std::clamp(g.key_begin(i0 + r) - j0, std::int64_t{0}, visible(g, r));
  }
  // Transformer-XL: the distances the block needs, [xl_lo, xl_lo + xl_width), and G (rows,
  // xl_width), the block's query rows against them. Row r's key j0 + c is G's column
  // c + rows - 1 - r (rel_shift), so G(r, x) is the logit s[r * s_ld + x - (rows - 1 - r)]: G is
  // s read from xl_origin with row stride s_ld + 1. G's columns that are no key of row r fall
  // among the s_ld - cols >= rows - 1 words between row r's keys and row r + 1's (before row 0:
  // the s_front words), which nothing else reads.
  std::int64_t xl_lo(const FlashGeometry& g) const { return g.distance_index(i0 + rows - 1, j0); }
  std::int64_t xl_width(const FlashGeometry& g) const {
    return std::min(g.distance_index(i0, j0 + cols - 1), g.k_len - 1) - xl_lo(g) + 1;
  }
  template <class T>
  static T* xl_origin(T* s, std::int64_t rows) {
    return s - (rows - 1);
  }
  // Zeroes the words of a block's dlogits that its G view reads beyond row r's keys: columns
  // [cols, cols + rows - 1) and the last rows - 1 of each row, and the front words.
  template <class T>
  void zero_xl_margins(const FlashGeometry& g, T* ds) const {
    std::fill(ds - (rows - 1), ds, T(0));
    for (std::int64_t r = 0; r < rows; ++r) {
      T* row = ds + r * g.s_ld;
      std::fill(row + cols, row + std::min(cols + rows - 1, g.s_ld), T(0));
      std::fill(row + g.s_ld - (rows - 1), row + g.s_ld, T(0));
    }
  }
};

// Applies `body(j_begin, j_end, bin)` to the three clipped-distance ranges of keys
// [j0, j0 + n) for query i: bin is the fixed Shaw bin (0 or 2k) or -1 for the band,
// where key j uses bin j + band_offset.
template <class Body>
void for_clipped_ranges(const FlashGeometry& g, std::int64_t i, std::int64_t j0, std::int64_t n,
                        Body&& body) {
  const kernel_math::ClippedRanges cr = kernel_math::clipped_ranges(g.qpos(i), g.clip, g.k_len);
  const std::int64_t end = j0 + n;
  const std::int64_t left_end = std::clamp(cr.left_end, j0, end);
  const std::int64_t band_end = std::clamp(cr.band_end, left_end, end);
  if (j0 < left_end) body(j0, left_end, std::int64_t{0}, cr.band_offset);
  if (left_end < band_end) body(left_end, band_end, std::int64_t{-1}, cr.band_offset);
  if (band_end < end) body(band_end, end, 2 * g.clip, cr.band_offset);
}

// FIRE's per-call tables and pieces (autograd/cpu/flash_fire.h).
template <class T>
struct FireTables;

// A product of a block whose B is no key block (the backward's pᵀ·dO and dsᵀ·q;
// Transformer-XL's d(W_r R) += Eᵀ · (q + v)): gemm_rows, or its bf16 form
// (autograd/cpu/bf16_gemm_rows.h) for f32 under Precision::bf16.
template <class T>
void tile_gemm(Precision precision, bool trans_a, bool trans_b, std::int64_t m, std::int64_t n,
               std::int64_t k, T alpha, const T* a, std::int64_t lda, const T* b, std::int64_t ldb,
               T beta, T* c, std::int64_t ldc) {
  if constexpr (std::is_same_v<T, float>) {
    if (precision == Precision::bf16)
      return bf16_gemm_rows(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  }
  gemm_rows<T>(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

// A product of a block whose B is a window of a larger operand that stays the same through
// the kernel call (`whole`: whole_rows rows of stride ldb): op(B) is (n, k) = rows [first,
// first + n) when trans_b, else (k, n) = rows [first, first + k); C = op(A)·op(B) + beta·C.
// gemm_rows, or bf16_gemm_rows_window for f32 under Precision::bf16 (`whole` then is packed
// once per call, not once per block).
template <class T>
void window_gemm(Precision precision, bool trans_a, bool trans_b, std::int64_t m, std::int64_t n,
                 std::int64_t k, T alpha, const T* a, std::int64_t lda, const T* whole,
                 std::int64_t whole_rows, std::int64_t ldb, std::int64_t first, T beta, T* c,
                 std::int64_t ldc) {
  if constexpr (std::is_same_v<T, float>) {
    if (precision == Precision::bf16)
      return bf16_gemm_rows_window(trans_a, trans_b, m, n, k, alpha, a, lda, whole, ldb, whole_rows,
                                   first, beta, c, ldc);
  }
  gemm_rows<T>(trans_a, trans_b, m, n, k, alpha, a, lda, whole + first * ldb, ldb, beta, c, ldc);
}

// A product of a block whose B is its keys' rows of k or v (b: the row of key blk.j0, row
// stride ldb): op(B) is (n = cols keys, k = D) when trans_b (q·kᵀ, dO·vᵀ), else (k = cols
// keys, n = D) (p·v, ds·k). The window is the block's first keys of its extent
// (FlashGeometry::key_extent), so in bf16 a block is packed once per kernel call however
// many query tiles read it.
template <class T>
void key_block_gemm(Precision precision, const FlashGeometry& g, const FlashBlock& blk,
                    bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k, T alpha,
                    const T* a, std::int64_t lda, const T* b, std::int64_t ldb, T beta, T* c,
                    std::int64_t ldc) {
  window_gemm<T>(precision, false, trans_b, m, n, k, alpha, a, lda, b,
                 g.key_extent(blk.j0, blk.cols), ldb, 0, beta, c, ldc);
}

// Per-thread scratch for one block, grown on first use and then reused (no
// steady-state allocation): logits and their gradient (q_tile, s_ld) after s_front
// words, and a block row's FIRE gradient sums per piece (grown by cpu::fire_gradient_row).
template <class T>
struct FlashScratch {
  std::vector<T> logits_words, grad_words;
  std::vector<double> fire_pieces;
  T* logits(const FlashGeometry& g) { return logits_words.data() + g.s_front; }
  T* grad(const FlashGeometry& g) { return grad_words.data() + g.s_front; }
  static FlashScratch& local(const FlashGeometry& g) {
    thread_local FlashScratch scratch;
    const auto words = static_cast<std::size_t>(g.s_front + g.q_tile * g.s_ld);
    if (scratch.logits_words.size() < words) scratch.logits_words.resize(words);
    if (scratch.grad_words.size() < words) scratch.grad_words.resize(words);
    return scratch;
  }
};

// The query rows [i0, i0 + rows) of one (b, h) slice as a block's products read them: the
// content rows q + u and the position rows q + v with Transformer-XL (formed here into
// per-thread buffers, once per query tile), q's own rows otherwise (no copy).
template <class T>
struct QueryTile {
  HeadRows<const T> content, position;  // (rows, D) each; position: XL only
  std::vector<T> content_words, position_words;

  void form(const FlashAttentionArgs& a, const FlashGeometry& g, std::int64_t b, std::int64_t h,
            std::int64_t i0, std::int64_t rows) {
    const HeadRows<const T> q = head_rows_const<T>(a.q, b, h);
    if (!a.xl_r.defined()) {
      content = {q.row(i0), q.stride};
      return;
    }
    const T* u = a.xl_u.data<T>() + h * g.dim;  // (D) of head h
    const T* v = a.xl_v.data<T>() + h * g.dim;
    content_words.resize(rows * g.dim);
    position_words.resize(rows * g.dim);
    if constexpr (std::is_same_v<T, float>) {  // the backward's products take them as B
      bf16_forget_operand(content_words.data());
      bf16_forget_operand(position_words.data());
    }
    for (std::int64_t r = 0; r < rows; ++r) {
      const T* qr = q.row(i0 + r);
      T* cu = content_words.data() + r * g.dim;
      T* pv = position_words.data() + r * g.dim;
#pragma omp simd
      for (std::int64_t d = 0; d < g.dim; ++d) {
        cu[d] = qr[d] + u[d];
        pv[d] = qr[d] + v[d];
      }
    }
    content = {content_words.data(), g.dim};
    position = {position_words.data(), g.dim};
  }
  static QueryTile& local() {
    thread_local QueryTile tile;
    return tile;
  }
};

// s (rows, cols), row stride s_ld = the block's logits; masked entries are -inf (their exp
// is 0, so every later use of the row treats them as absent). qt: the block's query rows
// (QueryTile formed for blk.i0, blk.rows).
// fire: FIRE's tables when the call has that term (null otherwise).
template <class T>
void block_logits(const FlashAttentionArgs& a, const FlashGeometry& g, std::int64_t b,
                  std::int64_t h, const FlashBlock& blk, const QueryTile<T>& qt, T* s,
                  const FireTables<T>* fire) {
  const HeadRows<const T> k = head_rows_const<T>(a.k, b, h);
  const T term_scale = static_cast<T>(a.term_scale);
  // s = scale * q_tile · k_tileᵀ (q + u with XL)
  key_block_gemm<T>(a.precision, g, blk, true, blk.rows, blk.cols, g.dim, static_cast<T>(a.scale),
                    qt.content.base, qt.content.stride, k.row(blk.j0), k.stride, T(0), s, g.s_ld);
  if (a.xl_r.defined()) {
    // s += term_scale · rel_shift(G): G (rows, xl_width) = (q + v)_tile ·
    // (W_r R)[xl_lo .. xl_lo + xl_width)ᵀ, accumulated into s read diagonally (FlashBlock).
    const T* r = a.xl_r.data<T>() + h * g.k_len * g.dim;  // (Lk, D) of head h
    window_gemm<T>(a.precision, false, true, blk.rows, blk.xl_width(g), g.dim, term_scale,
                   qt.position.base, qt.position.stride, r, g.k_len, g.dim, blk.xl_lo(g), T(1),
                   FlashBlock::xl_origin(s, blk.rows), g.s_ld + 1);
  }
  const T* bias = a.distance_bias.defined() ? a.distance_bias.data<T>() + h * g.n_dist : nullptr;
  const HeadRows<const T> clipped = head_rows_const<T>(a.clipped, b, h);  // (Lq, 2k+1)
  for (std::int64_t r = 0; r < blk.rows; ++r) {
    const std::int64_t i = blk.i0 + r, n = blk.visible(g, r);
    T* row = s + r * g.s_ld;
    if (bias) {
      const T* br = bias + g.distance_index(i, blk.j0);
      for (std::int64_t c = 0; c < n; ++c) row[c] += br[c];
    }
    if (clipped.base) {
      const T* cl = clipped.row(i);
      for_clipped_ranges(g, i, blk.j0, n,
                         [&](std::int64_t j_begin, std::int64_t j_end, std::int64_t bin,
                             std::int64_t band_offset) {
                           T* out = row - blk.j0;
                           if (bin >= 0) {
                             const T v = term_scale * cl[bin];
                             for (std::int64_t j = j_begin; j < j_end; ++j) out[j] += v;
                           } else {
                             for (std::int64_t j = j_begin; j < j_end; ++j)
                               out[j] += term_scale * cl[j + band_offset];
                           }
                         });
    }
    if (fire) fire->add_bias(g, h, i, blk.j0, n, row);
    std::fill(row + n, row + blk.cols, -std::numeric_limits<T>::infinity());
    std::fill(row, row + blk.hidden(g, r), -std::numeric_limits<T>::infinity());
  }
}

}  // namespace relpos::cpu
