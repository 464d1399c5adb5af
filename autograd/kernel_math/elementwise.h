#pragma once
// Values and derivatives of the elementwise operations (kernel_math/elementwise_ops.h),
// written once for every backend. `Math` supplies the elementary functions
// (kernel_math/host_device.h).
#include "autograd/kernel_math/elementwise_ops.h"
#include "autograd/kernel_math/gelu.h"
#include "autograd/kernel_math/host_device.h"

namespace relpos::kernel_math {

template <class T>
RELPOS_HOST_DEVICE inline T binary_value(BinaryOp op, T a, T b) {
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

// f(x) for the op; p is its scalar parameter (add_scalar, mul_scalar, pow_scalar).
template <class Math, class T>
RELPOS_HOST_DEVICE inline T unary_value(UnaryOp op, T x, T p) {
  switch (op) {
    case UnaryOp::neg:
      return -x;
    case UnaryOp::exp:
      return Math::exp(x);
    case UnaryOp::log:
      return Math::log(x);
    case UnaryOp::sqrt:
      return Math::sqrt(x);
    case UnaryOp::tanh:
      return Math::tanh(x);
    case UnaryOp::relu:
      return x > T(0) ? x : T(0);
    case UnaryOp::gelu_tanh:
      return gelu_tanh<Math>(x);
    case UnaryOp::gelu_erf:
      return gelu_erf<Math>(x);
    case UnaryOp::add_scalar:
      return x + p;
    case UnaryOp::mul_scalar:
      return x * p;
    default:
      return Math::pow(x, p);
  }
}

// d f(x) / dx, given x and y = f(x).
template <class Math, class T>
RELPOS_HOST_DEVICE inline T unary_derivative(UnaryOp op, T x, T y, T p) {
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
      return gelu_tanh_derivative<Math>(x);
    case UnaryOp::gelu_erf:
      return gelu_erf_derivative<Math>(x);
    case UnaryOp::add_scalar:
      return T(1);
    case UnaryOp::mul_scalar:
      return p;
    default:
      return p * Math::pow(x, p - T(1));
  }
}

}  // namespace relpos::kernel_math
