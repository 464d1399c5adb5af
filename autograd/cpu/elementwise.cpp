// Elementwise kernels on the CPU: binary with broadcasting, unary and their
// derivatives, and where().
#include <algorithm>
#include <array>
#include <cmath>
#include <type_traits>

#include "autograd/cpu/cpu_backend.h"
#include "autograd/cpu/gelu.h"
#include "autograd/cpu/parallel.h"
#include "autograd/cpu/strided.h"

namespace relpos {
namespace {

constexpr double kInvSqrt2 = 0.7071067811865476;
constexpr double kInvSqrt2Pi = 0.3989422804014327;

template <class T>
T apply_binary(BinaryOp op, T a, T b) {
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
T apply_unary(UnaryOp op, T x, T p) {
  switch (op) {
    case UnaryOp::neg:
      return -x;
    case UnaryOp::exp:
      return std::exp(x);
    case UnaryOp::log:
      return std::log(x);
    case UnaryOp::sqrt:
      return std::sqrt(x);
    case UnaryOp::tanh:
      return std::tanh(x);
    case UnaryOp::relu:
      return x > T(0) ? x : T(0);
    case UnaryOp::gelu_tanh:
      return cpu::gelu_tanh(x);
    case UnaryOp::gelu_erf:
      return T(0.5) * x * (T(1) + std::erf(x * T(kInvSqrt2)));
    case UnaryOp::add_scalar:
      return x + p;
    case UnaryOp::mul_scalar:
      return x * p;
    default:
      return std::pow(x, p);
  }
}

// d f(x) / dx, given x and y = f(x).
template <class T>
T unary_derivative(UnaryOp op, T x, T y, T p) {
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
    case UnaryOp::gelu_tanh:
      return cpu::gelu_tanh_derivative(x);
    case UnaryOp::gelu_erf:
      return T(0.5) * (T(1) + std::erf(x * T(kInvSqrt2))) +
             x * T(kInvSqrt2Pi) * std::exp(T(-0.5) * x * x);
    case UnaryOp::add_scalar:
      return T(1);
    case UnaryOp::mul_scalar:
      return p;
    default:
      return p * std::pow(x, p - T(1));
  }
}

template <class T>
void binary_typed(BinaryOp op, const Tensor& a, const Tensor& b, const Tensor& out) {
  const T* pa = static_cast<const T*>(a.raw_data());
  const T* pb = static_cast<const T*>(b.raw_data());
  T* po = static_cast<T*>(out.raw_data());
  if (a.is_contiguous() && b.is_contiguous()) {
    const std::int64_t n = out.numel();
    switch (op) {
#define RELPOS_FLAT_LOOP(OPNAME, EXPR)                                      \
  case BinaryOp::OPNAME:                                                    \
    cpu::parallel_for(n, n > 65536, [&](std::int64_t i) { po[i] = EXPR; }); \
    return;
      RELPOS_FLAT_LOOP(add, pa[i] + pb[i])
      RELPOS_FLAT_LOOP(sub, pa[i] - pb[i])
      RELPOS_FLAT_LOOP(mul, pa[i] * pb[i])
      RELPOS_FLAT_LOOP(div, pa[i] / pb[i])
#undef RELPOS_FLAT_LOOP
    }
  }
  const std::array<const Shape*, 3> strides{&out.strides(), &a.strides(), &b.strides()};
  cpu::for_each_row<3>(out.shape(), strides,
                       [&](std::int64_t, std::int64_t n, const auto& off, const auto& inner) {
                         T* o = po + off[0];
                         const T* x = pa + off[1];
                         const T* y = pb + off[2];
                         for (std::int64_t i = 0; i < n; ++i)
                           o[i] = apply_binary(op, x[i * inner[1]], y[i * inner[2]]);
                       });
}

}  // namespace

void CpuBackend::binary(BinaryOp op, const Tensor& a, const Tensor& b, const Tensor& out) {
  dispatch_floating(out.dtype(), [&](auto zero) { binary_typed<decltype(zero)>(op, a, b, out); });
}

void CpuBackend::unary(UnaryOp op, const Tensor& x, const Tensor& out, double param) {
  dispatch_floating(out.dtype(), [&](auto zero) {
    using T = decltype(zero);
    const T* px = x.data<T>();
    T* po = out.data<T>();
    const T p = static_cast<T>(param);
    const std::int64_t n = out.numel();
    if (op == UnaryOp::gelu_tanh) {  // its own loop, which vectorises
      cpu::parallel_for(n, n > 16384, [&](std::int64_t i) { po[i] = cpu::gelu_tanh(px[i]); });
      return;
    }
    cpu::parallel_for(n, n > 16384, [&](std::int64_t i) { po[i] = apply_unary(op, px[i], p); });
  });
}

void CpuBackend::unary_backward(UnaryOp op, const Tensor& x, const Tensor& y, const Tensor& grad_y,
                                const Tensor& grad_x, double param) {
  dispatch_floating(grad_x.dtype(), [&](auto zero) {
    using T = decltype(zero);
    const T* px = x.data<T>();
    const T* py = y.data<T>();
    const T* pg = grad_y.data<T>();
    T* out = grad_x.data<T>();
    const T p = static_cast<T>(param);
    const std::int64_t n = grad_x.numel();
    if (op == UnaryOp::gelu_tanh) {  // its own loop, which vectorises
      cpu::parallel_for(n, n > 16384,
                        [&](std::int64_t i) { out[i] = pg[i] * cpu::gelu_tanh_derivative(px[i]); });
      return;
    }
    cpu::parallel_for(n, n > 16384, [&](std::int64_t i) {
      out[i] = pg[i] * unary_derivative(op, px[i], py[i], p);
    });
  });
}

void CpuBackend::where(const Tensor& mask, const Tensor& a, const Tensor& b, const Tensor& out) {
  dispatch_floating(out.dtype(), [&](auto zero) {
    using T = decltype(zero);
    const auto* pm = static_cast<const std::uint8_t*>(mask.raw_data());
    const T* pa = static_cast<const T*>(a.raw_data());
    const T* pb = static_cast<const T*>(b.raw_data());
    T* po = out.data<T>();
    const std::array<const Shape*, 4> strides{&out.strides(), &mask.strides(), &a.strides(),
                                              &b.strides()};
    cpu::for_each_row<4>(out.shape(), strides,
                         [&](std::int64_t, std::int64_t n, const auto& off, const auto& inner) {
                           for (std::int64_t i = 0; i < n; ++i)
                             po[off[0] + i * inner[0]] = pm[off[1] + i * inner[1]]
                                                             ? pa[off[2] + i * inner[2]]
                                                             : pb[off[3] + i * inner[3]];
                         });
  });
}

}  // namespace relpos
