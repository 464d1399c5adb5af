#pragma once
// FIRE's bias inside the tiled attention (autograd/fire_terms.h; docs/relative-kernels.md,
// "FIRE in the tiled kernel"). f_h(x) = Σ_k w2[h,k] relu(w1_k x + b1_k) is piecewise linear
// in its scalar input, and along a query row x = psi(i - j) / psi(max(i, threshold)) never
// increases with the key j, so each hidden unit switches on or off at most once per row.
// FireTables cuts every row into pieces of keys between those switches, once per call;
// on a piece f_h is slope·x + offset. The forward adds that per key instead of the MLP; the
// backward sums the logit gradients per piece and hands each unit the sums of the pieces
// where it is on. Nothing larger than the per-row pieces is formed.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "autograd/cpu/flash_tile.h"
#include "autograd/fire_terms.h"

namespace relpos::cpu {

template <class T>
struct FireTables {
  std::int64_t hidden = 0, heads = 0;  // hidden 0: no FIRE term
  const T *w1 = nullptr, *b1 = nullptr, *w2 = nullptr;
  T c = 0, threshold = 0;
  // (Lk) each, by key offset from the end, so that a row's keys read them forwards:
  // psi_back[Lk-1-d] = psi(d) = log(1 + c d), dpsi_back[Lk-1-d] = d psi(d)/dc = d/(1 + c d).
  std::vector<T> psi_back, dpsi_back;
  std::vector<T> inv_norm;  // (Lq): 1 / psi(m_i), m_i = max(i, threshold)
  std::vector<T> norm_c;    // (Lq): (d psi(m_i) / dc) / psi(m_i)
  std::vector<T> norm_thr;  // (Lq): (d psi(m_i) / d threshold) / psi(m_i)
  // Row i's keys 0 .. qpos(i) are cut into the pieces first_piece[i] .. first_piece[i+1]-1;
  // piece p starts at key piece_key[p] and ends where the row's next piece starts (the last
  // at qpos(i) + 1). On piece p, f_h(x) = slope[p, h] · x + offset[p, h].
  std::vector<std::int64_t> first_piece;  // (Lq + 1)
  std::vector<std::int64_t> piece_key;    // (pieces)
  std::vector<T> slope, offset;           // (pieces, H)
  // (Lq, hidden, 2): unit k is on (w1_k x + b1_k > 0) on row i's pieces [lo, hi), counted
  // from the row's first; lo == hi when it is off on the whole row.
  std::vector<std::int32_t> unit_pieces;

  FireTables(const FireTerms& f, const FlashGeometry& g) {
    if (!f.defined()) return;
    hidden = f.w1.size(0);
    heads = f.w2.size(0);
    w1 = f.w1.data<T>();
    b1 = f.b1.data<T>();
    w2 = f.w2.data<T>();
    c = f.c.data<T>()[0];
    threshold = f.threshold.data<T>()[0];
    psi_back.resize(g.k_len);
    dpsi_back.resize(g.k_len);
    for (std::int64_t d = 0; d < g.k_len; ++d) {
      const T dist = static_cast<T>(d);
      psi_back[g.k_len - 1 - d] = std::log1p(c * dist);
      dpsi_back[g.k_len - 1 - d] = dist / (T(1) + c * dist);
    }
    inv_norm.resize(g.q_len);
    norm_c.resize(g.q_len);
    norm_thr.resize(g.q_len);
    for (std::int64_t i = 0; i < g.q_len; ++i) {
      const T pos = static_cast<T>(g.qpos(i));
      const bool clamped = pos < threshold;
      const T m = clamped ? threshold : pos;
      inv_norm[i] = T(1) / std::log1p(c * m);
      norm_c[i] = m / (T(1) + c * m) * inv_norm[i];
      norm_thr[i] = clamped ? c / (T(1) + c * m) * inv_norm[i] : T(0);
    }
    cut_pieces(g);
  }
  bool defined() const { return hidden > 0; }

  // p[col] = psi(qpos(i) - (j0 + col)) (and its derivative by c) for keys j0 + col <= qpos(i).
  const T* psi_of(const FlashGeometry& g, std::int64_t i, std::int64_t j0) const {
    return psi_back.data() + (g.k_len - 1 - g.qpos(i) + j0);
  }
  const T* dpsi_of(const FlashGeometry& g, std::int64_t i, std::int64_t j0) const {
    return dpsi_back.data() + (g.k_len - 1 - g.qpos(i) + j0);
  }
  // The MLP input of query row i and key j <= qpos(i).
  T input(const FlashGeometry& g, std::int64_t i, std::int64_t j) const {
    return psi_of(g, i, j)[0] * inv_norm[i];
  }

