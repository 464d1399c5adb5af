#include "autograd/ops/softmax.h"

#include "autograd/backend.h"
#include "autograd/ops/check.h"
#include "autograd/ops/shape.h"
#include "autograd/tape.h"

namespace relpos {
namespace {

// Softmax over the last axis: x (..., n) viewed as (rows, n).
Tensor softmax_last(const Tensor& x, bool log, const char* name) {
  const std::int64_t n = x.size(-1);
  const std::int64_t rows = n == 0 ? 0 : x.numel() / n;
  Tensor in = x.contiguous();
  Tensor out = Tensor::empty(x.shape(), x.dtype(), x.device());
  if (out.numel() > 0) backend_of(out).softmax(in, out, rows, n, log);
  if (Tape::should_record({&x})) {
    Tensor y = out.detach();
    Tape::current().record(name, {x}, out,
                           [y, rows, n, log](const Tensor& grad) {
                             Tensor g = grad.contiguous();
                             Tensor grad_x = Tensor::empty(y.shape(), y.dtype(), y.device());
                             if (grad_x.numel() > 0)
                               backend_of(y).softmax_backward(y, g, grad_x, rows, n, log);
                             return std::vector<Tensor>{grad_x};
                           },
                           {y});
  }
  return out;
}

Tensor softmax_impl(const Tensor& x, std::int64_t axis, bool log, const char* name) {
  check_floating(x, name);
  const std::int64_t a = normalize_axis(axis, x.dim(), name);
  const std::int64_t last = x.dim() - 1;
  if (a == last) return softmax_last(x, log, name);
  // Swap the axis with the last one, normalise, and swap back (a recorded view).
  return transpose(softmax_last(transpose(x, a, last), log, name), a, last);
}

}  // namespace

Tensor softmax(const Tensor& x, std::int64_t axis) {
  return softmax_impl(x, axis, false, "softmax");
}

Tensor log_softmax(const Tensor& x, std::int64_t axis) {
  return softmax_impl(x, axis, true, "log_softmax");
}

}  // namespace relpos
