#include "autograd/ops/matmul.h"

#include "autograd/backend.h"
#include "autograd/ops/bf16_input.h"
#include "autograd/ops/check.h"
#include "autograd/ops/elementwise.h"
#include "autograd/ops/shape.h"
#include "autograd/tape.h"

namespace relpos {
namespace {

// How a (batch..., rows, cols) tensor is handed to GEMM.
struct GemmOperand {
  Tensor tensor;  // keeps the memory alive
  bool transposed = false;
  std::int64_t ld = 0;
  std::int64_t batch_stride = 0;  // 0 when shared across the batch
};

// Whether the batch axes of t can be walked with a single stride.
bool batch_is_uniform(const Tensor& t, std::int64_t& stride) {
  const std::int64_t rank = t.dim();
  stride = 0;
  std::int64_t expected = -1;
  for (std::int64_t i = rank - 3; i >= 0; --i) {
    if (t.shape()[i] == 1) continue;
    if (expected < 0) {
      stride = t.strides()[i];
      expected = stride * t.shape()[i];
    } else {
      if (t.strides()[i] != expected) return false;
      expected *= t.shape()[i];
    }
  }
  return true;
}

GemmOperand as_operand(const Tensor& t) {
  const std::int64_t rank = t.dim();
  const std::int64_t rows = t.shape()[rank - 2], cols = t.shape()[rank - 1];
  const std::int64_t rs = t.strides()[rank - 2], cs = t.strides()[rank - 1];
  std::int64_t batch_stride = 0;
  if (batch_is_uniform(t, batch_stride)) {
    if ((cs == 1 || cols == 1) && rs >= std::max<std::int64_t>(cols, 1))
      return {t, false, rows == 1 ? std::max<std::int64_t>(cols, 1) : rs, batch_stride};
    if ((rs == 1 || rows == 1) && cs >= std::max<std::int64_t>(rows, 1))
      return {t, true, cols == 1 ? std::max<std::int64_t>(rows, 1) : cs, batch_stride};
  }
  Tensor c = t.contiguous();
  return {c, false, std::max<std::int64_t>(cols, 1), rank > 2 ? rows * cols : 0};
}

Shape batch_shape(const Tensor& t) { return Shape(t.shape().begin(), t.shape().end() - 2); }

// bf16 on the CPU: operand o of the GEMM (op(o) op_rows x op_cols, matrices batch_stride
// apart or 0) as the bits of its rounding that an earlier op kept (autograd/ops/bf16_input.h),
// where o is stored densely (rows ld apart, matrices rows·ld apart): its copy is in its memory
// order, the order the product packs its rounding in. Else, with `keep`, the product writes
// its rounding into a block kept with o for later products (out); else nothing.
void use_kept_bf16(const GemmOperand& o, std::int64_t op_rows, std::int64_t op_cols,
                   std::int64_t batch_stride, Precision precision, bool keep, const void*& data,
                   bool& is_bf16, std::uint16_t*& out) {
  const Tensor& t = o.tensor;
  if (precision != Precision::bf16 || t.dtype() != DType::f32 || t.device() != Device::cpu) return;
  const std::int64_t rows = o.transposed ? op_cols : op_rows;
  const std::int64_t cols = o.transposed ? op_rows : op_cols;
  if (o.ld != cols || (batch_stride != 0 && batch_stride != rows * cols)) return;
  if (const std::shared_ptr<Storage> bits = find_bf16_input(t)) {
    data = bits->data();
    is_bf16 = true;
  } else if (keep) {
    out = static_cast<std::uint16_t*>(bf16_input(t).bits->data());
  }
}

// `precision`: the precision recorded with the op (autograd/precision.h). keep_a_bf16: a bf16
// product keeps its rounding of a for later products (use_kept_bf16).
Tensor matmul_forward(const Tensor& a, const Tensor& b, Precision precision,
                      bool keep_a_bf16 = false) {
  check_same_kind(a, b, "matmul");
  if (!(a.dim() >= 2 && b.dim() >= 2))
    fail("matmul: operands must have rank >= 2, got {} and {}", a.describe(), b.describe());
  const std::int64_t m = a.size(-2), k = a.size(-1), n = b.size(-1);
  if (!(b.size(-2) == k))
    fail("matmul: inner dimensions differ: {} @ {} ({} != {})", to_string(a.shape()),
         to_string(b.shape()), k, b.size(-2));
  const Shape ba = batch_shape(a), bb = batch_shape(b);
  if (!(ba == bb || a.dim() == 2 || b.dim() == 2))
    fail("matmul: batch shapes differ: {} @ {}", to_string(a.shape()), to_string(b.shape()));
  Shape out_shape = a.dim() >= b.dim() ? ba : bb;
  const std::int64_t batch = numel_of(out_shape);
  out_shape.push_back(m);
  out_shape.push_back(n);
  Tensor out = Tensor::empty(out_shape, a.dtype(), a.device());
  if (out.numel() == 0) return out;
  if (k == 0) return out.fill_(0.0);

  GemmArgs g;
  g.dtype = a.dtype();
  g.precision = precision;
  // A 2-D left operand times a batch of right operands, or a batch times a shared
  // 2-D right operand with a contiguous batch: fold the batch into M.
  if (b.dim() == 2 && a.dim() > 2) {
    GemmOperand oa = as_operand(a);
    if (!oa.transposed && oa.batch_stride == m * oa.ld && oa.ld == k) {
      GemmOperand ob = as_operand(b);
      g.m = batch * m;
      g.n = n;
      g.k = k;
      g.trans_a = false;
      g.a = oa.tensor.raw_data();
      g.lda = oa.ld;
      g.trans_b = ob.transposed;
      g.b = ob.tensor.raw_data();
      g.ldb = ob.ld;
      g.c = out.raw_data();
      g.ldc = n;
      use_kept_bf16(oa, g.m, k, 0, precision, keep_a_bf16, g.a, g.a_is_bf16, g.a_bf16_out);
      use_kept_bf16(ob, k, n, 0, precision, false, g.b, g.b_is_bf16, g.b_bf16_out);
      backend_of(out).gemm(g);
      return out;
    }
  }
  GemmOperand oa = as_operand(a), ob = as_operand(b);
  g.batch = batch;
  g.m = m;
  g.n = n;
  g.k = k;
  g.trans_a = oa.transposed;
  g.a = oa.tensor.raw_data();
  g.lda = oa.ld;
  g.stride_a = a.dim() == 2 ? 0 : oa.batch_stride;
  g.trans_b = ob.transposed;
  g.b = ob.tensor.raw_data();
  g.ldb = ob.ld;
  g.stride_b = b.dim() == 2 ? 0 : ob.batch_stride;
  g.c = out.raw_data();
  g.ldc = n;
  g.stride_c = m * n;
  use_kept_bf16(oa, m, k, g.stride_a, precision, keep_a_bf16, g.a, g.a_is_bf16, g.a_bf16_out);
  use_kept_bf16(ob, k, n, g.stride_b, precision, false, g.b, g.b_is_bf16, g.b_bf16_out);
  backend_of(out).gemm(g);
  return out;
}

// Sums a batched gradient over the batch when the operand was a shared 2-D matrix.
Tensor reduce_to_operand(const Tensor& grad, const Tensor& operand) {
  if (operand.dim() == 2 && grad.dim() > 2) return sum_to(grad, operand.shape());
  return grad;
}

}  // namespace

Tensor matmul(const Tensor& a, const Tensor& b) {
  const Precision precision = current_precision();
  Tensor out = matmul_forward(a, b, precision);
  if (Tape::should_record({&a, &b})) {
    Tensor sa = a.detach(), sb = b.detach();
    const bool need_a = a.requires_grad(), need_b = b.requires_grad();
    Tape::current().record(
        "matmul", {a, b}, out,
        [sa, sb, need_a, need_b, precision](const Tensor& g) {
          Tensor ga, gb;
          // g's rounding, made by the first product and kept for the second (bf16).
          if (need_a)
            ga = reduce_to_operand(matmul_forward(g, transpose(sb, -1, -2), precision, need_b), sa);
          if (need_b) {
            if (sb.dim() == 2 && sa.dim() > 2) {
              // dB = A^T G with the batch folded into the contraction: (K, B*M)
              // @ (B*M, N).
              Tensor a2 = reshape(sa, {-1, sa.size(-1)});
              Tensor g2 = reshape(g, {-1, g.size(-1)});
              gb = matmul_forward(transpose(a2, 0, 1), g2, precision);
            } else {
              gb = reduce_to_operand(matmul_forward(transpose(sa, -1, -2), g, precision), sb);
            }
          }
          return std::vector<Tensor>{ga, gb};
        },
        {sa, sb});
  }
  return out;
}

}  // namespace relpos