  // Applies body(p, begin, end) to the pieces p of row i that meet keys [j0, j0 + n), with
  // [begin, end) the columns (keys from j0) they share; p counts from the row's first piece.
  template <class Body>
  void for_pieces(std::int64_t i, std::int64_t j0, std::int64_t n, Body&& body) const {
    const std::int64_t* key = piece_key.data() + first_piece[i];
    const std::int64_t count = first_piece[i + 1] - first_piece[i], end = j0 + n;
    // The last piece that starts at or before j0 (the first starts at key 0).
    std::int64_t p = std::upper_bound(key, key + count, j0) - key - 1;
    for (; p < count && key[p] < end; ++p) {
      const std::int64_t stop = p + 1 < count ? std::min(key[p + 1], end) : end;
      body(p, std::max(key[p], j0) - j0, stop - j0);
    }
  }

  // row[col] += f_h(x) for the n visible keys of query row i from key j0.
  void add_bias(const FlashGeometry& g, std::int64_t h, std::int64_t i, std::int64_t j0,
                std::int64_t n, T* row) const {
    const T* ps = psi_of(g, i, j0);
    const T inv = inv_norm[i];
    const T* row_slope = slope.data() + first_piece[i] * heads + h;
    const T* row_offset = offset.data() + first_piece[i] * heads + h;
    for_pieces(i, j0, n, [&](std::int64_t p, std::int64_t begin, std::int64_t end) {
      const T a = row_slope[p * heads], b = row_offset[p * heads];
#pragma omp simd
      for (std::int64_t col = begin; col < end; ++col) row[col] += a * (ps[col] * inv) + b;
    });
  }

 private:
  // Fills the pieces and unit_pieces, row by row. Serial: it costs O(Lq·hidden·(log Lk +
  // hidden·H)), and two more thread starts per call measured dearer than that on a loaded
  // machine (docs/results/fire.md).
  void cut_pieces(const FlashGeometry& g) {
    unit_pieces.resize(g.q_len * hidden * 2);
    first_piece.assign(g.q_len + 1, 0);
    std::vector<std::int64_t> sw(hidden), keys;
    for (std::int64_t i = 0; i < g.q_len; ++i) {
      // sw[k]: the first key of row i where unit k's state differs from its state at key 0,
      // or qpos(i) + 1 when it never does. keys: 0 and the distinct switch keys, in order.
      for (std::int64_t k = 0; k < hidden; ++k) sw[k] = switch_of(g, i, k);
      keys.assign(1, 0);
      for (std::int64_t k = 0; k < hidden; ++k)
        if (sw[k] <= g.qpos(i)) keys.push_back(sw[k]);
      std::sort(keys.begin() + 1, keys.end());
      keys.erase(std::unique(keys.begin() + 1, keys.end()), keys.end());
      first_piece[i + 1] = first_piece[i] + static_cast<std::int64_t>(keys.size());
      piece_key.insert(piece_key.end(), keys.begin(), keys.end());
      fill_row(g, i, sw.data());
    }
  }

  // Whether unit k is on at key j of row i; for a fixed unit and row it changes at most once
  // as j grows (x never increases, and rounding keeps w1_k x + b1_k monotone in x).
  bool on(const FlashGeometry& g, std::int64_t k, std::int64_t i, std::int64_t j) const {
    return w1[k] * input(g, i, j) + b1[k] > T(0);
  }

  std::int64_t switch_of(const FlashGeometry& g, std::int64_t i, std::int64_t k) const {
    const std::int64_t last = g.qpos(i);
    const bool first_state = on(g, k, i, 0);
    if (on(g, k, i, last) == first_state) return last + 1;
    std::int64_t lo = 0, hi = last;  // state at lo: first_state; at hi: the other
    while (hi - lo > 1) {
      const std::int64_t mid = lo + (hi - lo) / 2;
      (on(g, k, i, mid) == first_state ? lo : hi) = mid;
    }
    return hi;
  }

