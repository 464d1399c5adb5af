// Softmax and log-softmax over the last axis of x viewed as (rows, n), on the CPU.
// Each row is handled by one thread and reduced in index order (deterministic);
// row sums are accumulated in double. The row maximum is subtracted before
// exponentiating, so large logits stay finite. A row that is entirely -inf
// gives NaN, as in PyTorch.
#include <cmath>

#include "autograd/cpu/cpu_backend.h"
#include "autograd/cpu/parallel.h"

namespace relpos {
namespace {

template <class T>
void softmax_row(const T* x, T* y, std::int64_t n, bool log) {
  if (n == 0) return;
  T m = x[0];
  for (std::int64_t j = 1; j < n; ++j) m = x[j] > m ? x[j] : m;
  double s = 0.0;
  for (std::int64_t j = 0; j < n; ++j) s += static_cast<double>(std::exp(x[j] - m));
  if (log) {
    const T shift = m + static_cast<T>(std::log(s));  // logsumexp
    for (std::int64_t j = 0; j < n; ++j) y[j] = x[j] - shift;
  } else {
    const T inv = static_cast<T>(1.0 / s);
    for (std::int64_t j = 0; j < n; ++j) y[j] = std::exp(x[j] - m) * inv;
  }
}

// softmax:     dx = y * (dy - sum(dy * y))
// log-softmax: dx = dy - exp(y) * sum(dy)
template <class T>
void softmax_backward_row(const T* y, const T* dy, T* dx, std::int64_t n, bool log) {
  double s = 0.0;
  if (log) {
    for (std::int64_t j = 0; j < n; ++j) s += static_cast<double>(dy[j]);
    const T st = static_cast<T>(s);
    for (std::int64_t j = 0; j < n; ++j) dx[j] = dy[j] - std::exp(y[j]) * st;
  } else {
    for (std::int64_t j = 0; j < n; ++j) s += static_cast<double>(dy[j]) * y[j];
    const T st = static_cast<T>(s);
    for (std::int64_t j = 0; j < n; ++j) dx[j] = y[j] * (dy[j] - st);
  }
}

}  // namespace

void CpuBackend::softmax(const Tensor& x, const Tensor& y, std::int64_t rows, std::int64_t n,
                         bool log) {
  dispatch_floating(x.dtype(), [&](auto zero) {
    using T = decltype(zero);
    const T* px = x.data<T>();  // (rows, n)
    T* py = y.data<T>();        // (rows, n)
    cpu::parallel_for(rows, rows * n > 32768,
                      [&](std::int64_t r) { softmax_row(px + r * n, py + r * n, n, log); });
  });
}

void CpuBackend::softmax_backward(const Tensor& y, const Tensor& grad_y, const Tensor& grad_x,
                                  std::int64_t rows, std::int64_t n, bool log) {
  dispatch_floating(y.dtype(), [&](auto zero) {
    using T = decltype(zero);
    const T* py = y.data<T>();       // (rows, n)
    const T* pg = grad_y.data<T>();  // (rows, n)
    T* pdx = grad_x.data<T>();       // (rows, n)
    cpu::parallel_for(rows, rows * n > 32768, [&](std::int64_t r) {
      softmax_backward_row(py + r * n, pg + r * n, pdx + r * n, n, log);
    });
  });
}

}  // namespace relpos
