#include "autograd/ops/shape.h"

#include <algorithm>

#include "autograd/backend.h"
#include "autograd/ops/check.h"
#include "autograd/ops/elementwise.h"
#include "autograd/tape.h"

namespace relpos {
namespace {

Shape infer_shape(const Tensor& x, Shape shape) {
  std::int64_t known = 1, unknown = -1;
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == -1) {
      if (!(unknown < 0)) fail("reshape: more than one -1 in {}", to_string(shape));
      unknown = static_cast<std::int64_t>(i);
    } else {
      if (!(shape[i] >= 0)) fail("reshape: negative size in {}", to_string(shape));
      known *= shape[i];
    }
  }
  if (unknown >= 0) {
    if (!(known > 0 && x.numel() % known == 0))
      fail("reshape: cannot reshape {} to {}", x.describe(), to_string(shape));
    shape[unknown] = x.numel() / known;
  }
  if (!(numel_of(shape) == x.numel()))
    fail("reshape: cannot reshape {} ({} elements) to {}", x.describe(), x.numel(),
         to_string(shape));
  return shape;
}

}  // namespace

Tensor reshape(const Tensor& x, const Shape& requested) {
  Shape shape = infer_shape(x, requested);
  Tensor base = x.contiguous();
  Tensor out = Tensor::view_of(base, shape, contiguous_strides(shape), base.offset());
  if (Tape::should_record({&x})) {
    Shape in_shape = x.shape();
    Tape::current().record("reshape", {x}, out, [in_shape](const Tensor& g) {
      return std::vector<Tensor>{reshape(g, in_shape)};
    });
  }
  return out;
}

Tensor permute(const Tensor& x, const std::vector<std::int64_t>& order) {
  const std::int64_t rank = x.dim();
  if (!(static_cast<std::int64_t>(order.size()) == rank))
    fail("permute: order of length {} for tensor {}", order.size(), x.describe());
  std::vector<std::int64_t> axes(order.size());
  std::vector<bool> seen(order.size(), false);
  Shape shape(order.size()), strides(order.size());
  for (std::size_t i = 0; i < order.size(); ++i) {
    const std::int64_t a = normalize_axis(order[i], rank, "permute");
    require(!seen[a], "permute: axis {} repeated", a);
    seen[a] = true;
    axes[i] = a;
    shape[i] = x.shape()[a];
    strides[i] = x.strides()[a];
  }
  Tensor out = Tensor::view_of(x, shape, strides, x.offset());
  if (Tape::should_record({&x})) {
    std::vector<std::int64_t> inverse(axes.size());
    for (std::size_t i = 0; i < axes.size(); ++i) inverse[axes[i]] = static_cast<std::int64_t>(i);
    Tape::current().record("permute", {x}, out, [inverse](const Tensor& g) {
      return std::vector<Tensor>{permute(g, inverse)};
    });
  }
  return out;
}

Tensor transpose(const Tensor& x, std::int64_t axis0, std::int64_t axis1) {
  std::vector<std::int64_t> order(static_cast<std::size_t>(x.dim()));
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = static_cast<std::int64_t>(i);
  std::swap(order[normalize_axis(axis0, x.dim(), "transpose")],
            order[normalize_axis(axis1, x.dim(), "transpose")]);
  return permute(x, order);
}

