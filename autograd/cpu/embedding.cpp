// Embedding gather and its scatter-add backward, on the CPU. Indices are
// validated by the op (ops/embedding.cpp). The backward gives each thread a
// contiguous range of table rows; a thread scans all indices in order and adds
// only into rows it owns, so every row is summed in index order whatever the
// number of threads.
#include <omp.h>

#include <algorithm>
#include <cstring>

#include "autograd/cpu/cpu_backend.h"
#include "autograd/cpu/parallel.h"

namespace relpos {

void CpuBackend::embedding(const Tensor& table, const Tensor& indices, const Tensor& out) {
  dispatch_floating(table.dtype(), [&](auto zero) {
    using T = decltype(zero);
    const std::int64_t count = indices.numel();
    const std::int64_t dim = table.shape().back();
    const T* src = table.data<T>();                          // (vocab, dim)
    const std::int64_t* idx = indices.data<std::int64_t>();  // (count)
    T* dst = out.data<T>();                                  // (count, dim)
    cpu::parallel_for(count, count * dim > 65536, [&](std::int64_t i) {
      std::memcpy(dst + i * dim, src + idx[i] * dim, static_cast<std::size_t>(dim) * sizeof(T));
    });
  });
}

void CpuBackend::embedding_backward(const Tensor& grad_out, const Tensor& indices,
                                    const Tensor& grad_table) {
  dispatch_floating(grad_table.dtype(), [&](auto zero) {
    using T = decltype(zero);
    const std::int64_t count = indices.numel();
    const std::int64_t vocab = grad_table.shape().front();
    const std::int64_t dim = grad_table.shape().back();
    const T* g = grad_out.data<T>();                         // (count, dim)
    const std::int64_t* idx = indices.data<std::int64_t>();  // (count)
    T* dst = grad_table.data<T>();                           // (vocab, dim)
#pragma omp parallel if ((count + vocab) * dim > 65536)
    {
      const std::int64_t threads = omp_get_num_threads(), tid = omp_get_thread_num();
      const std::int64_t lo = vocab * tid / threads, hi = vocab * (tid + 1) / threads;
      std::fill(dst + lo * dim, dst + hi * dim, T(0));
      for (std::int64_t i = 0; i < count; ++i) {
        const std::int64_t v = idx[i];
        if (v < lo || v >= hi) continue;
        T* row = dst + v * dim;
        const T* src = g + i * dim;
        for (std::int64_t j = 0; j < dim; ++j) row[j] += src[j];
      }
    }
  });
}

}  // namespace relpos
