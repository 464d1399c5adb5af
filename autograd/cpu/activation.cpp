// A linear layer's bias and activation on the CPU, one pass each way. Forward: z += bias,
// y = f(z) and, under bf16, y rounded to bf16 for the next product, row by row (one
// thread per row). Backward: grad_z = grad_y * f'(z), the bias gradient (the column
// sums of grad_z) and, under bf16, grad_z rounded to bf16 for the layer's dx and dW
// products; the columns are split into one block per thread, and each column is summed by
// one thread in row order, as sum_axis does. Neither result depends on the number of
// threads.
#include <omp.h>

#include <algorithm>
#include <type_traits>
#include <vector>

#include "autograd/cpu/bf16_round.h"
#include "autograd/cpu/cpu_backend.h"
#include "autograd/cpu/cpu_math.h"
#include "autograd/cpu/parallel.h"
#include "autograd/kernel_math/gelu.h"

namespace relpos {
namespace {

constexpr std::int64_t kParallelElements = 16384;
constexpr std::int64_t kColumnAlign = 16;  // block widths: whole cache lines of f32
static_assert(kColumnAlign % 16 == 0, "blocks must start where round_row_to_bf16's pieces do");

// z (rows, n) += bias (n, or null); y = gelu(z); y16 (rows, n, or null) = bf16(y).
template <class T>
void bias_gelu_forward(const T* bias, std::int64_t rows, std::int64_t n, T* z, T* y,
                       std::uint16_t* y16) {
  cpu::parallel_for(rows, rows * n > kParallelElements, [&](std::int64_t r) {
    T* zr = z + r * n;
    T* yr = y + r * n;
    if (bias) {
      for (std::int64_t j = 0; j < n; ++j) {
        const T v = zr[j] + bias[j];
        zr[j] = v;
        yr[j] = kernel_math::gelu_tanh<cpu::CpuMath>(v);
      }
    } else {
      for (std::int64_t j = 0; j < n; ++j) yr[j] = kernel_math::gelu_tanh<cpu::CpuMath>(zr[j]);
    }
    if constexpr (std::is_same_v<T, float>) {
      if (y16) cpu::round_row_to_bf16(yr, n, y16 + r * n);
    }
  });
}

// grad_z = grad_y * gelu'(z), grad_bias = its column sums, grad_z16 (null or rows * n) =
// bf16(grad_z). Blocks start at multiples of 16 columns, so each block rounds its part of a
// row in the 16-value pieces (and the row's tail) in which a product rounds the whole row:
// the same bits.
template <class T>
void gelu_backward_with_bias(const T* z, const T* grad_y, std::int64_t rows, std::int64_t n,
                             T* grad_z, T* grad_bias, std::uint16_t* grad_z16) {
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
      if constexpr (std::is_same_v<T, float>) {
        if (grad_z16) cpu::round_row_to_bf16(out, j1 - j0, grad_z16 + r * n + j0);
      }
    }
    std::copy(sum.begin(), sum.end(), grad_bias + j0);
  });
}

}  // namespace

void CpuBackend::activation_forward(UnaryOp op, const Tensor& bias, std::int64_t rows,
                                    std::int64_t n, const Tensor& z, const Tensor& y,
                                    std::uint16_t* y_bf16) {
  if (op != UnaryOp::gelu_tanh || (y_bf16 != nullptr && z.dtype() != DType::f32)) {
    Backend::activation_forward(op, bias, rows, n, z, y, y_bf16);
    return;
  }
  dispatch_floating(z.dtype(), [&](auto zero) {
    using T = decltype(zero);
    bias_gelu_forward<T>(bias.defined() ? bias.data<T>() : nullptr, rows, n, z.data<T>(),
                         y.data<T>(), y_bf16);
  });
}

void CpuBackend::activation_backward(UnaryOp op, const Tensor& z, const Tensor& grad_y,
                                     std::int64_t rows, std::int64_t n, const Tensor& grad_z,
                                     const Tensor& grad_bias, std::uint16_t* grad_z_bf16) {
  if (op != UnaryOp::gelu_tanh || !grad_bias.defined() ||
      (grad_z_bf16 != nullptr && z.dtype() != DType::f32)) {
    Backend::activation_backward(op, z, grad_y, rows, n, grad_z, grad_bias, grad_z_bf16);
    return;
  }
  dispatch_floating(z.dtype(), [&](auto zero) {
    using T = decltype(zero);
    gelu_backward_with_bias<T>(z.data<T>(), grad_y.data<T>(), rows, n, grad_z.data<T>(),
                               grad_bias.data<T>(), grad_z_bf16);
  });
}

}  // namespace relpos
