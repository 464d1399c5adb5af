#include "autograd/ops/linear.h"

#include "autograd/backend.h"
#include "autograd/ops/check.h"
#include "autograd/ops/elementwise.h"
#include "autograd/tape.h"

namespace relpos {
namespace {

void check_linear(const Tensor& x, const Tensor& weight, const Tensor& bias) {
  check_same_kind(x, weight, "linear");
  if (!(x.dim() >= 1 && weight.dim() == 2 && x.size(-1) == weight.size(1)))
    fail("linear: input {} does not match weight {}: expected (..., in) and (out, in)",
         x.describe(), weight.describe());
  if (!bias.defined()) return;
  check_same_kind(x, bias, "linear");
  if (!(bias.shape() == Shape{weight.size(0)}))
    fail("linear: bias {} does not match weight {}: expected ({})", bias.describe(),
         weight.describe(), weight.size(0));
}

// c (m, n) = op(a) op(b), plus c's current values when `accumulate`; all three
// contiguous, op(a) (m, k), op(b) (k, n), op = transpose when the flag says so.
// `precision`: the precision recorded with the op (autograd/precision.h).
void gemm_into(const Tensor& c, bool accumulate, const Tensor& a, bool trans_a, const Tensor& b,
               bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k, Precision precision) {
  if (m == 0 || n == 0) return;
  if (k == 0) {
    if (!accumulate) backend_of(c).fill(c, 0.0);
    return;
  }
  GemmArgs g;
  g.dtype = c.dtype();
  g.precision = precision;
  g.m = m;
  g.n = n;
  g.k = k;
  g.beta = accumulate ? 1.0 : 0.0;
  g.trans_a = trans_a;
  g.a = a.raw_data();
  g.lda = trans_a ? m : k;
  g.trans_b = trans_b;
  g.b = b.raw_data();
  g.ldb = trans_b ? k : n;
  g.c = c.raw_data();
  g.ldc = n;
  backend_of(c).gemm(g);
}

}  // namespace

Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias, Activation activation) {
  check_linear(x, weight, bias);
  const Precision precision = current_precision();
  const std::int64_t in = weight.size(1), out = weight.size(0);
  Shape out_shape = x.shape();
  out_shape.back() = out;
  const std::int64_t rows = numel_of(Shape(x.shape().begin(), x.shape().end() - 1));
  const Tensor xc = x.contiguous().detach();                   // (rows, in)
  const Tensor w = weight.contiguous().detach();               // (out, in)
  Tensor z = Tensor::empty(out_shape, x.dtype(), x.device());  // (rows, out): x Wᵀ + b
  Backend& backend = backend_of(z);
  if (bias.defined() && z.numel() > 0) backend.copy(z, broadcast_view(bias, out_shape));
  gemm_into(z, bias.defined(), xc, false, w, true, rows, out, in, precision);
  const UnaryOp op = UnaryOp::gelu_tanh;  // the only activation besides none
  Tensor y = z;                           // (rows, out): f(z)
  if (activation != Activation::none) {
    y = Tensor::empty(out_shape, x.dtype(), x.device());
    if (y.numel() > 0) backend.unary(op, z, y, 0.0);
  }

  if (Tape::should_record({&x, &weight, &bias})) {
    const bool need_x = x.requires_grad(), need_w = weight.requires_grad();
    const bool need_b = bias.defined() && bias.requires_grad();
    const bool activated = activation != Activation::none;
    // The backward keeps only what it reads: x for dW, W for dx, z for f'. Without
    // an activation z is the output, which must not be kept alive.
    const Tensor saved_x = need_w ? xc : Tensor(), saved_w = need_x ? w : Tensor();
    const Tensor saved_z = activated ? z : Tensor();
    std::vector<Tensor> saved;
    for (const Tensor& t : {saved_x, saved_w, saved_z})
      if (t.defined()) saved.push_back(t);
    const Shape x_shape = x.shape();
    Tape::current().record(
        activated ? "linear_gelu_tanh" : "linear", {x, weight, bias}, y,
        [=](const Tensor& grad) {
          const Tensor gy = grad.contiguous();  // (rows, out)
          Backend& be = backend_of(gy);
          Tensor gz = gy;  // (rows, out): d(loss)/dz
          const Tensor gb = need_b ? Tensor::empty({out}, gy.dtype(), gy.device()) : Tensor();
          if (activated) {
            gz = Tensor::empty(gy.shape(), gy.dtype(), gy.device());
            be.activation_backward(op, saved_z, gy, rows, out, gz, gb);
          } else if (need_b) {
            be.sum_axis(gy, 1, rows, out, gb);
          }
          Tensor gx, gw;
          if (need_x) {  // dx = dz W: (rows, out) @ (out, in)
            gx = Tensor::empty(x_shape, gy.dtype(), gy.device());
            gemm_into(gx, false, gz, false, saved_w, false, rows, in, out, precision);
          }
          if (need_w) {  // dW = dzᵀ x: (out, rows) @ (rows, in)
            gw = Tensor::empty({out, in}, gy.dtype(), gy.device());
            gemm_into(gw, false, gz, true, saved_x, false, out, in, rows, precision);
          }
          return std::vector<Tensor>{gx, gw, gb};
        },
        saved);
  }
  return y;
}

}  // namespace relpos
