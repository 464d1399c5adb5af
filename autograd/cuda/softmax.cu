// Softmax and log-softmax over the last axis of x viewed as (rows, n), on the
// GPU: one warp per row. As on the CPU, the row maximum is subtracted before
// exponentiating and the row sums are accumulated in double; the lanes' partial
// sums meet in a fixed shuffle tree, so results are deterministic.
#include <cmath>
#include <cstdint>

#include "autograd/cuda/check.h"
#include "autograd/cuda/cuda_backend.h"
#include "autograd/cuda/launch.cuh"
#include "autograd/cuda/warp.cuh"

namespace relpos {
namespace {

template <class T>
__global__ void softmax_kernel(const T* x, T* y, std::int64_t rows, std::int64_t n, bool log) {
  for (std::int64_t r = cuda::warp_row_index(); r < rows; r += cuda::warp_row_count()) {
    const T* in = x + r * n;  // (n)
    T* out = y + r * n;       // (n)
    T m = T(-INFINITY);
    for (std::int64_t j = cuda::lane_index(); j < n; j += cuda::kWarp) m = in[j] > m ? in[j] : m;
    m = cuda::warp_max(m);
    double s = 0.0;
    for (std::int64_t j = cuda::lane_index(); j < n; j += cuda::kWarp)
      s += static_cast<double>(::exp(in[j] - m));
    s = cuda::warp_sum(s);
    if (log) {
      const T shift = m + static_cast<T>(::log(s));  // logsumexp
      for (std::int64_t j = cuda::lane_index(); j < n; j += cuda::kWarp) out[j] = in[j] - shift;
    } else {
      const T inv = static_cast<T>(1.0 / s);
      for (std::int64_t j = cuda::lane_index(); j < n; j += cuda::kWarp)
        out[j] = ::exp(in[j] - m) * inv;
    }
  }
}

// softmax:     dx = y * (dy - sum(dy * y))
// log-softmax: dx = dy - exp(y) * sum(dy)
template <class T>
__global__ void softmax_backward_kernel(const T* y, const T* dy, T* dx, std::int64_t rows,
                                        std::int64_t n, bool log) {
  for (std::int64_t r = cuda::warp_row_index(); r < rows; r += cuda::warp_row_count()) {
    const T* yr = y + r * n;    // (n)
    const T* dyr = dy + r * n;  // (n)
    T* dxr = dx + r * n;        // (n)
    double s = 0.0;
    for (std::int64_t j = cuda::lane_index(); j < n; j += cuda::kWarp)
      s += log ? static_cast<double>(dyr[j]) : static_cast<double>(dyr[j]) * yr[j];
    const T st = static_cast<T>(cuda::warp_sum(s));
    for (std::int64_t j = cuda::lane_index(); j < n; j += cuda::kWarp)
      dxr[j] = log ? dyr[j] - ::exp(yr[j]) * st : yr[j] * (dyr[j] - st);
  }
}

}  // namespace

void CudaBackend::softmax(const Tensor& x, const Tensor& y, std::int64_t rows, std::int64_t n,
                          bool log) {
  if (rows * n == 0) return;
  dispatch_floating(x.dtype(), [&](auto zero) {
    using T = decltype(zero);
    softmax_kernel<T>
        <<<cuda::blocks_for_rows(rows), cuda::kThreads>>>(x.data<T>(), y.data<T>(), rows, n, log);
    RELPOS_CUDA_CHECK_LAUNCH("softmax_kernel");
  });
}

void CudaBackend::softmax_backward(const Tensor& y, const Tensor& grad_y, const Tensor& grad_x,
                                   std::int64_t rows, std::int64_t n, bool log) {
  if (rows * n == 0) return;
  dispatch_floating(y.dtype(), [&](auto zero) {
    using T = decltype(zero);
    softmax_backward_kernel<T><<<cuda::blocks_for_rows(rows), cuda::kThreads>>>(
        y.data<T>(), grad_y.data<T>(), grad_x.data<T>(), rows, n, log);
    RELPOS_CUDA_CHECK_LAUNCH("softmax_backward_kernel");
  });
}

}  // namespace relpos
