#include "autograd/ops/linear.h"

#include <memory>

#include "autograd/backend.h"
#include "autograd/ops/bf16_input.h"
#include "autograd/ops/bf16_weight.h"
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
// `precision`: the precision recorded with the op (autograd/precision.h). `a_bf16_out`,
// `b_bf16_out`: where a bf16 product keeps its rounding of a or b (GemmArgs).
void gemm_into(const Tensor& c, bool accumulate, const Operand& a, const Operand& b, std::int64_t m,
               std::int64_t n, std::int64_t k, Precision precision,
               std::uint16_t* a_bf16_out = nullptr, std::uint16_t* b_bf16_out = nullptr) {
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
  g.b_bf16_out = b_bf16_out;
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
  const bool activated = activation != Activation::none;
  // Without an activation the product adds itself to the bias (one pass fewer); with one,
  // the activation's pass adds the bias (Backend::activation_forward).
  const bool bias_in_product = bias.defined() && !activated;
  if (bias_in_product && z.numel() > 0) backend.copy(z, broadcast_view(bias, out_shape));
  const bool record = Tape::should_record({&x, &weight, &bias});
  // bf16 on the CPU: dW's product reads x as this product rounds it, kept in bf16
  // (autograd/ops/bf16_input.h) instead of x in f32, unless an earlier op keeps x in f32
  // anyway (attention's output, which the flash kernel's backward reads), where a copy
  // would only add bytes: then a rounding that op wrote is read here and released.
  const bool bf16_x = precision == Precision::bf16 && xc.dtype() == DType::f32 &&
                      xc.device() == Device::cpu && z.numel() > 0 && in > 0;
  const bool x_kept_f32 = record && bf16_x && Tape::current().saves_storage_of(xc);
  const bool keep_bf16 = record && weight.requires_grad() && bf16_x && !x_kept_f32;
  const std::shared_ptr<Storage> x16_found = bf16_x ? find_bf16_input(xc) : nullptr;
  const Bf16Input x16 = x16_found   ? Bf16Input{x16_found, true}
                        : keep_bf16 ? bf16_input(xc)
                                    : Bf16Input{};
  auto* const x16_bits = x16.bits ? static_cast<std::uint16_t*>(x16.bits->data()) : nullptr;
  const Operand x_operand =
      x16.rounded ? Operand{x16_bits, false, true} : Operand{xc.raw_data(), false};
  // bf16 on the CPU: W is rounded by the first product that reads it after it changed, and
  // that copy is kept (autograd/ops/bf16_weight.h) for this layer's backward and every later
  // product until the optimizer updates W.
  const bool w_bf16 = precision == Precision::bf16 && w.dtype() == DType::f32 &&
                      w.device() == Device::cpu && z.numel() > 0 && in > 0;
  std::shared_ptr<Storage> w16 = w_bf16 ? find_bf16_input(w) : nullptr;  // (out, in) bf16
  const bool round_w = w_bf16 && !w16;
  if (round_w)
    w16 = std::make_shared<Storage>(static_cast<std::size_t>(out * in) * sizeof(std::uint16_t),
                                    Device::cpu);
  auto* const w16_bits = w16 ? static_cast<std::uint16_t*>(w16->data()) : nullptr;
  const Operand w_operand =
      w16 && !round_w ? Operand{w16_bits, true, true} : Operand{w.raw_data(), true};
  gemm_into(z, bias_in_product, x_operand, w_operand, rows, out, in, precision,
            x16.rounded ? nullptr : x16_bits, round_w ? w16_bits : nullptr);
  if (round_w) keep_bf16_weight(w, w16);
  if (x16_found && x_kept_f32) release_bf16_input(xc);
  const UnaryOp op = UnaryOp::gelu_tanh;  // the only activation besides none
  Tensor y = z;                           // (rows, out): f(z)
  std::shared_ptr<Storage> y16;           // y rounded to bf16 (rows, out), for the next product
  if (activated) {
    y = Tensor::empty(out_shape, x.dtype(), x.device());
    // bf16 on the CPU: the activation's pass also writes y rounded to bf16 and hands it to
    // the next linear layer through bf16_input (which finds it there), so that layer's
    // product does not read y again to round it. Kept alive by this op's backward (the next
    // layer's backward keeps the same copy).
    if (record && precision == Precision::bf16 && y.dtype() == DType::f32 &&
        y.device() == Device::cpu && y.numel() > 0)
      y16 = bf16_input(y).bits;
    if (y.numel() > 0)
      backend.activation_forward(op, bias.defined() ? bias.contiguous().detach() : Tensor(), rows,
                                 out, z, y,
                                 y16 ? static_cast<std::uint16_t*>(y16->data()) : nullptr);
  }

  if (record) {
    const bool need_x = x.requires_grad(), need_w = weight.requires_grad();
    const bool need_b = bias.defined() && bias.requires_grad();
    // The backward keeps only what it reads: x for dW (or its bf16 copy), W for dx (under
    // bf16 its kept rounding; W itself then only for the check that it did not change), z
    // for f'. Without an activation z is the output, which must not be kept alive.
    const Tensor saved_x = need_w && !keep_bf16 ? xc : Tensor();
    const Tensor saved_w = need_x ? w : Tensor();
    const std::shared_ptr<Storage> kept_x16 = keep_bf16 ? x16.bits : nullptr;
    const Tensor saved_z = activated ? z : Tensor();
    std::vector<Tensor> saved;
    for (const Tensor& t : {saved_x, saved_w, saved_z})
      if (t.defined()) saved.push_back(t);
    const Shape x_shape = x.shape();
    Tape::current().record(
        activated ? "linear_gelu_tanh" : "linear", {x, weight, bias}, y,
        [=, kept_y16 = y16, kept_w16 = need_x ? w16 : nullptr](const Tensor& grad) {
          (void)kept_y16;                       // held, not read: the next layer's product reads it
          const Tensor gy = grad.contiguous();  // (rows, out)
          Backend& be = backend_of(gy);
          // bf16 on the CPU with both products: dz is rounded once into gz16 (the bits of
          // rounding it in each product), which both read: by the op that wrote dy when it
          // kept dy's rounding (autograd/ops/bf16_input.h: the residual stream's gradient,
          // written by the fused norm backward) and the layer has no activation, else by the
          // activation's pass where it has a bias gradient to sum (every MLP layer: no product
          // reads dz in f32), else by dx's product.
          const bool bf16_gz = precision == Precision::bf16 && gy.dtype() == DType::f32 &&
                               gy.device() == Device::cpu && rows > 0 && in > 0 && out > 0;
          const bool share_gz16 = need_x && need_w && bf16_gz;
          const std::shared_ptr<Storage> gy16 =
              bf16_gz && !activated ? find_bf16_input(gy) : nullptr;  // (rows, out) bf16
          const auto gz16 =
              gy16 ? gy16
              : share_gz16
                  ? std::make_shared<Storage>(
                        static_cast<std::size_t>(rows * out) * sizeof(std::uint16_t), Device::cpu)
                  : nullptr;
          auto* const gz16_bits = gz16 ? static_cast<std::uint16_t*>(gz16->data()) : nullptr;
          const bool gz16_by_activation = activated && need_b && gz16;
          Tensor gz = gy;  // (rows, out): d(loss)/dz
          const Tensor gb = need_b ? Tensor::empty({out}, gy.dtype(), gy.device()) : Tensor();
          if (activated) {
            gz = Tensor::empty(gy.shape(), gy.dtype(), gy.device());
            be.activation_backward(op, saved_z, gy, rows, out, gz, gb,
                                   gz16_by_activation ? gz16_bits : nullptr);
          } else if (need_b) {
            be.sum_axis(gy, 1, rows, out, gb);
          }
          Tensor gx, gw;
          if (need_x) {  // dx = dz W: (rows, out) @ (out, in)
            gx = Tensor::empty(x_shape, gy.dtype(), gy.device());
            const Operand w_saved = kept_w16 ? Operand{kept_w16->data(), false, true}
                                             : Operand{saved_w.raw_data(), false};
            const bool gz16_written = gz16_by_activation || gy16;
            const Operand dz =
                gz16_written ? Operand{gz16_bits, false, true} : Operand{gz.raw_data(), false};
            gemm_into(gx, false, dz, w_saved, rows, in, out, precision,
                      gz16_written ? nullptr : gz16_bits);
          }
          if (need_w) {  // dW = dzᵀ x: (out, rows) @ (rows, in)
            gw = Tensor::empty({out, in}, gy.dtype(), gy.device());
            const Operand x_saved = kept_x16 ? Operand{kept_x16->data(), false, true}
                                             : Operand{saved_x.raw_data(), false};
            const Operand dz = gz16 ? Operand{gz16_bits, true, true} : Operand{gz.raw_data(), true};
            gemm_into(gw, false, dz, x_saved, out, in, rows, precision);
          }
          // Both products have read dy's kept rounding: its bytes need not outlive this
          // backward (dy may, as the residual stream's gradient).
          if (gy16) release_bf16_input(gy);
          return std::vector<Tensor>{gx, gw, gb};
        },
        saved);
  }
  return y;
}

}  // namespace relpos
