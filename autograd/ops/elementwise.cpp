#include "autograd/ops/elementwise.h"

#include "autograd/backend.h"
#include "autograd/error.h"
#include "autograd/ops/check.h"
#include "autograd/ops/reduce.h"
#include "autograd/ops/shape.h"
#include "autograd/tape.h"

namespace relpos {

Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op) {
  const std::size_t rank = std::max(a.size(), b.size());
  Shape out(rank);
  for (std::size_t i = 0; i < rank; ++i) {
    const std::int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    const std::int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (!(da == db || da == 1 || db == 1))
      fail("{}: shapes {} and {} cannot be broadcast together", op, to_string(a), to_string(b));
    out[i] = da == 1 ? db : da;
  }
  return out;
}

Tensor broadcast_view(const Tensor& t, const Shape& shape) {
  const std::size_t rank = shape.size();
  const std::size_t lead = rank - t.shape().size();
  Shape strides(rank, 0);
  for (std::size_t i = lead; i < rank; ++i)
    strides[i] = t.shape()[i - lead] == 1 && shape[i] != 1 ? 0 : t.strides()[i - lead];
  return Tensor::view_of(t, shape, strides, t.offset());
}

Tensor sum_to(const Tensor& grad, const Shape& shape) {
  if (grad.shape() == shape) return grad;
  const std::size_t lead = grad.shape().size() - shape.size();
  std::vector<std::int64_t> axes;
  for (std::size_t i = 0; i < grad.shape().size(); ++i)
    if (i < lead || (shape[i - lead] == 1 && grad.shape()[i] != 1))
      axes.push_back(static_cast<std::int64_t>(i));
  return reshape(sum(grad, axes, true), shape);
}

namespace {

Tensor binary_forward(BinaryOp op, const Tensor& a, const Tensor& b, const char* name) {
  check_same_kind(a, b, name);
  const Shape shape = broadcast_shapes(a.shape(), b.shape(), name);
  Tensor out = Tensor::empty(shape, a.dtype(), a.device());
  backend_of(out).binary(op, broadcast_view(a, shape), broadcast_view(b, shape), out);
  return out;
}

// Records a unary op whose derivative the backend knows.
Tensor unary_op(UnaryOp op, const Tensor& x, double param, const char* name) {
  check_floating(x, name);
  Tensor in = x.contiguous();
  Tensor out = Tensor::empty(x.shape(), x.dtype(), x.device());
  backend_of(out).unary(op, in, out, param);
  if (Tape::should_record({&x})) {
    Tensor y = out.detach();
    Tape::current().record(name, {x}, out,
                           [op, in, y, param](const Tensor& grad) {
                             Tensor g = grad.contiguous();
                             Tensor grad_x = Tensor::empty(in.shape(), in.dtype(), in.device());
                             backend_of(in).unary_backward(op, in, y, g, grad_x, param);
                             return std::vector<Tensor>{grad_x};
                           },
                           {in, y});
  }
  return out;
}

}  // namespace

Tensor add(const Tensor& a, const Tensor& b) {
  Tensor out = binary_forward(BinaryOp::add, a, b, "add");
  if (Tape::should_record({&a, &b})) {
    Shape sa = a.shape(), sb = b.shape();
    Tape::current().record("add", {a, b}, out, [sa, sb](const Tensor& g) {
      return std::vector<Tensor>{sum_to(g, sa), sum_to(g, sb)};
    });
  }
  return out;
}

Tensor sub(const Tensor& a, const Tensor& b) {
  Tensor out = binary_forward(BinaryOp::sub, a, b, "sub");
  if (Tape::should_record({&a, &b})) {
    Shape sa = a.shape(), sb = b.shape();
    Tape::current().record("sub", {a, b}, out, [sa, sb](const Tensor& g) {
      return std::vector<Tensor>{sum_to(g, sa), sum_to(neg(g), sb)};
    });
  }
  return out;
}

Tensor mul(const Tensor& a, const Tensor& b) {
  Tensor out = binary_forward(BinaryOp::mul, a, b, "mul");
  if (Tape::should_record({&a, &b})) {
    const bool need_a = a.requires_grad(), need_b = b.requires_grad();
    Tensor sa = need_b ? a.detach() : Tensor(), sb = need_a ? b.detach() : Tensor();
    Shape shape_a = a.shape(), shape_b = b.shape();
    std::vector<Tensor> saved;
    if (sa.defined()) saved.push_back(sa);
    if (sb.defined()) saved.push_back(sb);
    Tape::current().record(
        "mul", {a, b}, out,
        [sa, sb, shape_a, shape_b](const Tensor& g) {
          return std::vector<Tensor>{sb.defined() ? sum_to(mul(g, sb), shape_a) : Tensor(),
                                     sa.defined() ? sum_to(mul(g, sa), shape_b) : Tensor()};
        },
        saved);
  }
  return out;
}

Tensor div(const Tensor& a, const Tensor& b) {
  Tensor out = binary_forward(BinaryOp::div, a, b, "div");
  if (Tape::should_record({&a, &b})) {
    Tensor sb = b.detach(), y = out.detach();
    Shape shape_a = a.shape(), shape_b = b.shape();
    const bool need_b = b.requires_grad();
    Tape::current().record("div", {a, b}, out,
                           [sb, y, shape_a, shape_b, need_b](const Tensor& g) {
                             Tensor ga = div(g, sb);  // d(a/b)/da = 1/b
                             Tensor gb = need_b ? sum_to(neg(mul(ga, y)), shape_b)
                                                : Tensor();  // -a/b^2 = -y/b
                             return std::vector<Tensor>{sum_to(ga, shape_a), gb};
                           },
                           {sb, y});
  }
  return out;
}

Tensor add_scalar(const Tensor& x, double s) {
  return unary_op(UnaryOp::add_scalar, x, s, "add_scalar");
}
Tensor mul_scalar(const Tensor& x, double s) {
  return unary_op(UnaryOp::mul_scalar, x, s, "mul_scalar");
}
Tensor pow_scalar(const Tensor& x, double e) {
  return unary_op(UnaryOp::pow_scalar, x, e, "pow_scalar");
}
Tensor neg(const Tensor& x) { return unary_op(UnaryOp::neg, x, 0.0, "neg"); }
Tensor exp(const Tensor& x) { return unary_op(UnaryOp::exp, x, 0.0, "exp"); }
Tensor log(const Tensor& x) { return unary_op(UnaryOp::log, x, 0.0, "log"); }
Tensor sqrt(const Tensor& x) { return unary_op(UnaryOp::sqrt, x, 0.0, "sqrt"); }
Tensor tanh(const Tensor& x) { return unary_op(UnaryOp::tanh, x, 0.0, "tanh"); }
Tensor relu(const Tensor& x) { return unary_op(UnaryOp::relu, x, 0.0, "relu"); }

Tensor gelu(const Tensor& x, GeluApproximation approximation) {
  return approximation == GeluApproximation::tanh
             ? unary_op(UnaryOp::gelu_tanh, x, 0.0, "gelu_tanh")
             : unary_op(UnaryOp::gelu_erf, x, 0.0, "gelu_erf");
}

}  // namespace relpos
