// The backward of a linear layer's activation on the CPU: grad_z = grad_y * f'(z)
// and the bias gradient (the column sums of grad_z) in one pass. The columns are
// split into one block per thread; each column is summed by one thread in row
// order, as sum_axis does, so the result does not depend on the number of threads.
#include <omp.h>

#include <algorithm>
#include <vector>

#include "autograd/cpu/cpu_backend.h"
#include "autograd/cpu/cpu_math.h"
#include "autograd/cpu/parallel.h"
#include "autograd/kernel_math/gelu.h"

namespace relpos {
namespace {

constexpr std::int64_t kParallelElements = 16384;
constexpr std::int64_t kColumnAlign = 16;  // block widths: whole cache lines of f32

template <class T>
void gelu_backward_with_bias(const T* z, const T* grad_y, std::int64_t rows, std::int64_t n,
                             T* grad_z, T* grad_bias) {
  const bool parallel = rows * n > kParallelElements;
  const std::int64_t threads = parallel ? omp_get_max_threads() : 1;
  const std::int64_t width = std::max(
      kColumnAlign, ((n + threads - 1) / threads + kColumnAlign - 1) / kColumnAlign * kColumnAlign);
  const std::int64_t blocks = (n + width - 1) / width;
  cpu::parallel_for(blocks, parallel, [&](std::int64_t b) {
    const std::int64_t j0 = b * width, j1 = std::min(n, j0 + width);
    std::vector<T> sum(static_cast<std::size_t>(j1 - j0), T(0));  // grad_bias[j0:j1]
    for (std::int64_t r = 0; r < rows; ++r) {
      const T* zr = z + r * n + j0;
      const T* gr = grad_y + r * n + j0;
      T* out = grad_z + r * n + j0;
      T* acc = sum.data();
      for (std::int64_t j = 0; j < j1 - j0; ++j) {
        const T d = gr[j] * kernel_math::gelu_tanh_derivative<cpu::CpuMath>(zr[j]);
        out[j] = d;
        acc[j] += d;
      }
    }
    std::copy(sum.begin(), sum.end(), grad_bias + j0);
  });
}

}  // namespace

void CpuBackend::activation_backward(UnaryOp op, const Tensor& z, const Tensor& grad_y,
                                     std::int64_t rows, std::int64_t n, const Tensor& grad_z,
                                     const Tensor& grad_bias) {
  if (op != UnaryOp::gelu_tanh || !grad_bias.defined()) {
    Backend::activation_backward(op, z, grad_y, rows, n, grad_z, grad_bias);
    return;
  }
  dispatch_floating(z.dtype(), [&](auto zero) {
    using T = decltype(zero);
    gelu_backward_with_bias<T>(z.data<T>(), grad_y.data<T>(), rows, n, grad_z.data<T>(),
                               grad_bias.data<T>());
  });
}

}  // namespace relpos
