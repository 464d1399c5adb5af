// Tiled attention backward on the CPU: each (batch, head) task recomputes its
// blocks' probabilities from the saved log-sum-exp and accumulates dq, dk, dv and
// the position terms' gradients block by block. Gradients of tables shared by
// the batch (distance bias, XL's u, v and W_r R) are written per task and summed over the
// batch afterwards in a fixed order, so results do not depend on threading.
#include <vector>

#include "autograd/cpu/cpu_backend.h"
#include "autograd/cpu/fast_exp.h"
#include "autograd/cpu/flash_fire.h"
#include "autograd/cpu/flash_tile.h"
#include "autograd/cpu/parallel.h"

namespace relpos {
namespace {

using cpu::FlashBlock;
using cpu::FlashGeometry;

struct BackwardTensors {
  const FlashAttentionArgs& a;
  const Tensor& out;
  const Tensor& lse;
  const Tensor& grad_out;
  const FlashAttentionGrads& grads;
  Tensor bias_partial;  // f64 (B, H, Lq+Lk-1) or undefined
  Tensor r_partial;     // (B, H, Lk, D) or undefined
  Tensor u_partial;     // f64 (B, H, D): Σ over the task's queries of d(q + u), or undefined
  Tensor v_partial;     // f64 (B, H, D): likewise of d(q + v), or undefined
  Tensor fire_partial;  // f64 (B, H, 3·hidden + 2): cpu::FireGradSums per task, or undefined
};

// Zeroes rows [0, n) of a head slice, `cols` wide.
template <class T>
void zero_rows(const cpu::HeadRows<T>& rows, std::int64_t n, std::int64_t cols) {
  if (!rows.base) return;
  for (std::int64_t r = 0; r < n; ++r) std::fill(rows.row(r), rows.row(r) + cols, T(0));
}

// Row r of the block: probabilities from the logits, then dlogits = p * (dp - delta).
// dp arrives as grad_out·v and gains the Shaw value bins' gradient here.
template <class T>
void logits_gradient_row(const FlashGeometry& g, const FlashBlock& blk, std::int64_t r, T lse,
                         T delta, const T* grad_bins, T* p, T* dp) {
  const std::int64_t n = blk.visible(g, r);
  cpu::exp_shifted(p, lse, p, n);
  std::fill(p + n, p + blk.cols, T(0));
  if (grad_bins) {
    T* dpj = dp - blk.j0;
    cpu::for_clipped_ranges(
        g, blk.i0 + r, blk.j0, n,
        [&](std::int64_t j_begin, std::int64_t j_end, std::int64_t bin, std::int64_t band_offset) {
          if (bin >= 0) {
            for (std::int64_t j = j_begin; j < j_end; ++j) dpj[j] += grad_bins[bin];
          } else {
            for (std::int64_t j = j_begin; j < j_end; ++j) dpj[j] += grad_bins[j + band_offset];
          }
        });
  }
  for (std::int64_t c = 0; c < n; ++c) dp[c] = p[c] * (dp[c] - delta);
  std::fill(dp + n, dp + blk.cols, T(0));
}

// Shaw keys: dclipped[i, bin] += term_scale * Σ dlogits over the bin's keys.
template <class T>
void clipped_gradient_row(const FlashGeometry& g, const FlashBlock& blk, std::int64_t r,
                          T term_scale, const T* ds, T* dclipped_row) {
  const T* d = ds - blk.j0;
  cpu::for_clipped_ranges(
      g, blk.i0 + r, blk.j0, blk.visible(g, r),
      [&](std::int64_t j_begin, std::int64_t j_end, std::int64_t bin, std::int64_t band_offset) {
        if (bin >= 0) {
          T total = 0;
#pragma omp simd reduction(+ : total)
          for (std::int64_t j = j_begin; j < j_end; ++j) total += d[j];
          dclipped_row[bin] += term_scale * total;
        } else {
          for (std::int64_t j = j_begin; j < j_end; ++j)
            dclipped_row[j + band_offset] += term_scale * d[j];
        }
      });
}

// A query tile's (rows, dim) gradient into rows [i0, i0 + rows) of its head, plus XL's
// position-query gradient `extra` when it has one (else empty); none wanted: nothing.
template <class T>
void store_tile(const std::vector<T>& tile, const std::vector<T>& extra, std::int64_t rows,
                std::int64_t dim, const cpu::HeadRows<T>& dst, std::int64_t i0) {
  for (std::int64_t r = 0; r < rows && dst.base; ++r) {
    T* out = dst.row(i0 + r);
    const T* a = tile.data() + r * dim;
    if (extra.empty()) {
      std::copy(a, a + dim, out);
      continue;
    }
    const T* b = extra.data() + r * dim;
#pragma omp simd
    for (std::int64_t d = 0; d < dim; ++d) out[d] = a[d] + b[d];
  }
}

// sum[d] += Σ_r tile[r, d] over a query tile's (rows, dim) gradient, rows in order; sum
// null: nothing.
template <class T>
void add_rows(const std::vector<T>& tile, std::int64_t rows, std::int64_t dim, double* sum) {
  for (std::int64_t r = 0; r < rows && sum; ++r) {
    const T* row = tile.data() + r * dim;
#pragma omp simd
    for (std::int64_t d = 0; d < dim; ++d) sum[d] += row[d];
  }
}

template <class T>
void backward_head(const BackwardTensors& t, const FlashGeometry& g, std::int64_t b, std::int64_t h,
                   const cpu::FireTables<T>& fire) {
  const FlashAttentionArgs& a = t.a;
  const FlashAttentionGrads& gr = t.grads;
  auto& scratch = cpu::FlashScratch<T>::local(g);
  auto& query = cpu::QueryTile<T>::local();
  thread_local std::vector<T> delta, dq, dxq;
  const T scale = static_cast<T>(a.scale), term_scale = static_cast<T>(a.term_scale);
  const std::int64_t task = b * g.heads + h;
  const auto k = cpu::head_rows<T>(a.k, b, h), v = cpu::head_rows<T>(a.v, b, h),
             o = cpu::head_rows<T>(t.out, b, h), go = cpu::head_rows<T>(t.grad_out, b, h);
  const auto dq_rows = cpu::head_rows<T>(gr.q, b, h), dk = cpu::head_rows<T>(gr.k, b, h),
             dv = cpu::head_rows<T>(gr.v, b, h);
  const std::int64_t out_cols = g.dim + (a.value_bins ? g.width : 0);
  const T* lse = t.lse.data<T>() + task * g.q_len;
  const bool xl = a.xl_r.defined();
  double* du = t.u_partial.defined() ? t.u_partial.data<double>() + task * g.dim : nullptr;
  double* dxv = t.v_partial.defined() ? t.v_partial.data<double>() + task * g.dim : nullptr;
  // The content query's gradient (scale · ds · k) and, with XL, the position query's.
  const bool want_dq = dq_rows.base || du, want_dxq = xl && (dq_rows.base || dxv);
  T* dr = t.r_partial.defined() ? t.r_partial.data<T>() + task * g.k_len * g.dim : nullptr;
  const auto dclipped = cpu::head_rows<T>(gr.clipped, b, h);  // (Lq, 2k+1)
  double* dbias =
      t.bias_partial.defined() ? t.bias_partial.data<double>() + task * g.n_dist : nullptr;
  // delta_i = Σ_c out[i, c] · grad_out[i, c] = Σ_j p_ij dp_ij (bins included).
  delta.resize(g.q_len);
  for (std::int64_t i = 0; i < g.q_len; ++i) {
    T acc = 0;
    const T* o_row = o.row(i);
    const T* go_row = go.row(i);
#pragma omp simd reduction(+ : acc)
    for (std::int64_t c = 0; c < out_cols; ++c) acc += o_row[c] * go_row[c];
    delta[i] = acc;
  }
  zero_rows(dk, g.k_len, g.dim);
  zero_rows(dv, g.k_len, g.dim);
  if (dr) std::fill(dr, dr + g.k_len * g.dim, T(0));
  if (du) std::fill(du, du + g.dim, 0.0);
  if (dxv) std::fill(dxv, dxv + g.dim, 0.0);
  zero_rows(dclipped, g.q_len, g.width);
  if (dbias) std::fill(dbias, dbias + g.n_dist, 0.0);
  double* fire_base = nullptr;
  if (t.fire_partial.defined()) {
    const std::int64_t n = cpu::FireGradSums::size(fire.hidden);
    fire_base = t.fire_partial.data<double>() + task * n;
    std::fill(fire_base, fire_base + n, 0.0);
  }
  const cpu::FireGradSums fire_sums =
      fire_base ? cpu::FireGradSums(fire_base, fire.hidden) : cpu::FireGradSums();
  for (std::int64_t i0 = 0; i0 < g.q_len; i0 += g.q_tile) {
    const std::int64_t rows = std::min(g.q_tile, g.q_len - i0);
    dq.assign(want_dq ? rows * g.dim : 0, T(0));
    dxq.assign(want_dxq ? rows * g.dim : 0, T(0));
    query.form(a, g, b, h, i0, rows);
    const std::int64_t key_end = g.key_end(i0 + rows - 1);
    for (std::int64_t j0 = g.key_begin(i0); j0 < key_end; j0 += g.k_tile) {
      const FlashBlock blk{i0, rows, j0, std::min(g.k_tile, key_end - j0)};
      T* p = scratch.logits(g);
      T* ds = scratch.grad(g);
      cpu::block_logits<T>(a, g, b, h, blk, query, p, fire.defined() ? &fire : nullptr);
      // dp = grad_out_tile · v_tileᵀ (the first D columns of grad_out)
      cpu::key_block_gemm<T>(a.precision, g, blk, true, rows, blk.cols, g.dim, T(1), go.row(i0),
                             go.stride, v.row(j0), v.stride, T(0), ds, g.s_ld);
      for (std::int64_t r = 0; r < rows; ++r) {
        const T* grad_bins = a.value_bins ? go.row(i0 + r) + g.dim : nullptr;
        logits_gradient_row(g, blk, r, lse[i0 + r], delta[i0 + r], grad_bins, p + r * g.s_ld,
                            ds + r * g.s_ld);
      }
      if (dv.base)  // dv_tile += pᵀ · grad_out_tile
        cpu::tile_gemm<T>(a.precision, true, false, blk.cols, g.dim, rows, T(1), p, g.s_ld,
                          go.row(i0), go.stride, T(1), dv.row(j0), dv.stride);
      if (dk.base)  // dk_tile += scale · dsᵀ · q_tile (q + u with XL)
        cpu::tile_gemm<T>(a.precision, true, false, blk.cols, g.dim, rows, scale, ds, g.s_ld,
                          query.content.base, query.content.stride, T(1), dk.row(j0), dk.stride);
      if (want_dq)  // dq_tile += scale · ds · k_tile
        cpu::key_block_gemm<T>(a.precision, g, blk, false, rows, g.dim, blk.cols, scale, ds, g.s_ld,
                               k.row(j0), k.stride, T(1), dq.data(), g.dim);
      for (std::int64_t r = 0; r < rows && (dbias || dclipped.base || fire_base); ++r) {
        const T* dsr = ds + r * g.s_ld;
        const std::int64_t i = i0 + r, n = blk.visible(g, r);
        if (dbias) {
          double* acc = dbias + g.distance_index(i, j0);
          for (std::int64_t c = 0; c < n; ++c) acc[c] += dsr[c];
        }
        if (dclipped.base) clipped_gradient_row(g, blk, r, term_scale, dsr, dclipped.row(i));
        if (fire_base)
          cpu::fire_gradient_row(fire, g, h, i, j0, n, dsr, scratch.fire_pieces, fire_sums);
      }
      if (want_dxq || dr) {
        // E (rows, xl_width) = rel_shift⁻¹(ds): the block's dlogits at their distance columns,
        // ds read diagonally (FlashBlock), its words outside the keys zero.
        blk.zero_xl_margins(g, ds);
        const T* e = FlashBlock::xl_origin<const T>(ds, rows);
        const std::int64_t lo = blk.xl_lo(g), width = blk.xl_width(g), lde = g.s_ld + 1;
        const T* r = a.xl_r.data<T>() + h * g.k_len * g.dim;  // (Lk, D) of head h
        // dxq_tile += term_scale · E · r_slice;  dr_slice += term_scale · Eᵀ · (q + v)_tile
        if (want_dxq)
          cpu::window_gemm<T>(a.precision, false, false, rows, g.dim, width, term_scale, e, lde, r,
                              g.k_len, g.dim, lo, T(1), dxq.data(), g.dim);
        if (dr)
          cpu::tile_gemm<T>(a.precision, true, false, width, g.dim, rows, term_scale, e, lde,
                            query.position.base, query.position.stride, T(1), dr + lo * g.dim,
                            g.dim);
      }
    }
    // d(q + u) and d(q + v) each reach q, and u and v summed over the queries.
    store_tile(dq, dxq, rows, g.dim, dq_rows, i0);
    add_rows(dq, rows, g.dim, du);
    add_rows(dxq, rows, g.dim, dxv);
  }
}

// out[h, n] = Σ_b partial[b, h, n], b in increasing order.
template <class T, class P>
void sum_over_batch(const P* partial, std::int64_t batch, std::int64_t heads, std::int64_t n,
                    T* out) {
  cpu::parallel_for(heads, heads * n > 65536, [&](std::int64_t h) {
    for (std::int64_t e = 0; e < n; ++e) {
      double acc = 0;
      for (std::int64_t b = 0; b < batch; ++b) acc += partial[(b * heads + h) * n + e];
      out[h * n + e] = static_cast<T>(acc);
    }
  });
}

// FIRE's gradients from the per-task sums, each summed over tasks in increasing order:
// w1, b1, c and threshold over every (b, h); w2's row h over b.
template <class T>
void sum_fire_gradients(const double* partial, const FlashGeometry& g, std::int64_t hidden,
                        const FireTerms& grads) {
  const std::int64_t n = cpu::FireGradSums::size(hidden);
  auto sum = [&](const Tensor& out, std::int64_t offset, std::int64_t count, bool per_head) {
    if (!out.defined()) return;
    T* dst = out.data<T>();
    for (std::int64_t h = 0; h < (per_head ? g.heads : 1); ++h)
      for (std::int64_t e = 0; e < count; ++e) {
        double acc = 0;
        for (std::int64_t b = 0; b < g.batch; ++b)
          for (std::int64_t hh = per_head ? h : 0; hh < (per_head ? h + 1 : g.heads); ++hh)
            acc += partial[(b * g.heads + hh) * n + offset + e];
        dst[h * count + e] = static_cast<T>(acc);
      }
  };
  sum(grads.w1, 0, hidden, false);
  sum(grads.b1, hidden, hidden, false);
  sum(grads.w2, 2 * hidden, hidden, true);
  sum(grads.c, 3 * hidden, 1, false);
  sum(grads.threshold, 3 * hidden + 1, 1, false);
}

}  // namespace

void CpuBackend::flash_attention_backward(const FlashAttentionArgs& args, const Tensor& out,
                                          const Tensor& lse, const Tensor& grad_out,
                                          const FlashAttentionGrads& grads) {
  const FlashGeometry g(args);
  cpu::bf16_begin_kernel_call();
  dispatch_floating(out.dtype(), [&](auto zero) {
    using T = decltype(zero);
    BackwardTensors t{args, out, lse, grad_out, grads, {}, {}, {}, {}, {}};
    const cpu::FireTables<T> fire(args.fire, g);
    const FireTerms& fg = grads.fire;
    if (fg.w1.defined() || fg.b1.defined() || fg.w2.defined() || fg.c.defined() ||
        fg.threshold.defined())
      t.fire_partial =
          Tensor::empty({g.batch, g.heads, cpu::FireGradSums::size(fire.hidden)}, DType::f64);
    if (grads.distance_bias.defined())
      t.bias_partial = Tensor::empty({g.batch, g.heads, g.n_dist}, DType::f64);
    if (grads.xl_r.defined())
      t.r_partial = Tensor::empty({g.batch, g.heads, g.k_len, g.dim}, out.dtype());
    if (grads.xl_u.defined()) t.u_partial = Tensor::empty({g.batch, g.heads, g.dim}, DType::f64);
    if (grads.xl_v.defined()) t.v_partial = Tensor::empty({g.batch, g.heads, g.dim}, DType::f64);
    cpu::parallel_for(g.batch * g.heads, g.worth_threads(), [&](std::int64_t bh) {
      backward_head<T>(t, g, bh / g.heads, bh % g.heads, fire);
    });
    if (t.bias_partial.defined())
      sum_over_batch(t.bias_partial.data<double>(), g.batch, g.heads, g.n_dist,
                     grads.distance_bias.data<T>());
    if (t.r_partial.defined())
      sum_over_batch(t.r_partial.data<T>(), g.batch, g.heads, g.k_len * g.dim,
                     grads.xl_r.data<T>());
    if (t.u_partial.defined())
      sum_over_batch(t.u_partial.data<double>(), g.batch, g.heads, g.dim, grads.xl_u.data<T>());
    if (t.v_partial.defined())
      sum_over_batch(t.v_partial.data<double>(), g.batch, g.heads, g.dim, grads.xl_v.data<T>());
    if (t.fire_partial.defined())
      sum_fire_gradients<T>(t.fire_partial.data<double>(), g, fire.hidden, fg);
  });
}

}  // namespace relpos
