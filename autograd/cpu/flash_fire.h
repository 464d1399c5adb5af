#pragma once
// FIRE's bias inside the tiled attention (autograd/fire_terms.h; docs/relative-kernels.md,
// "FIRE"). Per call, FireTables holds what depends on one index only: psi(d) for each
// distance and 1/psi(max(i, threshold)) for each query row. Per block row, the kernel
// forms the row's MLP inputs x = psi(i - j) / psi(max(i, threshold)) and evaluates the
// head's MLP on them (forward), or backpropagates the row's logit gradients through it
// into per-task sums (backward). Nothing larger than a block row is ever formed.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "autograd/cpu/flash_tile.h"
#include "autograd/fire_terms.h"

namespace relpos::cpu {

template <class T>
struct FireTables {
  std::int64_t hidden = 0;  // 0: no FIRE term
  const T *w1 = nullptr, *b1 = nullptr, *w2 = nullptr;
  T c = 0, threshold = 0;
  std::vector<T> psi;       // (Lk): psi(d) = log(1 + c d), d = 0 .. Lk-1
  std::vector<T> dpsi;      // (Lk): d psi(d) / dc = d / (1 + c d)
  std::vector<T> inv_norm;  // (Lq): 1 / psi(m_i), m_i = max(i, threshold)
  std::vector<T> norm_c;    // (Lq): (d psi(m_i) / dc) / psi(m_i)
  std::vector<T> norm_thr;  // (Lq): (d psi(m_i) / d threshold) / psi(m_i)

  FireTables(const FireTerms& f, const FlashGeometry& g) {
    if (!f.defined()) return;
    hidden = f.w1.size(0);
    w1 = f.w1.data<T>();
    b1 = f.b1.data<T>();
    w2 = f.w2.data<T>();
    c = f.c.data<T>()[0];
    threshold = f.threshold.data<T>()[0];
    psi.resize(g.k_len);
    dpsi.resize(g.k_len);
    for (std::int64_t d = 0; d < g.k_len; ++d) {
      const T dist = static_cast<T>(d);
      psi[d] = std::log1p(c * dist);
      dpsi[d] = dist / (T(1) + c * dist);
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
  }
  bool defined() const { return hidden > 0; }

  // x (n): the MLP inputs of query row i against keys j0 .. j0+n-1 (all past keys).
  void inputs(const FlashGeometry& g, std::int64_t i, std::int64_t j0, std::int64_t n, T* x) const {
    const T* p = psi.data() + (g.qpos(i) - j0);  // p[-c] = psi(qpos - (j0 + c))
    const T inv = inv_norm[i];
    for (std::int64_t col = 0; col < n; ++col) x[col] = p[-col] * inv;
  }

  // row[c] += f_h(x[c]) for the n visible keys of query row i from key j0; x: scratch (n).
  void add_bias(const FlashGeometry& g, std::int64_t h, std::int64_t i, std::int64_t j0,
                std::int64_t n, T* x, T* row) const {
    inputs(g, i, j0, n, x);
    const T* w2h = w2 + h * hidden;
    for (std::int64_t k = 0; k < hidden; ++k) {
      const T a = w1[k], b = b1[k], w = w2h[k];
#pragma omp simd
      for (std::int64_t col = 0; col < n; ++col) row[col] += w * std::max(a * x[col] + b, T(0));
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

// Backpropagates ds (n), the logit gradients of query row i against keys j0 .. j0+n-1,
// through f_h and x into the sums; x and dx: scratch (n).
template <class T>
void fire_gradient_row(const FireTables<T>& t, const FlashGeometry& g, std::int64_t h,
                       std::int64_t i, std::int64_t j0, std::int64_t n, const T* ds, T* x, T* dx,
                       const FireGradSums& sums) {
  t.inputs(g, i, j0, n, x);
  std::fill(dx, dx + n, T(0));
  const T* w2h = t.w2 + h * t.hidden;
  for (std::int64_t k = 0; k < t.hidden; ++k) {
    const T a = t.w1[k], b = t.b1[k], w = w2h[k];
    // Sums of ds·relu(pre), g·x, g with g = ds·w·[pre > 0], in f64: each row's ds sum to
    // zero, so these are small differences of large terms.
    double act = 0, gx = 0, gsum = 0;
#pragma omp simd reduction(+ : act, gx, gsum)
    for (std::int64_t c = 0; c < n; ++c) {
      const T pre = a * x[c] + b;
      const T on = pre > T(0) ? T(1) : T(0);
      const T gc = on * w * ds[c];
      act += ds[c] * pre * on;
      gx += gc * x[c];
      gsum += gc;
      dx[c] += gc * a;
    }
    sums.w2[k] += act;
    sums.w1[k] += gx;
    sums.b1[k] += gsum;
  }
  // x = psi(qpos - j) / psi(m_i): dx/dc = dpsi(d) / psi(m_i) - x · norm_c[i],
  // dx/dthreshold = -x · norm_thr[i].
  const T* dp = t.dpsi.data() + (g.qpos(i) - j0);
  double through_psi = 0, through_norm = 0;
#pragma omp simd reduction(+ : through_psi, through_norm)
  for (std::int64_t c = 0; c < n; ++c) {
    through_psi += dx[c] * dp[-c];
    through_norm += dx[c] * x[c];
  }
  *sums.c += through_psi * static_cast<double>(t.inv_norm[i]) -
             through_norm * static_cast<double>(t.norm_c[i]);
  *sums.threshold -= through_norm * static_cast<double>(t.norm_thr[i]);
}

}  // namespace relpos::cpu
