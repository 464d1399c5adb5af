// Reductions over the middle axis of (outer, n, inner) on the CPU. Each output
// element is summed in index order by one thread, so results are deterministic.
#include <algorithm>

#include "autograd/cpu/cpu_backend.h"
#include "autograd/cpu/parallel.h"

namespace relpos {
namespace {

// sum_axis splits each outer slice into blocks of this many inner columns, so
// that a reduction over all rows (outer = 1, e.g. a bias gradient) still runs
// on every thread.
constexpr std::int64_t kSumColumnBlock = 64;

}  // namespace

void CpuBackend::sum_axis(const Tensor& x, std::int64_t outer, std::int64_t n, std::int64_t inner,
                          const Tensor& out) {
  dispatch_floating(x.dtype(), [&](auto zero) {
    using T = decltype(zero);
    const T* px = x.data<T>();
    T* po = out.data<T>();
    const std::int64_t blocks = (inner + kSumColumnBlock - 1) / kSumColumnBlock;
    cpu::parallel_for(outer * blocks, outer * n * inner > 32768, [&](std::int64_t task) {
      const std::int64_t o = task / blocks;
      const std::int64_t i0 = task % blocks * kSumColumnBlock;
      const std::int64_t i1 = std::min(inner, i0 + kSumColumnBlock);
      T* row = po + o * inner;
      for (std::int64_t i = i0; i < i1; ++i) row[i] = T(0);
      for (std::int64_t r = 0; r < n; ++r) {
        const T* src = px + (o * n + r) * inner;
        for (std::int64_t i = i0; i < i1; ++i) row[i] += src[i];
      }
    });
  });
}

void CpuBackend::max_axis(const Tensor& x, std::int64_t outer, std::int64_t n, std::int64_t inner,
                          const Tensor& out, const Tensor& argmax) {
  dispatch_floating(x.dtype(), [&](auto zero) {
    using T = decltype(zero);
    const T* px = x.data<T>();
    T* po = out.data<T>();
    std::int64_t* pi = argmax.data<std::int64_t>();
    cpu::parallel_for(outer, outer * n * inner > 32768, [&](std::int64_t o) {
      for (std::int64_t i = 0; i < inner; ++i) {
        const T* src = px + o * n * inner + i;
        T best = src[0];
        std::int64_t where = 0;
        // NaN wins (as in PyTorch): once best is NaN, nothing replaces it.
        for (std::int64_t r = 1; r < n && best == best; ++r) {
          if (src[r * inner] > best || src[r * inner] != src[r * inner]) {
            best = src[r * inner];
            where = r;
          }
        }
        po[o * inner + i] = best;
        pi[o * inner + i] = where;
      }
    });
  });
}

void CpuBackend::max_axis_backward(const Tensor& grad_out, const Tensor& argmax, std::int64_t outer,
                                   std::int64_t n, std::int64_t inner, const Tensor& grad_x) {
  dispatch_floating(grad_x.dtype(), [&](auto zero) {
    using T = decltype(zero);
    const T* pg = grad_out.data<T>();
    const std::int64_t* pi = argmax.data<std::int64_t>();
    T* px = grad_x.data<T>();
    const std::int64_t total = outer * n * inner;
    cpu::parallel_for(total, total > 65536, [&](std::int64_t e) { px[e] = T(0); });
    for (std::int64_t o = 0; o < outer; ++o)
      for (std::int64_t i = 0; i < inner; ++i)
        px[(o * n + pi[o * inner + i]) * inner + i] = pg[o * inner + i];
  });
}

}  // namespace relpos
