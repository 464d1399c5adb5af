// Elementwise kernels on the GPU: binary with broadcasting (stride-0 views),
// unary and their derivatives, and where(). The formulas are the CPU's, from
// autograd/kernel_math/elementwise.h, with the device's math functions.
#include <array>
#include <cstdint>

#include "autograd/cuda/check.h"
#include "autograd/cuda/cuda_backend.h"
#include "autograd/cuda/device_math.cuh"
#include "autograd/cuda/launch.cuh"
#include "autograd/cuda/strided.cuh"
#include "autograd/kernel_math/elementwise.h"

namespace relpos {
namespace {

using cuda::DeviceMath;
using cuda::StridedIndexer;

// out (contiguous) = a (op) b, a and b strided views of out's shape.
template <class T>
__global__ void binary_kernel(BinaryOp op, const T* a, const T* b, T* out, std::int64_t n,
                              StridedIndexer<2> indexer) {
  for (std::int64_t i = cuda::thread_index(); i < n; i += cuda::thread_count()) {
    std::int64_t offset[2];
    indexer.offsets(i, offset);
    out[i] = kernel_math::binary_value(op, a[offset[0]], b[offset[1]]);
  }
}

template <class T>
__global__ void unary_kernel(UnaryOp op, const T* x, T* out, std::int64_t n, T p) {
  for (std::int64_t i = cuda::thread_index(); i < n; i += cuda::thread_count())
    out[i] = kernel_math::unary_value<DeviceMath>(op, x[i], p);
}

template <class T>
__global__ void unary_backward_kernel(UnaryOp op, const T* x, const T* y, const T* grad_y,
                                      T* grad_x, std::int64_t n, T p) {
  for (std::int64_t i = cuda::thread_index(); i < n; i += cuda::thread_count())
    grad_x[i] = grad_y[i] * kernel_math::unary_derivative<DeviceMath>(op, x[i], y[i], p);
}

// out (contiguous) = mask ? a : b, all three strided views of out's shape.
template <class T>
__global__ void where_kernel(const std::uint8_t* mask, const T* a, const T* b, T* out,
                             std::int64_t n, StridedIndexer<3> indexer) {
  for (std::int64_t i = cuda::thread_index(); i < n; i += cuda::thread_count()) {
    std::int64_t offset[3];
    indexer.offsets(i, offset);
    out[i] = mask[offset[0]] ? a[offset[1]] : b[offset[2]];
  }
}

}  // namespace

void CudaBackend::binary(BinaryOp op, const Tensor& a, const Tensor& b, const Tensor& out) {
  const std::int64_t n = out.numel();
  if (n == 0) return;
  const auto indexer = cuda::make_indexer<2>(out.shape(), {&a.strides(), &b.strides()});
  dispatch_floating(out.dtype(), [&](auto zero) {
    using T = decltype(zero);
    binary_kernel<T><<<cuda::blocks_for(n), cuda::kThreads>>>(
        op, static_cast<const T*>(a.raw_data()), static_cast<const T*>(b.raw_data()), out.data<T>(),
        n, indexer);
    RELPOS_CUDA_CHECK_LAUNCH("binary_kernel");
  });
}

void CudaBackend::unary(UnaryOp op, const Tensor& x, const Tensor& out, double param) {
  const std::int64_t n = out.numel();
  if (n == 0) return;
  dispatch_floating(out.dtype(), [&](auto zero) {
    using T = decltype(zero);
    unary_kernel<T><<<cuda::blocks_for(n), cuda::kThreads>>>(op, x.data<T>(), out.data<T>(), n,
                                                             static_cast<T>(param));
    RELPOS_CUDA_CHECK_LAUNCH("unary_kernel");
  });
}

void CudaBackend::unary_backward(UnaryOp op, const Tensor& x, const Tensor& y, const Tensor& grad_y,
                                 const Tensor& grad_x, double param) {
  const std::int64_t n = grad_x.numel();
  if (n == 0) return;
  dispatch_floating(grad_x.dtype(), [&](auto zero) {
    using T = decltype(zero);
    unary_backward_kernel<T><<<cuda::blocks_for(n), cuda::kThreads>>>(
        op, x.data<T>(), y.data<T>(), grad_y.data<T>(), grad_x.data<T>(), n, static_cast<T>(param));
    RELPOS_CUDA_CHECK_LAUNCH("unary_backward_kernel");
  });
}

void CudaBackend::where(const Tensor& mask, const Tensor& a, const Tensor& b, const Tensor& out) {
  const std::int64_t n = out.numel();
  if (n == 0) return;
  const auto indexer =
      cuda::make_indexer<3>(out.shape(), {&mask.strides(), &a.strides(), &b.strides()});
  dispatch_floating(out.dtype(), [&](auto zero) {
    using T = decltype(zero);
    where_kernel<T><<<cuda::blocks_for(n), cuda::kThreads>>>(
        mask.data<std::uint8_t>(), static_cast<const T*>(a.raw_data()),
        static_cast<const T*>(b.raw_data()), out.data<T>(), n, indexer);
    RELPOS_CUDA_CHECK_LAUNCH("where_kernel");
  });
}

}  // namespace relpos
