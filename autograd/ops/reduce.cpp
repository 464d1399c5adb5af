#include "autograd/ops/reduce.h"

#include <algorithm>
#include <numeric>

#include "autograd/backend.h"
#include "autograd/ops/check.h"
#include "autograd/ops/elementwise.h"
#include "autograd/ops/shape.h"
#include "autograd/tape.h"

namespace relpos {
namespace {

struct ReducePlan {
  Tensor input;  // contiguous, viewed as (outer, n, inner)
  std::int64_t outer = 1, n = 1, inner = 1;
  Shape keep_shape;  // the result's shape with keepdim
  Shape out_shape;   // the result's shape as requested
};

// Moves the reduced axes to the end so that the reduction is over contiguous rows.
ReducePlan plan_reduction(const Tensor& x, std::vector<std::int64_t> axes, bool keepdim,
                          const char* op) {
  const std::int64_t rank = x.dim();
  for (auto& a : axes) a = normalize_axis(a, rank, op);
  std::sort(axes.begin(), axes.end());
  require(std::adjacent_find(axes.begin(), axes.end()) == axes.end(), "{}: repeated axis", op);
  ReducePlan plan;
  for (std::int64_t a = 0; a < rank; ++a) {
    const bool reduced = std::binary_search(axes.begin(), axes.end(), a);
    plan.keep_shape.push_back(reduced ? 1 : x.shape()[a]);
    if (!reduced) plan.out_shape.push_back(x.shape()[a]);
  }
  if (keepdim) plan.out_shape = plan.keep_shape;
  // Reduced axes forming one contiguous block: (outer, n, inner) without a copy.
  if (!axes.empty() && axes.back() - axes.front() + 1 == static_cast<std::int64_t>(axes.size())) {
    for (std::int64_t a = 0; a < rank; ++a) {
      const std::int64_t size = x.shape()[a];
      (a < axes.front() ? plan.outer : a > axes.back() ? plan.inner : plan.n) *= size;
    }
    plan.input = x.contiguous();
    return plan;
  }
  std::vector<std::int64_t> order;
  for (std::int64_t a = 0; a < rank; ++a)
    if (!std::binary_search(axes.begin(), axes.end(), a)) order.push_back(a);
  const std::size_t kept = order.size();
  order.insert(order.end(), axes.begin(), axes.end());
  for (std::int64_t a = 0; a < rank; ++a)
    (std::binary_search(axes.begin(), axes.end(), a) ? plan.n : plan.outer) *= x.shape()[a];
  Tensor moved = kept == static_cast<std::size_t>(rank) ? x : permute(x.detach(), order);
  plan.input = moved.contiguous();
  return plan;
}

Tensor sum_impl(const Tensor& x, const std::vector<std::int64_t>& axes, bool keepdim, double scale,
                const char* op) {
  check_floating(x, op);
  ReducePlan plan = plan_reduction(x, axes, keepdim, op);
  Tensor out = Tensor::empty(plan.out_shape, x.dtype(), x.device());
  backend_of(out).sum_axis(plan.input, plan.outer, plan.n, plan.inner, out);
  if (scale != 1.0) backend_of(out).unary(UnaryOp::mul_scalar, out, out, scale);
  if (Tape::should_record({&x})) {
    Shape in_shape = x.shape(), keep_shape = plan.keep_shape;
    Tape::current().record(op, {x}, out, [in_shape, keep_shape, scale](const Tensor& g) {
      Tensor spread = broadcast_view(reshape(g, keep_shape), in_shape).contiguous();
      return std::vector<Tensor>{scale == 1.0 ? spread : mul_scalar(spread, scale)};
    });
  }
  return out;
}

std::vector<std::int64_t> all_axes(const Tensor& x) {
  std::vector<std::int64_t> axes(static_cast<std::size_t>(x.dim()));
  std::iota(axes.begin(), axes.end(), 0);
  return axes;
}

}  // namespace

Tensor sum(const Tensor& x, const std::vector<std::int64_t>& axes, bool keepdim) {
  return sum_impl(x, axes, keepdim, 1.0, "sum");
}

Tensor sum(const Tensor& x) { return sum(x, all_axes(x), false); }

Tensor mean(const Tensor& x, const std::vector<std::int64_t>& axes, bool keepdim) {
  std::int64_t count = 1;
  for (std::int64_t a : axes) count *= x.size(a);
  require(count > 0, "mean: reducing {} over empty axes", x.describe());
  return sum_impl(x, axes, keepdim, 1.0 / static_cast<double>(count), "mean");
}

Tensor mean(const Tensor& x) { return mean(x, all_axes(x), false); }

Tensor max(const Tensor& x, std::int64_t axis, bool keepdim) {
  check_floating(x, "max");
  const std::int64_t a = normalize_axis(axis, x.dim(), "max");
  require(x.shape()[a] > 0, "max: axis {} of {} is empty", axis, x.describe());
  Tensor in = x.contiguous();
  std::int64_t outer = 1, inner = 1;
  for (std::int64_t i = 0; i < a; ++i) outer *= x.shape()[i];
  for (std::int64_t i = a + 1; i < x.dim(); ++i) inner *= x.shape()[i];
  const std::int64_t n = x.shape()[a];
  Shape keep_shape = x.shape();
  keep_shape[a] = 1;
  Shape out_shape = x.shape();
  out_shape.erase(out_shape.begin() + a);
  Tensor out = Tensor::empty(keepdim ? keep_shape : out_shape, x.dtype(), x.device());
  Tensor argmax = Tensor::empty(out.shape(), DType::i64, x.device());
  backend_of(out).max_axis(in, outer, n, inner, out, argmax);
  if (Tape::should_record({&x})) {
    Shape in_shape = x.shape();
    DType dtype = x.dtype();
    Tape::current().record("max", {x}, out, [=](const Tensor& g) {
      Tensor grad_x = Tensor::empty(in_shape, dtype, g.device());
      backend_of(g).max_axis_backward(g.contiguous(), argmax, outer, n, inner, grad_x);
      return std::vector<Tensor>{grad_x};
    });
  }
  return out;
}

}  // namespace relpos
