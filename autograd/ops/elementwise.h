#pragma once
// Differentiable elementwise ops with NumPy broadcasting.
#include "autograd/tensor.h"

namespace relpos {

Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op);
// A stride-0 view of t with the given (broadcast-compatible) shape; no copy, not recorded.
Tensor broadcast_view(const Tensor& t, const Shape& shape);
// Sums grad over broadcast axes so that it has `shape` (the inverse of broadcasting).
Tensor sum_to(const Tensor& grad, const Shape& shape);

Tensor add(const Tensor& a, const Tensor& b);
Tensor sub(const Tensor& a, const Tensor& b);
Tensor mul(const Tensor& a, const Tensor& b);
Tensor div(const Tensor& a, const Tensor& b);

Tensor add_scalar(const Tensor& x, double s);
Tensor mul_scalar(const Tensor& x, double s);
Tensor pow_scalar(const Tensor& x, double exponent);

Tensor neg(const Tensor& x);
Tensor exp(const Tensor& x);
Tensor log(const Tensor& x);
Tensor sqrt(const Tensor& x);
Tensor tanh(const Tensor& x);
Tensor relu(const Tensor& x);
enum class GeluApproximation { tanh, erf };
Tensor gelu(const Tensor& x, GeluApproximation approximation = GeluApproximation::tanh);

inline Tensor operator+(const Tensor& a, const Tensor& b) { return add(a, b); }
inline Tensor operator-(const Tensor& a, const Tensor& b) { return sub(a, b); }
inline Tensor operator*(const Tensor& a, const Tensor& b) { return mul(a, b); }
inline Tensor operator/(const Tensor& a, const Tensor& b) { return div(a, b); }
inline Tensor operator-(const Tensor& x) { return neg(x); }
inline Tensor operator+(const Tensor& x, double s) { return add_scalar(x, s); }
inline Tensor operator+(double s, const Tensor& x) { return add_scalar(x, s); }
inline Tensor operator-(const Tensor& x, double s) { return add_scalar(x, -s); }
inline Tensor operator-(double s, const Tensor& x) { return add_scalar(neg(x), s); }
inline Tensor operator*(const Tensor& x, double s) { return mul_scalar(x, s); }
inline Tensor operator*(double s, const Tensor& x) { return mul_scalar(x, s); }
inline Tensor operator/(const Tensor& x, double s) { return mul_scalar(x, 1.0 / s); }

}  // namespace relpos
