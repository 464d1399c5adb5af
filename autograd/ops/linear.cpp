#include "autograd/ops/linear.h"

#include "autograd/backend.h"
#include "autograd/ops/bf16_input.h"
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

// A GEMM operand: the f32 values of a contiguous tensor, or (bf16 products only) bf16 bits
// in the same layout.
struct Operand {
  const void* data = nullptr;
  bool transposed = false;
  bool is_bf16 = false;
};

// c (m, n) = op(a) op(b), plus c's current values when `accumulate`; all three
// contiguous, op(a) (m, k), op(b) (k, n), op = transpose when the flag says so.
// `precision`: the precision recorded with the op (autograd/precision.h). `a_bf16_out`:
// where a bf16 product keeps its rounding of a (GemmArgs).
void gemm_into(const Tensor& c, bool accumulate, const Operand& a, const Operand& b, std::int64_t m,
               std::int64_t n, std::int64_t k, Precision precision,
               std::uint16_t* a_bf16_out = nullptr) {
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
  g.trans_a = a.transposed;
  g.a = a.data;
  g.lda = a.transposed ? m : k;
  g.a_is_bf16 = a.is_bf16;
  g.a_bf16_out = a_bf16_out;
  g.trans_b = b.transposed;
  g.b = b.data;
  g.ldb = b.transposed ? k : n;
  g.b_is_bf16 = b.is_bf16;
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
  const bool record = Tape::should_record({&x, &weight, &bias});
  // bf16 on the CPU: dW's product reads x as this product rounds it, kept in bf16
  // (autograd/ops/bf16_input.h) instead of x in f32, unless an earlier op keeps x in f32
  // anyway (attention's output, which the flash kernel's backward reads), where a copy
  // would only add bytes.
  const bool keep_bf16 = record && weight.requires_grad() && precision == Precision::bf16 &&
                         xc.dtype() == DType::f32 && xc.device() == Device::cpu && z.numel() > 0 &&
                         in > 0 && !Tape::current().saves_storage_of(xc);
  const Bf16Input x16 = keep_bf16 ? bf16_input(xc) : Bf16Input{};
  auto* const x16_bits = x16.bits ? static_cast<std::uint16_t*>(x16.bits->data()) : nullptr;
  const Operand x_operand =
      x16.rounded ? Operand{x16_bits, false, true} : Operand{xc.raw_data(), false};
  gemm_into(z, bias.defined(), x_operand, {w.raw_data(), true}, rows, out, in, precision,
            x16.rounded ? nullptr : x16_bits);
  const UnaryOp op = UnaryOp::gelu_tanh;  // the only activation besides none
  Tensor y = z;                           // (rows, out): f(z)
  if (activation != Activation::none) {
    y = Tensor::empty(out_shape, x.dtype(), x.device());
    if (y.numel() > 0) backend.unary(op, z, y, 0.0);
  }

  if (record) {
    const bool need_x = x.requires_grad(), need_w = weight.requires_grad();
    const bool need_b = bias.defined() && bias.requires_grad();
    const bool activated = activation != Activation::none;
    // The backward keeps only what it reads: x for dW (or its bf16 copy), W for dx, z for
    // f'. Without an activation z is the output, which must not be kept alive.
    const Tensor saved_x = need_w && !keep_bf16 ? xc : Tensor();
    const Tensor saved_w = need_x ? w : Tensor();
    const std::shared_ptr<Storage> kept_x16 = x16.bits;
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
            gemm_into(gx, false, {gz.raw_data(), false}, {saved_w.raw_data(), false}, rows, in, out,
                      precision);
          }
          if (need_w) {  // dW = dzᵀ x: (out, rows) @ (rows, in)
            gw = Tensor::empty({out, in}, gy.dtype(), gy.device());
            const Operand x_saved = kept_x16 ? Operand{kept_x16->data(), false, true}
                                             : Operand{saved_x.raw_data(), false};
            gemm_into(gw, false, {gz.raw_data(), true}, x_saved, out, in, rows, precision);
          }
          return std::vector<Tensor>{gx, gw, gb};
        },
        saved);
  }
  return y;
}

}  // namespace relpos
