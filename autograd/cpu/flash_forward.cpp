// Tiled attention forward on the CPU (FlashAttention-2 style): for each (batch,
// head) and each tile of queries, walk the key tiles with an online softmax. Only
// one (query tile, key tile) block of logits exists at a time; the output keeps
// the per-row log-sum-exp so the backward can recompute probabilities.
#include <cmath>
#include <limits>
#include <type_traits>
#include <vector>

#include "autograd/cpu/bf16_round.h"
#include "autograd/cpu/cpu_backend.h"
#include "autograd/cpu/fast_exp.h"
#include "autograd/cpu/flash_fire.h"
#include "autograd/cpu/flash_tile.h"
#include "autograd/cpu/parallel.h"

namespace relpos {
namespace {

using cpu::FlashBlock;
using cpu::FlashGeometry;

// Running state of one query tile: row max, row sum, unnormalised output and bins.
template <class T>
struct OnlineRows {
  std::vector<T> max, sum, out, bins;  // (rows), (rows), (rows, D), (rows, 2k+1)
  void reset(std::int64_t rows, std::int64_t dim, std::int64_t bins_width) {
    max.assign(rows, -std::numeric_limits<T>::infinity());
    sum.assign(rows, T(0));
    out.assign(rows * dim, T(0));
    bins.assign(rows * bins_width, T(0));
  }
};

// Turns row r of the logits block into probabilities relative to the running max,
// rescaling what the row accumulated so far; adds the row's Shaw value bins.
template <class T>
void online_softmax_row(const FlashGeometry& g, const FlashBlock& blk, std::int64_t r,
                        bool value_bins, T* row, OnlineRows<T>& st) {
  const std::int64_t n = blk.visible(g, r);
  T block_max = -std::numeric_limits<T>::infinity();
#pragma omp simd reduction(max : block_max)
  for (std::int64_t c = 0; c < n; ++c) block_max = std::max(block_max, row[c]);
  const T old_max = st.max[r];
  const T new_max = std::max(old_max, block_max);
  if (n == 0 || new_max == -std::numeric_limits<T>::infinity()) {
    std::fill(row, row + blk.cols, T(0));
    return;
  }
  cpu::exp_shifted(row, new_max, row, n);
  std::fill(row + n, row + blk.cols, T(0));
  T block_sum = 0;
#pragma omp simd reduction(+ : block_sum)
  for (std::int64_t c = 0; c < n; ++c) block_sum += row[c];
  const T rescale = cpu::exp_approx(old_max - new_max);
  st.max[r] = new_max;
  st.sum[r] = st.sum[r] * rescale + block_sum;
  if (rescale != T(1)) {
    for (std::int64_t d = 0; d < g.dim; ++d) st.out[r * g.dim + d] *= rescale;
    if (value_bins)
      for (std::int64_t c = 0; c < g.width; ++c) st.bins[r * g.width + c] *= rescale;
  }
  if (!value_bins) return;
  T* bins = st.bins.data() + r * g.width;
  const T* p = row - blk.j0;
  cpu::for_clipped_ranges(
      g, blk.i0 + r, blk.j0, n,
      [&](std::int64_t j_begin, std::int64_t j_end, std::int64_t bin, std::int64_t band_offset) {
        if (bin >= 0) {
          T total = 0;
#pragma omp simd reduction(+ : total)
          for (std::int64_t j = j_begin; j < j_end; ++j) total += p[j];
          bins[bin] += total;
        } else {
          for (std::int64_t j = j_begin; j < j_end; ++j) bins[j + band_offset] += p[j];
        }
      });
}

// out16: null, or out's bf16 rounding (f32 only), at each element's offset from out's first.
template <class T>
void forward_head(const FlashAttentionArgs& a, const FlashGeometry& g, std::int64_t b,
                  std::int64_t h, const Tensor& out, const Tensor& lse,
                  const cpu::FireTables<T>& fire, std::uint16_t* out16) {
  auto& scratch = cpu::FlashScratch<T>::local(g);
  auto& query = cpu::QueryTile<T>::local();
  thread_local OnlineRows<T> st;
  const cpu::HeadRows<T> v = cpu::head_rows<T>(a.v, b, h);
  const cpu::HeadRows<T> o = cpu::head_rows<T>(out, b, h);
  T* lse_rows = lse.data<T>() + (b * g.heads + h) * g.q_len;
  const std::int64_t bins_width = a.value_bins ? g.width : 0;
  for (std::int64_t i0 = 0; i0 < g.q_len; i0 += g.q_tile) {
    const std::int64_t rows = std::min(g.q_tile, g.q_len - i0);
    st.reset(rows, g.dim, bins_width);
    query.form(a, g, b, h, i0, rows);
    const std::int64_t key_end = g.key_end(i0 + rows - 1);
    for (std::int64_t j0 = g.key_begin(i0); j0 < key_end; j0 += g.k_tile) {
      const FlashBlock blk{i0, rows, j0, std::min(g.k_tile, key_end - j0)};
      T* s = scratch.logits(g);
      cpu::block_logits<T>(a, g, b, h, blk, query, s, fire.defined() ? &fire : nullptr);
      for (std::int64_t r = 0; r < rows; ++r)
        online_softmax_row(g, blk, r, a.value_bins, s + r * g.s_ld, st);
      // out_tile += P · v_tile
      cpu::key_block_gemm<T>(a.precision, g, blk, false, rows, g.dim, blk.cols, T(1), s, g.s_ld,
                             v.row(j0), v.stride, T(1), st.out.data(), g.dim);
    }
    for (std::int64_t r = 0; r < rows; ++r) {
      const T inv = T(1) / st.sum[r];
      T* dst = o.row(i0 + r);
      for (std::int64_t d = 0; d < g.dim; ++d) dst[d] = st.out[r * g.dim + d] * inv;
      for (std::int64_t c = 0; c < bins_width; ++c) dst[g.dim + c] = st.bins[r * g.width + c] * inv;
      if constexpr (std::is_same_v<T, float>)
        if (out16) cpu::round_row_to_bf16(dst, g.dim, out16 + (dst - out.data<T>()));
      lse_rows[i0 + r] = st.max[r] + std::log(st.sum[r]);
    }
  }
}

}  // namespace

void CpuBackend::flash_attention(const FlashAttentionArgs& args, const Tensor& out,
                                 const Tensor& lse, std::uint16_t* out_bf16) {
  const FlashGeometry g(args);
  cpu::bf16_begin_kernel_call();
  dispatch_floating(out.dtype(), [&](auto zero) {
    using T = decltype(zero);
    const cpu::FireTables<T> fire(args.fire, g);
    cpu::parallel_for(g.batch * g.heads, g.worth_threads(), [&](std::int64_t bh) {
      forward_head<T>(args, g, bh / g.heads, bh % g.heads, out, lse, fire, out_bf16);
    });
  });
}

}  // namespace relpos
