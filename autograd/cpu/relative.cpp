// Relative-position gathers and their adjoints on the CPU (see backend.h).
// Every adjoint is computed by the thread that owns the output row, in index
// order, so gradients are deterministic.
#include <algorithm>
#include <cstring>
#include <numeric>
#include <vector>

#include "autograd/cpu/cpu_backend.h"
#include "autograd/cpu/parallel.h"
#include "autograd/kernel_math/relative_geometry.h"

namespace relpos {
namespace {

template <class T>
void gather_typed(RelativeGather kind, const T* src, T* out, const RelativeShape& s) {
  const std::int64_t lq = s.q_len, lk = s.k_len, k = s.clip;
  const std::int64_t n_dist = lq + lk - 1, width = 2 * k + 1;
  cpu::parallel_for(s.rows, s.rows * lk > 32768, [&](std::int64_t r) {
    const kernel_math::RelativeRow row = kernel_math::relative_row(r, lq, lk, 1, false);
    const std::int64_t offset = row.offset;  // distance index of key 0
    T* o = out + r * lk;
    switch (kind) {
      case RelativeGather::distance: {
        const T* dist = src + (r / lq) * n_dist + offset;  // (H, Lq+Lk-1) source
        std::copy(dist, dist + lk, o);
        break;
      }
      case RelativeGather::clipped: {
        const T* bins = src + r * width;  // (rows, 2k+1)
        const kernel_math::ClippedRanges c = kernel_math::clipped_ranges(row.qpos, k, lk);
        std::fill(o, o + c.left_end, bins[0]);
        for (std::int64_t j = c.left_end; j < c.band_end; ++j) o[j] = bins[j + c.band_offset];
        std::fill(o + c.band_end, o + lk, bins[2 * k]);
        break;
      }
      case RelativeGather::shifted: {
        const T* raw = src + r * lk;  // (rows, Lk)
        const std::int64_t valid = std::min(lk, lk - offset);
        std::copy(raw + offset, raw + offset + valid, o);
        std::fill(o + valid, o + lk, T(0));
        break;
      }
    }
  });
}

template <class T>
void scatter_typed(RelativeGather kind, const T* grad, T* out, const RelativeShape& s) {
  const std::int64_t lq = s.q_len, lk = s.k_len, k = s.clip;
  const std::int64_t n_dist = lq + lk - 1, width = 2 * k + 1;
  if (kind == RelativeGather::distance) {
    // out (H, Lq+Lk-1) sums over the query rows of each head: parallel over heads.
    const std::int64_t heads = s.rows / lq;
#pragma omp parallel for schedule(static)
    for (std::int64_t h = 0; h < heads; ++h) {
      std::vector<double> acc(static_cast<std::size_t>(n_dist), 0.0);
      for (std::int64_t i = 0; i < lq; ++i) {
        const T* g = grad + (h * lq + i) * lk;
        double* a = acc.data() + kernel_math::distance_offset(i, lq);
        for (std::int64_t j = 0; j < lk; ++j) a[j] += g[j];
      }
      for (std::int64_t n = 0; n < n_dist; ++n) out[h * n_dist + n] = static_cast<T>(acc[n]);
    }
    return;
  }
  cpu::parallel_for(s.rows, s.rows * lk > 32768, [&](std::int64_t r) {
    const kernel_math::RelativeRow row = kernel_math::relative_row(r, lq, lk, 1, false);
    const T* g = grad + r * lk;
    if (kind == RelativeGather::clipped) {
      T* o = out + r * width;
      const kernel_math::ClippedRanges c = kernel_math::clipped_ranges(row.qpos, k, lk);
      std::fill(o, o + width, T(0));
      o[0] = std::accumulate(g, g + c.left_end, T(0));
      for (std::int64_t j = c.left_end; j < c.band_end; ++j) o[j + c.band_offset] += g[j];
      o[2 * k] += std::accumulate(g + c.band_end, g + lk, T(0));
    } else {
      T* o = out + r * lk;
      const std::int64_t offset = row.offset;
      std::fill(o, o + std::min(offset, lk), T(0));
      for (std::int64_t c = offset; c < lk; ++c) o[c] = g[c - offset];
    }
  });
}

}  // namespace

void CpuBackend::relative_gather(RelativeGather kind, const Tensor& src, const Tensor& out,
                                 const RelativeShape& shape) {
  dispatch_floating(out.dtype(), [&](auto zero) {
    using T = decltype(zero);
    gather_typed<T>(kind, src.data<T>(), out.data<T>(), shape);
  });
}

void CpuBackend::relative_scatter(RelativeGather kind, const Tensor& grad_out,
                                  const Tensor& grad_src, const RelativeShape& shape) {
  dispatch_floating(grad_src.dtype(), [&](auto zero) {
    using T = decltype(zero);
    scatter_typed<T>(kind, grad_out.data<T>(), grad_src.data<T>(), shape);
  });
}

void CpuBackend::bucket_gather(const Tensor& table, const Tensor& buckets, const Tensor& out) {
  dispatch_floating(out.dtype(), [&](auto zero) {
    using T = decltype(zero);
    const T* t = table.data<T>();  // (buckets, H)
    const std::int64_t* b = buckets.data<std::int64_t>();
    T* o = out.data<T>();  // (H, n)
    const std::int64_t heads = table.size(1), n = buckets.numel();
    for (std::int64_t h = 0; h < heads; ++h)
      for (std::int64_t d = 0; d < n; ++d) o[h * n + d] = t[b[d] * heads + h];
  });
}

void CpuBackend::bucket_gather_backward(const Tensor& grad_out, const Tensor& buckets,
                                        const Tensor& grad_table) {
  dispatch_floating(grad_table.dtype(), [&](auto zero) {
    using T = decltype(zero);
    const T* g = grad_out.data<T>();  // (H, n)
    const std::int64_t* b = buckets.data<std::int64_t>();
    T* o = grad_table.data<T>();  // (buckets, H)
    const std::int64_t n_buckets = grad_table.size(0), heads = grad_table.size(1);
    const std::int64_t n = buckets.numel();
    std::vector<double> acc(static_cast<std::size_t>(n_buckets * heads), 0.0);
    for (std::int64_t h = 0; h < heads; ++h)
      for (std::int64_t d = 0; d < n; ++d) acc[b[d] * heads + h] += g[h * n + d];
    for (std::size_t e = 0; e < acc.size(); ++e) o[e] = static_cast<T>(acc[e]);
  });
}

}  // namespace relpos
