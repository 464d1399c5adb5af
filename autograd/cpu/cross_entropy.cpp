// Cross-entropy of logits (rows, classes) against i64 targets (rows), on the CPU.
// Targets are validated by the op (ops/loss.cpp): each is ignore_index or in
// [0, classes). One thread per row; the logsumexp is accumulated in double.
#include <cmath>

#include "autograd/cpu/cpu_backend.h"
#include "autograd/cpu/parallel.h"

namespace relpos {
namespace {

template <class T>
T row_logsumexp(const T* x, std::int64_t n) {
  if (n == 0) return T(0);
  T m = x[0];
  for (std::int64_t j = 1; j < n; ++j) m = x[j] > m ? x[j] : m;
  double s = 0.0;
  for (std::int64_t j = 0; j < n; ++j) s += static_cast<double>(std::exp(x[j] - m));
  return m + static_cast<T>(std::log(s));
}

}  // namespace

void CpuBackend::cross_entropy(const Tensor& logits, const Tensor& targets,
                               std::int64_t ignore_index, const Tensor& loss, const Tensor& lse) {
  dispatch_floating(logits.dtype(), [&](auto zero) {
    using T = decltype(zero);
    const std::int64_t rows = targets.numel();
    const std::int64_t classes = rows == 0 ? 0 : logits.numel() / rows;
    const T* px = logits.data<T>();                         // (rows, classes)
    const std::int64_t* pt = targets.data<std::int64_t>();  // (rows)
    T* pl = loss.data<T>();                                 // (rows)
    T* ps = lse.data<T>();                                  // (rows)
    cpu::parallel_for(rows, rows * classes > 32768, [&](std::int64_t r) {
      const T* row = px + r * classes;
      const std::int64_t t = pt[r];
      if (t == ignore_index) {
        ps[r] = T(0);
        pl[r] = T(0);
        return;
      }
      ps[r] = row_logsumexp(row, classes);
      pl[r] = ps[r] - row[t];
    });
  });
}

void CpuBackend::cross_entropy_backward(const Tensor& logits, const Tensor& targets,
                                        std::int64_t ignore_index, const Tensor& lse,
                                        const Tensor& grad_loss, const Tensor& grad_logits) {
  dispatch_floating(logits.dtype(), [&](auto zero) {
    using T = decltype(zero);
    const std::int64_t rows = targets.numel();
    const std::int64_t classes = rows == 0 ? 0 : logits.numel() / rows;
    const T* px = logits.data<T>();                         // (rows, classes)
    const std::int64_t* pt = targets.data<std::int64_t>();  // (rows)
    const T* ps = lse.data<T>();                            // (rows)
    const T* pg = grad_loss.data<T>();                      // (rows)
    T* pdx = grad_logits.data<T>();                         // (rows, classes)
    cpu::parallel_for(rows, rows * classes > 32768, [&](std::int64_t r) {
      const T* row = px + r * classes;
      T* out = pdx + r * classes;
      const std::int64_t t = pt[r];
      if (t == ignore_index) {
        for (std::int64_t j = 0; j < classes; ++j) out[j] = T(0);
        return;
      }
      const T g = pg[r];
      for (std::int64_t j = 0; j < classes; ++j) out[j] = g * std::exp(row[j] - ps[r]);
      out[t] -= g;
    });
  });
}

}  // namespace relpos