Tensor slice(const Tensor& x, std::int64_t axis, std::int64_t start, std::int64_t end,
             std::int64_t step) {
  const std::int64_t a = normalize_axis(axis, x.dim(), "slice");
  const std::int64_t size = x.shape()[a];
  require(step > 0, "slice: step must be positive, got {}", step);
  if (!(start >= 0 && start <= size))
    fail("slice: start {} out of range for axis {} of {}", start, axis, x.describe());
  end = std::min(end, size);
  if (!(end >= start))
    fail("slice: end {} before start {} on axis {} of {}", end, start, axis, x.describe());
  Shape shape = x.shape(), strides = x.strides();
  shape[a] = (end - start + step - 1) / step;
  strides[a] *= step;
  Tensor out = Tensor::view_of(x, shape, strides, x.offset() + start * x.strides()[a]);
  if (Tape::should_record({&x})) {
    Shape in_shape = x.shape();
    DType dtype = x.dtype();
    Tape::current().record("slice", {x}, out, [=](const Tensor& g) {
      Tensor grad_x = Tensor::zeros(in_shape, dtype, g.device());
      slice(grad_x, a, start, end, step).copy_(g);
      return std::vector<Tensor>{grad_x};
    });
  }
  return out;
}

Tensor concat(const std::vector<Tensor>& xs, std::int64_t axis) {
  require(!xs.empty(), "concat: no tensors");
  const Tensor& first = xs.front();
  const std::int64_t a = normalize_axis(axis, first.dim(), "concat");
  Shape shape = first.shape();
  shape[a] = 0;
  for (const Tensor& t : xs) {
    check_same_kind(first, t, "concat");
    bool compatible = t.dim() == first.dim();
    for (std::int64_t i = 0; compatible && i < t.dim(); ++i)
      compatible = i == a || t.shape()[i] == first.shape()[i];
    if (!compatible)
      fail("concat: shapes {} and {} differ outside axis {}", to_string(first.shape()),
           to_string(t.shape()), axis);
    shape[a] += t.shape()[a];
  }
  Tensor out = Tensor::empty(shape, first.dtype(), first.device());
  std::vector<std::int64_t> starts;
  {
    NoGradGuard no_grad;
    std::int64_t start = 0;
    for (const Tensor& t : xs) {
      starts.push_back(start);
      backend_of(out).copy(slice(out, a, start, start + t.shape()[a]), t);
      start += t.shape()[a];
    }
  }
  if (Tape::should_record(xs)) {
    std::vector<std::int64_t> sizes;
    for (const Tensor& t : xs) sizes.push_back(t.shape()[a]);
    Tape::current().record("concat", xs, out, [a, starts, sizes](const Tensor& g) {
      std::vector<Tensor> grads;
      for (std::size_t i = 0; i < starts.size(); ++i)
        grads.push_back(slice(g, a, starts[i], starts[i] + sizes[i]));
      return grads;
    });
  }
  return out;
}

Tensor expand(const Tensor& x, const Shape& shape) {
  if (!(shape.size() >= x.shape().size()))
    fail("expand: cannot expand {} to fewer axes {}", x.describe(), to_string(shape));
  const std::size_t lead = shape.size() - x.shape().size();
  for (std::size_t i = 0; i < x.shape().size(); ++i)
    if (!(x.shape()[i] == shape[lead + i] || x.shape()[i] == 1))
      fail("expand: cannot expand {} to {}", x.describe(), to_string(shape));
  Tensor out = broadcast_view(x, shape);
  if (Tape::should_record({&x})) {
    Shape in_shape = x.shape();
    Tape::current().record("expand", {x}, out, [in_shape](const Tensor& g) {
      return std::vector<Tensor>{sum_to(g, in_shape)};
    });
  }
  return out;
}

Tensor unsqueeze(const Tensor& x, std::int64_t axis) {
  const std::int64_t a = normalize_axis(axis, x.dim() + 1, "unsqueeze");
  Shape shape = x.shape();
  shape.insert(shape.begin() + a, 1);
  return reshape(x, shape);
}

Tensor squeeze(const Tensor& x, std::int64_t axis) {
  const std::int64_t a = normalize_axis(axis, x.dim(), "squeeze");
  if (!(x.shape()[a] == 1))
    fail("squeeze: axis {} of {} has size {}, not 1", axis, x.describe(), x.shape()[a]);
  Shape shape = x.shape();
  shape.erase(shape.begin() + a);
  return reshape(x, shape);
}

}  // namespace relpos
