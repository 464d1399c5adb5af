// The fused position-aware softmax on the GPU (see RelativeSoftmaxArgs in
// backend.h): one warp per attention row adds the position terms to the scaled
// scores on the fly, then takes a masked softmax. Same term order, accumulator
// types and denormal flush as the CPU (autograd/cpu/relative_softmax.cpp); row
// sums meet in a fixed shuffle tree. The distance-bias gradient is reduced per
// (head, distance) by one thread in (batch, query) order, without atomics.
#include <cfloat>
#include <cmath>
#include <cstdint>

#include "autograd/cuda/check.h"
#include "autograd/cuda/cuda_backend.h"
#include "autograd/cuda/launch.cuh"
#include "autograd/cuda/warp.cuh"
#include "autograd/kernel_math/relative_geometry.h"

namespace relpos {
namespace {

// Device pointers and sizes of RelativeSoftmaxArgs; null for absent terms.
template <class T>
struct Terms {
  const T* scores;   // (rows, Lk)
  const T* bias;     // (H, Lq+Lk-1)
  const T* clipped;  // (rows, 2k+1)
  const T* shifted;  // (rows, Lk)
  RelativeShape shape;
  std::int64_t heads;
  T scale, term_scale;
  bool causal;
};

// Row r's geometry (kernel_math/relative_geometry.h): keys after the query are hidden
// under a causal mask and for Transformer-XL's shifted term.
template <class T>
__device__ kernel_math::RelativeRow row_of(const Terms<T>& t, std::int64_t r) {
  return kernel_math::relative_row(r, t.shape.q_len, t.shape.k_len, t.heads, t.causal || t.shifted);
}

template <class T>
__device__ T smallest_normal();
template <>
__device__ float smallest_normal<float>() {
  return FLT_MIN;
}
template <>
__device__ double smallest_normal<double>() {
  return DBL_MIN;
}

template <class T>
__global__ void relative_softmax_kernel(Terms<T> t, T* probs) {
  const RelativeShape& s = t.shape;
  const std::int64_t lk = s.k_len, k = s.clip, width = 2 * k + 1, n_dist = s.q_len + lk - 1;
  for (std::int64_t r = cuda::warp_row_index(); r < s.rows; r += cuda::warp_row_count()) {
    const kernel_math::RelativeRow g = row_of(t, r);
    T* p = probs + r * lk;  // (Lk); each lane reuses only the elements it wrote
    T max = T(-INFINITY);
    for (std::int64_t j = cuda::lane_index(); j < g.limit; j += cuda::kWarp) {
      T v = t.scale * t.scores[r * lk + j];
      if (t.bias) v += t.bias[g.head * n_dist + g.offset + j];
      if (t.clipped)
        v += t.term_scale * t.clipped[r * width + kernel_math::clipped_bin(j, g.qpos, k)];
      if (t.shifted) v += t.term_scale * t.shifted[r * lk + g.offset + j];
      p[j] = v;
      max = v > max ? v : max;
    }
    max = cuda::warp_max(max);
    T total = T(0);
    for (std::int64_t j = cuda::lane_index(); j < g.limit; j += cuda::kWarp) {
      p[j] = ::exp(p[j] - max);
      total += p[j];
    }
    const T inv = T(1) / cuda::warp_sum(total);
    for (std::int64_t j = cuda::lane_index(); j < lk; j += cuda::kWarp) {
      const T v = j < g.limit ? p[j] * inv : T(0);
      p[j] = v < smallest_normal<T>() ? T(0) : v;  // flush denormals, as the CPU does
    }
  }
}

// Per row: dLogits = p * (dp - <p, dp>) over the visible keys (0 beyond), written
// to grad_scores times `score_scale`; the clipped and shifted adjoints are formed
// from the unscaled dLogits, each lane recomputing the entries it needs.
template <class T>
__global__ void relative_softmax_backward_kernel(Terms<T> t, const T* probs, const T* grad_probs,
                                                 T score_scale, T* d_scores, T* d_clipped,
                                                 T* d_shifted) {
  const RelativeShape& s = t.shape;
  const std::int64_t lk = s.k_len, k = s.clip, width = 2 * k + 1;
  for (std::int64_t r = cuda::warp_row_index(); r < s.rows; r += cuda::warp_row_count()) {
    const kernel_math::RelativeRow g = row_of(t, r);
    const T* p = probs + r * lk;
    const T* gp = grad_probs + r * lk;
    T dot = T(0);
    for (std::int64_t j = cuda::lane_index(); j < g.limit; j += cuda::kWarp) dot += p[j] * gp[j];
    dot = cuda::warp_sum(dot);
    auto dlogit = [&](std::int64_t j) { return j < g.limit ? p[j] * (gp[j] - dot) : T(0); };
    for (std::int64_t j = cuda::lane_index(); j < lk; j += cuda::kWarp) {
      const T d = dlogit(j);
      d_scores[r * lk + j] = score_scale == T(1) ? d : d * score_scale;
    }
    if (d_clipped) {
      for (std::int64_t c = cuda::lane_index(); c < width; c += cuda::kWarp) {
        const kernel_math::KeyRange keys = kernel_math::keys_of_bin(c, g.qpos, k, g.limit);
        T acc = T(0);
        for (std::int64_t j = keys.first; j <= keys.last; ++j) acc += t.term_scale * dlogit(j);
        d_clipped[r * width + c] = acc;
      }
    }
    if (d_shifted) {
      for (std::int64_t c = cuda::lane_index(); c < lk; c += cuda::kWarp) {
        const std::int64_t j = c - g.offset;
        d_shifted[r * lk + c] = j >= 0 && j < g.limit ? t.term_scale * dlogit(j) : T(0);
      }
    }
  }
}

// d_bias (H, Lq+Lk-1)[h, n] = sum over (batch, query) rows of head h, in that
// order and in double, of the unscaled dLogits at key n - offset.
template <class T>
__global__ void distance_bias_grad_kernel(const T* d_scores, RelativeShape s, std::int64_t heads,
                                          T* d_bias) {
  const std::int64_t lq = s.q_len, lk = s.k_len, n_dist = lq + lk - 1;
  const std::int64_t batch = s.rows / (heads * lq);
  for (std::int64_t e = cuda::thread_index(); e < heads * n_dist; e += cuda::thread_count()) {
    const std::int64_t h = e / n_dist, n = e % n_dist;
    double acc = 0.0;
    for (std::int64_t b = 0; b < batch; ++b) {
      for (std::int64_t i = 0; i < lq; ++i) {
        const std::int64_t j = n - kernel_math::distance_offset(i, lq);
        if (j >= 0 && j < lk) acc += d_scores[((b * heads + h) * lq + i) * lk + j];
      }
    }
    d_bias[e] = static_cast<T>(acc);
  }
}

template <class T>
__global__ void scale_kernel(T* x, std::int64_t n, T factor) {
  for (std::int64_t e = cuda::thread_index(); e < n; e += cuda::thread_count()) x[e] *= factor;
}

template <class T>
const T* optional_data(const Tensor& t) {
  return t.defined() ? t.data<T>() : nullptr;
}

template <class T>
Terms<T> terms_of(const RelativeSoftmaxArgs& a) {
  return {a.scores.data<T>(),
          optional_data<T>(a.distance_bias),
          optional_data<T>(a.clipped),
          optional_data<T>(a.shifted),
          a.shape,
          a.heads,
          static_cast<T>(a.scale),
          static_cast<T>(a.term_scale),
          a.causal};
}

}  // namespace

void CudaBackend::relative_softmax(const RelativeSoftmaxArgs& args, const Tensor& probs) {
  if (args.shape.rows * args.shape.k_len == 0) return;
  dispatch_floating(probs.dtype(), [&](auto zero) {
    using T = decltype(zero);
    relative_softmax_kernel<T><<<cuda::blocks_for_rows(args.shape.rows), cuda::kThreads>>>(
        terms_of<T>(args), probs.data<T>());
    RELPOS_CUDA_CHECK_LAUNCH("relative_softmax_kernel");
  });
}

void CudaBackend::relative_softmax_backward(const RelativeSoftmaxArgs& args, const Tensor& probs,
                                            const Tensor& grad_probs,
                                            const RelativeSoftmaxGrads& grads) {
  const RelativeShape& s = args.shape;
  if (s.rows * s.k_len == 0) return;
  const bool want_bias = grads.distance_bias.defined();
  dispatch_floating(probs.dtype(), [&](auto zero) {
    using T = decltype(zero);
    const T scale = static_cast<T>(args.scale);
    T* d_scores = grads.scores.data<T>();
    // With a bias gradient, dLogits stay unscaled until the bias has been reduced.
    relative_softmax_backward_kernel<T><<<cuda::blocks_for_rows(s.rows), cuda::kThreads>>>(
        terms_of<T>(args), probs.data<T>(), grad_probs.data<T>(), want_bias ? T(1) : scale,
        d_scores, grads.clipped.defined() ? grads.clipped.data<T>() : nullptr,
        grads.shifted.defined() ? grads.shifted.data<T>() : nullptr);
    RELPOS_CUDA_CHECK_LAUNCH("relative_softmax_backward_kernel");
    if (!want_bias) return;
    const std::int64_t n_bias = args.heads * (s.q_len + s.k_len - 1);
    distance_bias_grad_kernel<T><<<cuda::blocks_for(n_bias), cuda::kThreads>>>(
        d_scores, s, args.heads, grads.distance_bias.data<T>());
    RELPOS_CUDA_CHECK_LAUNCH("distance_bias_grad_kernel");
    if (scale == T(1)) return;
    const std::int64_t n_scores = s.rows * s.k_len;
    scale_kernel<T><<<cuda::blocks_for(n_scores), cuda::kThreads>>>(d_scores, n_scores, scale);
    RELPOS_CUDA_CHECK_LAUNCH("scale_kernel");
  });
}

}  // namespace relpos
