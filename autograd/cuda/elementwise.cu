// Elementwise kernels on the GPU: binary with broadcasting (stride-0 views),
// unary and their derivatives, and where(). The formulas are the CPU's
// (autograd/cpu/elementwise.cpp) with the device's math functions.
#include <array>
#include <cstdint>

#include "autograd/cuda/check.h"
#include "autograd/cuda/cuda_backend.h"
#include "autograd/cuda/launch.cuh"
#include "autograd/cuda/strided.cuh"

namespace relpos {
namespace {

using cuda::StridedIndexer;

constexpr double kSqrt2OverPi = 0.7978845608028654;
constexpr double kGeluCubic = 0.044715;
constexpr double kInvSqrt2 = 0.7071067811865476;
constexpr double kInvSqrt2Pi = 0.3989422804014327;

template <class T>
__device__ T apply_binary(BinaryOp op, T a, T b) {
  switch (op) {
    case BinaryOp::add:
      return a + b;
    case BinaryOp::sub:
      return a - b;
    case BinaryOp::mul:
      return a * b;
    default:
      return a / b;
  }
}

template <class T>
__device__ T apply_unary(UnaryOp op, T x, T p) {
  switch (op) {
    case UnaryOp::neg:
      return -x;
    case UnaryOp::exp:
      return ::exp(x);
    case UnaryOp::log:
      return ::log(x);
    case UnaryOp::sqrt:
      return ::sqrt(x);
    case UnaryOp::tanh:
      return ::tanh(x);
    case UnaryOp::relu:
      return x > T(0) ? x : T(0);
    case UnaryOp::gelu_tanh: {
      const T inner = T(kSqrt2OverPi) * (x + T(kGeluCubic) * x * x * x);
      return T(0.5) * x * (T(1) + ::tanh(inner));
    }
    case UnaryOp::gelu_erf:
      return T(0.5) * x * (T(1) + ::erf(x * T(kInvSqrt2)));
    case UnaryOp::add_scalar:
      return x + p;
    case UnaryOp::mul_scalar:
      return x * p;
    default:
      return ::pow(x, p);
  }
}

// d f(x) / dx, given x and y = f(x).
template <class T>
__device__ T unary_derivative(UnaryOp op, T x, T y, T p) {
  switch (op) {
    case UnaryOp::neg:
      return T(-1);
    case UnaryOp::exp:
      return y;
    case UnaryOp::log:
      return T(1) / x;
    case UnaryOp::sqrt:
      return T(0.5) / y;
    case UnaryOp::tanh:
      return T(1) - y * y;
    case UnaryOp::relu:
      return x > T(0) ? T(1) : T(0);
    case UnaryOp::gelu_tanh: {
      const T inner = T(kSqrt2OverPi) * (x + T(kGeluCubic) * x * x * x);
      const T t = ::tanh(inner);
      const T dinner = T(kSqrt2OverPi) * (T(1) + T(3 * kGeluCubic) * x * x);
      return T(0.5) * (T(1) + t) + T(0.5) * x * (T(1) - t * t) * dinner;
    }
    case UnaryOp::gelu_erf:
      return T(0.5) * (T(1) + ::erf(x * T(kInvSqrt2))) +
             x * T(kInvSqrt2Pi) * ::exp(T(-0.5) * x * x);
    case UnaryOp::add_scalar:
      return T(1);
    case UnaryOp::mul_scalar:
      return p;
    default:
      return p * ::pow(x, p - T(1));
  }
}

// out (contiguous) = a (op) b, a and b strided views of out's shape.
template <class T>
__global__ void binary_kernel(BinaryOp op, const T* a, const T* b, T* out, std::int64_t n,
                              StridedIndexer<2> indexer) {
  for (std::int64_t i = cuda::thread_index(); i < n; i += cuda::thread_count()) {
    std::int64_t offset[2];
    indexer.offsets(i, offset);
    out[i] = apply_binary(op, a[offset[0]], b[offset[1]]);
  }
}

template <class T>
__global__ void unary_kernel(UnaryOp op, const T* x, T* out, std::int64_t n, T p) {
  for (std::int64_t i = cuda::thread_index(); i < n; i += cuda::thread_count())
    out[i] = apply_unary(op, x[i], p);
}

template <class T>
__global__ void unary_backward_kernel(UnaryOp op, const T* x, const T* y, const T* grad_y,
                                      T* grad_x, std::int64_t n, T p) {
  for (std::int64_t i = cuda::thread_index(); i < n; i += cuda::thread_count())
    grad_x[i] = grad_y[i] * unary_derivative(op, x[i], y[i], p);
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