  // Row i's unit ranges and each piece's slope and offset (sums over the units on there, in
  // unit order), given its switch keys sw and its piece keys (already in piece_key).
  void fill_row(const FlashGeometry& g, std::int64_t i, const std::int64_t* sw) {
    const std::int64_t base = first_piece[i], count = first_piece[i + 1] - base;
    const std::int64_t* key = piece_key.data() + base;
    slope.resize((base + count) * heads, T(0));
    offset.resize((base + count) * heads, T(0));
    std::int32_t* units = unit_pieces.data() + i * hidden * 2;
    for (std::int64_t k = 0; k < hidden; ++k) {
      // The piece where unit k switches (count when it never does).
      const auto at = static_cast<std::int32_t>(std::lower_bound(key, key + count, sw[k]) - key);
      const bool first_state = on(g, k, i, 0);
      units[2 * k] = first_state ? 0 : at;
      units[2 * k + 1] = first_state ? at : static_cast<std::int32_t>(count);
    }
    for (std::int64_t p = 0; p < count; ++p) {
      T* a = slope.data() + (base + p) * heads;
      T* b = offset.data() + (base + p) * heads;
      for (std::int64_t k = 0; k < hidden; ++k) {
        if (p < units[2 * k] || p >= units[2 * k + 1]) continue;
        for (std::int64_t h = 0; h < heads; ++h) {
          a[h] += w2[h * hidden + k] * w1[k];
          b[h] += w2[h * hidden + k] * b1[k];
        }
      }
    }
  }
};

// One (batch, head) task's FIRE gradient sums, in f64: w1 and b1 (hidden each), head h's
// row of w2 (hidden), then c and threshold.
struct FireGradSums {
  double *w1 = nullptr, *b1 = nullptr, *w2 = nullptr, *c = nullptr, *threshold = nullptr;
  static std::int64_t size(std::int64_t hidden) { return 3 * hidden + 2; }
  FireGradSums() = default;
  FireGradSums(double* base, std::int64_t hidden)
      : w1(base), b1(base + hidden), w2(base + 2 * hidden), c(w2 + hidden), threshold(c + 1) {}
};

// Adds the gradients that ds (n), the logit gradients of query row i against keys
// j0 .. j0+n-1, send through f_h and x into the sums; scratch: grown to 2 (pieces + 1).
// Per piece: S0 = Σ ds, S1 = Σ ds·x, S2 = Σ ds·dpsi, in T within the piece (vector lanes of
// at most k_tile / 16 terms) and in f64 beyond: each row's ds sum to zero, so the sums over
// many rows are small differences of large terms. (Against the f64 composed path at L = 560,
// f32 with f64 lanes measured the same errors for w1, b1, c, 3.2e-3, 2.6e-3, 7.6e-4, and
// 2.5e-6 instead of 3.7e-6 for w2: the error comes from ds's own rounding.) A unit on over
// pieces P gets w2[h,k] += w1_k S1(P) + b1_k S0(P), w1_k += w2[h,k] S1(P),
// b1_k += w2[h,k] S0(P); and dLoss/dx = ds·slope reaches c and the threshold through
// x = psi(qpos - j) / psi(m_i).
template <class T>
void fire_gradient_row(const FireTables<T>& t, const FlashGeometry& g, std::int64_t h,
                       std::int64_t i, std::int64_t j0, std::int64_t n, const T* ds,
                       std::vector<double>& scratch, const FireGradSums& sums) {
  if (n <= 0) return;
  const auto row_pieces = static_cast<std::size_t>(t.first_piece[i + 1] - t.first_piece[i]);
  if (scratch.size() < 2 * (row_pieces + 1)) scratch.resize(2 * (row_pieces + 1));
  // cum0, cum1 [p - first + 1]: S0, S1 summed over the block's pieces first .. p; [0] = 0.
  double* cum0 = scratch.data();
  double* cum1 = cum0 + row_pieces + 1;
  cum0[0] = cum1[0] = 0.0;
  const T* ps = t.psi_of(g, i, j0);
  const T* dp = t.dpsi_of(g, i, j0);
  const T inv = t.inv_norm[i];
  const T* row_slope = t.slope.data() + t.first_piece[i] * t.heads + h;
  std::int64_t first = -1, last = -1;
  double through_psi = 0, through_norm = 0;
  t.for_pieces(i, j0, n, [&](std::int64_t p, std::int64_t begin, std::int64_t end) {
    if (first < 0) first = p;
    last = p;
    T s0 = 0, s1 = 0, s2 = 0;
#pragma omp simd reduction(+ : s0, s1, s2)
    for (std::int64_t col = begin; col < end; ++col) {
      s0 += ds[col];
      s1 += ds[col] * (ps[col] * inv);
      s2 += ds[col] * dp[col];
    }
    const std::int64_t at = p - first + 1;
    cum0[at] = cum0[at - 1] + s0;
    cum1[at] = cum1[at - 1] + s1;
    const double a = static_cast<double>(row_slope[p * t.heads]);
    through_psi += a * s2;
    through_norm += a * s1;
  });
  const std::int32_t* units = t.unit_pieces.data() + i * t.hidden * 2;
  const T* w2h = t.w2 + h * t.hidden;
  for (std::int64_t k = 0; k < t.hidden; ++k) {
    const std::int64_t lo = std::max<std::int64_t>(units[2 * k], first) - first;
    const std::int64_t hi = std::min<std::int64_t>(units[2 * k + 1], last + 1) - first;
    if (lo >= hi) continue;
    const double s0 = cum0[hi] - cum0[lo], s1 = cum1[hi] - cum1[lo];
    const double w = static_cast<double>(w2h[k]);
    sums.w2[k] += static_cast<double>(t.w1[k]) * s1 + static_cast<double>(t.b1[k]) * s0;
    sums.w1[k] += w * s1;
    sums.b1[k] += w * s0;
  }
  // x = psi(qpos - j) / psi(m_i): dx/dc = dpsi(d) / psi(m_i) - x · norm_c[i],
  // dx/dthreshold = -x · norm_thr[i].
  *sums.c +=
      through_psi * static_cast<double>(inv) - through_norm * static_cast<double>(t.norm_c[i]);
  *sums.threshold -= through_norm * static_cast<double>(t.norm_thr[i]);
}

}  // namespace relpos::cpu
