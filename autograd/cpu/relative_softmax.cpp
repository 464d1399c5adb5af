// The fused position-aware softmax on the CPU: position terms are added to each
// row of logits on the fly (no L x L bias or bucket tensor), then masked softmax.
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <type_traits>
#include <vector>

#include "autograd/cpu/cpu_backend.h"
#include "autograd/cpu/parallel.h"
#include "autograd/kernel_math/relative_geometry.h"

namespace relpos {
namespace {

// Row r's geometry (kernel_math/relative_geometry.h): keys after the query are hidden
// under a causal mask and for Transformer-XL's shifted term.
kernel_math::RelativeRow row_geometry(const RelativeSoftmaxArgs& a, std::int64_t r) {
  return kernel_math::relative_row(r, a.shape.q_len, a.shape.k_len, a.heads,
                                   a.causal || a.shifted.defined());
}

template <class T>
const T* optional_data(const Tensor& t) {
  return t.defined() ? t.data<T>() : nullptr;
}

template <class T>
void forward_typed(const RelativeSoftmaxArgs& a, const Tensor& probs) {
  const RelativeShape& s = a.shape;
  const std::int64_t lk = s.k_len, k = s.clip, width = 2 * k + 1, n_dist = s.q_len + lk - 1;
  const T* scores = a.scores.data<T>();
  const T* bias = optional_data<T>(a.distance_bias);
  const T* clipped = optional_data<T>(a.clipped);
  const T* shifted = optional_data<T>(a.shifted);
  T* out = probs.data<T>();
  const T scale = static_cast<T>(a.scale), term_scale = static_cast<T>(a.term_scale);
  cpu::parallel_for(s.rows, s.rows * lk > 16384, [&](std::int64_t r) {
    const kernel_math::RelativeRow g = row_geometry(a, r);
    const T* sr = scores + r * lk;
    T* p = out + r * lk;
    for (std::int64_t j = 0; j < g.limit; ++j) p[j] = scale * sr[j];
    if (bias) {
      const T* b = bias + g.head * n_dist + g.offset;
      for (std::int64_t j = 0; j < g.limit; ++j) p[j] += b[j];
    }
    if (clipped) {
      const T* c = clipped + r * width;
      const kernel_math::ClippedRanges cr = kernel_math::clipped_ranges(g.qpos, k, g.limit);
      const T left = term_scale * c[0], right = term_scale * c[2 * k];
      for (std::int64_t j = 0; j < cr.left_end; ++j) p[j] += left;
      for (std::int64_t j = cr.left_end; j < cr.band_end; ++j)
        p[j] += term_scale * c[j + cr.band_offset];
      for (std::int64_t j = cr.band_end; j < g.limit; ++j) p[j] += right;
    }
    if (shifted) {
      const T* x = shifted + r * lk + g.offset;
      for (std::int64_t j = 0; j < g.limit; ++j) p[j] += term_scale * x[j];
    }
    T max = -std::numeric_limits<T>::infinity();
    for (std::int64_t j = 0; j < g.limit; ++j) max = std::max(max, p[j]);
    T total = 0;
    // Below log(min normal) exp() only yields denormals (slow, and flushed below
    // anyway): ALiBi's far keys reach such logits at long lengths.
    constexpr T kUnderflow = std::is_same_v<T, float> ? T(-87.0) : T(-708.0);
    for (std::int64_t j = 0; j < g.limit; ++j) {
      const T z = p[j] - max;
      p[j] = z < kUnderflow ? T(0) : std::exp(z);
      total += p[j];
    }
    const T inv = T(1) / total;
    for (std::int64_t j = 0; j < g.limit; ++j) {
      const T v = p[j] * inv;
      // Flush denormals: they carry no information and are slow on x86.
      p[j] = v < std::numeric_limits<T>::min() ? T(0) : v;
    }
    std::fill(p + g.limit, p + lk, T(0));
  });
}

template <class T>
void backward_typed(const RelativeSoftmaxArgs& a, const Tensor& probs, const Tensor& grad_probs,
                    const RelativeSoftmaxGrads& grads) {
  const RelativeShape& s = a.shape;
  const std::int64_t lk = s.k_len, k = s.clip, width = 2 * k + 1, n_dist = s.q_len + lk - 1;
  const T* p_all = probs.data<T>();
  const T* gp_all = grad_probs.data<T>();
  T* d_scores = grads.scores.data<T>();
  T* d_clipped = grads.clipped.defined() ? grads.clipped.data<T>() : nullptr;
  T* d_shifted = grads.shifted.defined() ? grads.shifted.data<T>() : nullptr;
  const bool want_bias = grads.distance_bias.defined();
  const T scale = static_cast<T>(a.scale), term_scale = static_cast<T>(a.term_scale);
  // Pass 1, per row: dLogits = p * (dp - <p, dp>), stored unscaled when the bias
  // gradient still has to be reduced from it.
  cpu::parallel_for(s.rows, s.rows * lk > 16384, [&](std::int64_t r) {
    const kernel_math::RelativeRow g = row_geometry(a, r);
    const T* p = p_all + r * lk;
    const T* gp = gp_all + r * lk;
    T* d = d_scores + r * lk;
    T dot = 0;
    for (std::int64_t j = 0; j < g.limit; ++j) dot += p[j] * gp[j];
    for (std::int64_t j = 0; j < g.limit; ++j) d[j] = p[j] * (gp[j] - dot);
    std::fill(d + g.limit, d + lk, T(0));
    if (d_clipped) {
      T* c = d_clipped + r * width;
      const kernel_math::ClippedRanges cr = kernel_math::clipped_ranges(g.qpos, k, g.limit);
      std::fill(c, c + width, T(0));
      c[0] = term_scale * std::accumulate(d, d + cr.left_end, T(0));
      for (std::int64_t j = cr.left_end; j < cr.band_end; ++j)
        c[j + cr.band_offset] += term_scale * d[j];
      c[2 * k] += term_scale * std::accumulate(d + cr.band_end, d + g.limit, T(0));
    }
    if (d_shifted) {
      T* x = d_shifted + r * lk;
      std::fill(x, x + g.offset, T(0));
      for (std::int64_t j = 0; j < g.limit; ++j) x[g.offset + j] = term_scale * d[j];
      std::fill(x + g.offset + g.limit, x + lk, T(0));
    }
    if (!want_bias && scale != T(1))
      for (std::int64_t j = 0; j < g.limit; ++j) d[j] *= scale;
  });
  if (!want_bias) return;
  // Pass 2, per head: sum dLogits along each diagonal (fixed row order, double
  // accumulators), then apply the score scale.
  T* d_bias = grads.distance_bias.data<T>();
  const std::int64_t heads = a.heads, q_len = s.q_len;
  const std::int64_t batch = s.rows / (heads * q_len);
#pragma omp parallel for schedule(static)
  for (std::int64_t h = 0; h < heads; ++h) {
    std::vector<double> acc(static_cast<std::size_t>(n_dist), 0.0);
    for (std::int64_t b = 0; b < batch; ++b) {
      for (std::int64_t i = 0; i < q_len; ++i) {
        const std::int64_t r = (b * heads + h) * q_len + i;
        T* d = d_scores + r * lk;
        double* acc_row = acc.data() + (q_len - 1 - i);
        for (std::int64_t j = 0; j < lk; ++j) acc_row[j] += d[j];
        if (scale != T(1))
          for (std::int64_t j = 0; j < lk; ++j) d[j] *= scale;
      }
    }
    for (std::int64_t n = 0; n < n_dist; ++n) d_bias[h * n_dist + n] = static_cast<T>(acc[n]);
  }
}

}  // namespace

void CpuBackend::relative_softmax(const RelativeSoftmaxArgs& args, const Tensor& probs) {
  dispatch_floating(probs.dtype(), [&](auto zero) { forward_typed<decltype(zero)>(args, probs); });
}

void CpuBackend::relative_softmax_backward(const RelativeSoftmaxArgs& args, const Tensor& probs,
                                           const Tensor& grad_probs,
                                           const RelativeSoftmaxGrads& grads) {
  dispatch_floating(probs.dtype(), [&](auto zero) {
    backward_typed<decltype(zero)>(args, probs, grad_probs, grads);
  });
}

}  // namespace relpos
