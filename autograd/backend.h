#pragma once
// The kernels a device backend supplies. Ops (autograd/ops/) compute shapes,
// allocate outputs, record the tape and call these; backend_for(device) is the
// single place where the device is chosen. Pure virtual kernels are required; the
// optional ones (autograd/kernel.h) have defaults that throw, and a backend lists
// those it overrides in supports().
//
// Unless a kernel says otherwise, tensor arguments are contiguous, on the
// backend's device, and of one floating dtype.
#include <cstdint>

#include "autograd/allocator.h"
#include "autograd/attention_chunk.h"
#include "autograd/fire_terms.h"
#include "autograd/kernel.h"
#include "autograd/kernel_math/elementwise_ops.h"
#include "autograd/precision.h"
#include "autograd/tensor.h"

namespace relpos {

struct GemmArgs {
  // C[b] = alpha * op(A[b]) * op(B[b]) + beta * C[b], row-major, for b < batch.
  bool trans_a = false, trans_b = false;
  std::int64_t batch = 1, m = 0, n = 0, k = 0;
  double alpha = 1.0, beta = 0.0;
  const void* a = nullptr;
  std::int64_t lda = 0, stride_a = 0;
  const void* b = nullptr;
  std::int64_t ldb = 0, stride_b = 0;
  void* c = nullptr;
  std::int64_t ldc = 0, stride_c = 0;
  DType dtype = DType::f32;
  // bf16: f32 operands are rounded to bfloat16, products accumulate in f32 (CPU with oneDNN).
  Precision precision = Precision::fp32;
  // bf16 only. a_is_bf16 / b_is_bf16: that operand holds bfloat16 bits already (uint16, laid
  // out as lda/stride_a or ldb/stride_b say) and is not rounded again. a_bf16_out /
  // b_bf16_out: where to write that operand's rounding instead of a scratch block that lives
  // for the call; the operand as stored (before op()), row-major without padding, batch
  // entries one after another (one matrix when its stride is 0). A later product may pass
  // that copy back with a_is_bf16 / b_is_bf16 (linear's dW reads its forward's rounding of x,
  // and every product reads the step's one rounding of W, autograd/ops/linear.cpp).
  bool a_is_bf16 = false, b_is_bf16 = false;
  std::uint16_t* a_bf16_out = nullptr;
  std::uint16_t* b_bf16_out = nullptr;
};

// The gathers that express relative position terms. All index a row of Lk keys.
enum class RelativeGather : std::uint8_t {
  // src (H, Lq+Lk-1) -> out (H, Lq, Lk): out[h, i, j] = src[h, j + Lq-1-i] (T5, ALiBi).
  distance,
  // src (rows, 2k+1) -> out (rows, Lk): out[r, j] = src[r, clip(j - qpos(i), -k, k) + k] (Shaw
  // keys).
  clipped,
  // src (rows, Lk) -> out (rows, Lk): out[r, j] = src[r, j + Lq-1-i] where that is < Lk, else 0
  // (Transformer-XL's rel_shift: src column c holds distance Lk-1-c).
  shifted,
};

struct RelativeShape {
  std::int64_t rows = 0;  // B*H*Lq (distance: H*Lq)
  std::int64_t q_len = 0;
  std::int64_t k_len = 0;
  std::int64_t clip = 0;  // Shaw's k
};

// logits[r, j] = scale * scores[r, j]
//              + distance_bias[h, j + Lq-1-i]                      (if defined; (H, Lq+Lk-1))
//              + term_scale * clipped[r, clip(j - qpos(i), -k, k) + k] (if defined; (rows, 2k+1))
//              + term_scale * shifted[r, j + Lq-1-i]                (if defined; (rows, Lk)),
//                masked (-inf) where causal and j > qpos(i), and where the shifted index is >= Lk;
// probs = softmax over j. h = (r / Lq) % heads.
struct RelativeSoftmaxArgs {
  Tensor scores;         // (rows, Lk)
  Tensor distance_bias;  // optional (H, Lq+Lk-1)
  Tensor clipped;        // optional (rows, 2k+1)
  Tensor shifted;        // optional (rows, Lk)
  RelativeShape shape;
  std::int64_t heads = 1;
  double scale = 1.0;
  double term_scale = 1.0;
  bool causal = false;
};

struct RelativeSoftmaxGrads {
  Tensor scores;         // (rows, Lk), always written
  Tensor distance_bias;  // (H, Lq+Lk-1) or undefined
  Tensor clipped;        // (rows, 2k+1) or undefined
  Tensor shifted;        // (rows, Lk) or undefined
};

// Tiled attention with position terms that never forms an (Lq, Lk) matrix
// (FlashAttention-2 style; docs/relative-kernels.md). q, k, v, out and their
// gradients, and Shaw's clipped and its gradient, are strided (B, H, L, ·) views whose last
// axis is contiguous; the others are contiguous. For query i (qpos(i) = Lk - Lq + i) and key j:
//   logit[i, j] = scale * q_i·k_j
//               + distance_bias[h, j + Lq-1-i]                         (T5, ALiBi)
//               + term_scale * clipped[b, h, i, clip(j - qpos(i), -k, k) + k]  (Shaw keys)
//               + term_scale * xl_query[b, h, i]·xl_r[h, j + Lq-1-i]    (Transformer-XL)
// masked where causal and j > qpos(i), and outside the chunk band or sliding window of qpos(i)
// (chunk.banded(), autograd/attention_chunk.h); p = softmax over j;
//   out[b, h, i, :D] = Σ_j p_ij v_j, and with value_bins also
//   out[b, h, i, D + c] = Σ_{j : clip(j - qpos(i)) + k = c} p_ij            (Shaw values).
struct FlashAttentionArgs {
  Tensor q, k, v;        // (B, H, Lq|Lk, D), rows contiguous (strided like the inputs)
  Tensor distance_bias;  // optional (H, Lq+Lk-1)
  Tensor clipped;        // optional (B, H, Lq, 2k+1), rows contiguous (strided like q)
  Tensor xl_query;       // optional (B, H, Lq, D) like q, with xl_r (H, Lk, D) contiguous
  Tensor xl_r;
  FireTerms fire;           // optional FIRE MLP (autograd/fire_terms.h), evaluated per tile
  std::int64_t clip = 0;    // Shaw's k, for clipped and value_bins
  bool value_bins = false;  // out has D + 2k+1 columns
  double scale = 1.0;
  double term_scale = 1.0;
  bool causal = false;
  AttentionChunk chunk;                       // chunk band and window; size and window 0: none
  std::int64_t query_tile = 0, key_tile = 0;  // 0: the backend's defaults (tests set small ones)
  // bf16: f32 inputs take q·kᵀ, p·v, XL's (q + v)·(W_r R)ᵀ and the backward's products of
  // those in bf16 with f32 sums; the other position terms and the softmax stay f32. f64
  // inputs ignore it.
  Precision precision = Precision::fp32;
};

// Undefined members are not wanted. q, k, v, clipped and xl_query may be strided like the
// inputs.
struct FlashAttentionGrads {
  Tensor q, k, v, distance_bias, clipped, xl_query, xl_r;
  FireTerms fire;
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual Device device() const = 0;
  virtual Allocator& allocator() = 0;
  // Whether this backend has the optional kernel (autograd/kernel.h). Callers ask
  // kernel_supported(), which also honours KernelSwitchedOff.
  virtual bool supports(Kernel kernel) const = 0;

  // ---- memory ----
  // dst = src elementwise: same shape, any strides and dtypes; one of the two
  // may live on the host when this backend is a device backend.
  virtual void copy(const Tensor& dst, const Tensor& src) = 0;
  virtual void fill(const Tensor& dst, double value) = 0;

  // ---- matmul ----
  virtual void gemm(const GemmArgs& args) = 0;

  // ---- elementwise ----
  // out = a (op) b; a and b are strided views already expanded to out's shape
  // (stride 0 on broadcast axes).
  virtual void binary(BinaryOp op, const Tensor& a, const Tensor& b, const Tensor& out) = 0;
  virtual void unary(UnaryOp op, const Tensor& x, const Tensor& out, double param) = 0;
  // grad_x = grad_y * f'(x); y = f(x) is given too, for ops whose derivative uses it.
  virtual void unary_backward(UnaryOp op, const Tensor& x, const Tensor& y, const Tensor& grad_y,
                              const Tensor& grad_x, double param) = 0;
  // The forward of a linear layer's bias and activation, z viewed as (rows, n): z += bias
  // (when defined, broadcast over rows; z then holds what the backward reads), then
  // y = f(z). y_bf16: null, or rows * n values that receive y rounded to bf16 as a bf16
  // product rounds its operands (the next layer's product reads them). The default runs
  // binary and unary and writes no bf16 copy; a backend may fuse them into one pass.
  virtual void activation_forward(UnaryOp op, const Tensor& bias, std::int64_t rows, std::int64_t n,
                                  const Tensor& z, const Tensor& y, std::uint16_t* y_bf16);
  // The backward of a linear layer's activation y = f(z), z viewed as (rows, n), for
  // an f whose derivative reads z alone (gelu_tanh, gelu_erf, relu): grad_z = grad_y
  // * f'(z), and, when grad_bias is defined, grad_bias[j] = the sum of grad_z[:, j]
  // over rows in row order (as sum_axis). grad_z_bf16: null, or rows * n values that
  // receive grad_z rounded to bf16 as a bf16 product rounds its operands (the layer's dx and
  // dW products read them). The default runs unary_backward and then sum_axis and writes no
  // bf16 copy; a backend may fuse them into one pass.
  virtual void activation_backward(UnaryOp op, const Tensor& z, const Tensor& grad_y,
                                   std::int64_t rows, std::int64_t n, const Tensor& grad_z,
                                   const Tensor& grad_bias, std::uint16_t* grad_z_bf16);
  // out = mask ? a : b; all three strided views expanded to out's shape, mask u8.
  virtual void where(const Tensor& mask, const Tensor& a, const Tensor& b, const Tensor& out) = 0;

  // ---- reductions over the middle axis of x viewed as (outer, n, inner) ----
  virtual void sum_axis(const Tensor& x, std::int64_t outer, std::int64_t n, std::int64_t inner,
                        const Tensor& out) = 0;
  // out = max, argmax = index of the first maximum (i64).
  virtual void max_axis(const Tensor& x, std::int64_t outer, std::int64_t n, std::int64_t inner,
                        const Tensor& out, const Tensor& argmax) = 0;
  // grad_x = 0 except grad_x[o, argmax[o, i], i] = grad_out[o, i].
  virtual void max_axis_backward(const Tensor& grad_out, const Tensor& argmax, std::int64_t outer,
                                 std::int64_t n, std::int64_t inner, const Tensor& grad_x) = 0;

  // ---- softmax over the last axis of x viewed as (rows, n) ----
  virtual void softmax(const Tensor& x, const Tensor& y, std::int64_t rows, std::int64_t n,
                       bool log) = 0;
  virtual void softmax_backward(const Tensor& y, const Tensor& grad_y, const Tensor& grad_x,
                                std::int64_t rows, std::int64_t n, bool log) = 0;

  // ---- cross-entropy: logits (rows, classes), targets i64 (rows) ----
  // loss[r] = logsumexp(logits[r]) - logits[r, t] (0 where t == ignore_index);
  // lse[r] keeps logsumexp for the backward.
  virtual void cross_entropy(const Tensor& logits, const Tensor& targets, std::int64_t ignore_index,
                             const Tensor& loss, const Tensor& lse) = 0;
  // grad_logits[r] = grad_loss[r] * (softmax(logits[r]) - onehot(t)), 0 on ignored rows.
  virtual void cross_entropy_backward(const Tensor& logits, const Tensor& targets,
                                      std::int64_t ignore_index, const Tensor& lse,
                                      const Tensor& grad_loss, const Tensor& grad_logits) = 0;

  // ---- normalisation over the last axis of x viewed as (rows, n) ----
  // rms = true: y = x * rstd * gamma (+ beta if defined), rstd = 1/sqrt(mean(x^2)+eps), mean
  // unused. rms = false: y = (x - mean) * rstd * gamma + beta. gamma/beta may be undefined (no
  // affine part). mean, rstd: (rows).
  virtual void norm(const Tensor& x, const Tensor& gamma, const Tensor& beta, double eps, bool rms,
                    std::int64_t rows, std::int64_t n, const Tensor& y, const Tensor& mean,
                    const Tensor& rstd) = 0;
  // grad_gamma/grad_beta may be undefined when not wanted; they are overwritten, not accumulated,
  // and reduced over rows in a fixed order.
  virtual void norm_backward(const Tensor& x, const Tensor& gamma, const Tensor& mean,
                             const Tensor& rstd, const Tensor& grad_y, bool rms, std::int64_t rows,
                             std::int64_t n, const Tensor& grad_x, const Tensor& grad_gamma,
                             const Tensor& grad_beta) = 0;
  // Residual add + normalisation (a pre-norm block's h = x + delta; y = norm(h)): x, delta,
  // h (rows, n); h receives the sum, then y, mean and rstd are norm's of h. y_bf16: null, or
  // rows * n values that receive y rounded to bf16 as a bf16 product rounds its operands (the
  // next linear layer's products read them). The default runs binary and norm and writes no
  // bf16 copy; a backend may fuse them into one pass.
  virtual void add_norm(const Tensor& x, const Tensor& delta, const Tensor& gamma,
                        const Tensor& beta, double eps, bool rms, std::int64_t rows, std::int64_t n,
                        const Tensor& h, const Tensor& y, const Tensor& mean, const Tensor& rstd,
                        std::uint16_t* y_bf16);
  // norm_backward whose grad_x also receives grad_residual (rows, n), the gradient that h's
  // other consumers sent it: grad_x = grad_residual + the normalisation's gradient (that sum's
  // order, as the tape's accumulation adds them). grad_x_bf16: null, or rows * n values that
  // receive grad_x rounded to bf16 as a bf16 product rounds its operands (the backward products
  // of the linear layer that wrote delta read them). The default runs norm_backward and binary
  // and writes no bf16 copy; a backend may fuse them into one pass.
  virtual void norm_backward_add(const Tensor& x, const Tensor& gamma, const Tensor& mean,
                                 const Tensor& rstd, const Tensor& grad_y,
                                 const Tensor& grad_residual, bool rms, std::int64_t rows,
                                 std::int64_t n, const Tensor& grad_x, const Tensor& grad_gamma,
                                 const Tensor& grad_beta, std::uint16_t* grad_x_bf16);

  // ---- embedding: table (vocab, dim), indices i64 (count) ----
  virtual void embedding(const Tensor& table, const Tensor& indices, const Tensor& out) = 0;
  // grad_table = scatter-add of grad_out rows by index, deterministic (fixed order).
  virtual void embedding_backward(const Tensor& grad_out, const Tensor& indices,
                                  const Tensor& grad_table) = 0;

  // ---- dropout: mask[i] = keep ? 1/(1-p) : 0, keep decided by a counter-based hash of
  // (seed, offset + i) so every device draws the same mask. ----
  virtual void dropout_mask(std::uint64_t seed, std::uint64_t offset, double p,
                            const Tensor& mask) = 0;

  // ---- relative positions (docs/position-schemes.md, docs/relative-kernels.md) ----
  // Attention rows are (rows, Lk) with rows = B*H*Lq; row r is query i = r % Lq at
  // position Lk - Lq + i, and key j lies at distance index j + (Lq - 1 - i) of a
  // vector over the Lq + Lk - 1 relative distances (rel = j - qpos(i), index rel + Lk - 1).
  virtual void relative_gather(RelativeGather kind, const Tensor& src, const Tensor& out,
                               const RelativeShape& shape) = 0;
  // The adjoint of relative_gather: grad_src = the transpose of the gather applied to
  // grad_out, summed in a fixed order.
  virtual void relative_scatter(RelativeGather kind, const Tensor& grad_out, const Tensor& grad_src,
                                const RelativeShape& shape) = 0;
  // out[h, n] = table[buckets[n], h]; table (buckets, H), buckets i64 (n), out (H, n).
  virtual void bucket_gather(const Tensor& table, const Tensor& buckets, const Tensor& out) = 0;
  // grad_table[b, h] = sum over n with buckets[n] == b of grad_out[h, n], in increasing n.
  virtual void bucket_gather_backward(const Tensor& grad_out, const Tensor& buckets,
                                      const Tensor& grad_table) = 0;
  // Fused position-aware softmax; see RelativeSoftmaxArgs.
  virtual void relative_softmax(const RelativeSoftmaxArgs& args, const Tensor& probs) = 0;
  // From probs and grad_probs, writes d(logits) into grad_scores (times scale) and the
  // adjoint of each defined term into the matching grad tensor (undefined: skipped).
  virtual void relative_softmax_backward(const RelativeSoftmaxArgs& args, const Tensor& probs,
                                         const Tensor& grad_probs,
                                         const RelativeSoftmaxGrads& grads) = 0;
  // ---- optional kernels (autograd/kernel.h): the defaults throw an InternalError ----
  // Rotary embedding (autograd/ops/rotary.h): x and out (B, H, L, D) strided with a
  // contiguous last axis, cos/sin (L, D/2); inverse rotates by the negative angles.
  virtual void rotary(const Tensor& x, const Tensor& cos, const Tensor& sin, const Tensor& out,
                      bool inverse);
  // Tiled attention (see FlashAttentionArgs): writes out (B, H, Lq, D [+ 2k+1]) and the
  // per-row log-sum-exp lse (B, H, Lq) that the backward recomputes probabilities from.
  // out_bf16: null, or (f32, out dense, no value bins, D a multiple of 16) where out's bf16
  // rounding goes, each value at its element's offset from out's first, each head row rounded
  // as a bf16 product rounds its operand's rows (the output projection reads it:
  // autograd/ops/bf16_input.h).
  virtual void flash_attention(const FlashAttentionArgs& args, const Tensor& out, const Tensor& lse,
                               std::uint16_t* out_bf16);
  // Gradients of every wanted input from grad_out; the learned tables' gradients are
  // reduced over the batch in a fixed order (deterministic).
  virtual void flash_attention_backward(const FlashAttentionArgs& args, const Tensor& out,
                                        const Tensor& lse, const Tensor& grad_out,
                                        const FlashAttentionGrads& grads);

  // ---- optimizer kernels (optim/): one pass over many tensors ----
  // One Adam/AdamW step of each entry (optional); all four tensors contiguous, of one shape
  // and floating dtype. The caller computes the coefficients in double; they are rounded to
  // the dtype and applied per element with explicit FMAs, so every backend gives the same bits:
  //   g = l2 != 0 ? fma(l2, p, g) : g        p = shrink != 1 ? p * shrink : p
  //   m = fma(m, beta1, (1 - beta1) * g)     v = fma(v, beta2, (1 - beta2) * g * g)
  //   p = fma(-step_size, m / (sqrt(v) / bias_correction2_sqrt + eps), p)
  struct AdamUpdate {
    Tensor param, grad, exp_avg, exp_avg_sq;
    double l2 = 0.0, shrink = 1.0, beta1 = 0.0, beta2 = 0.0, step_size = 0.0,
           bias_correction2_sqrt = 1.0, eps = 0.0;
  };
  virtual void adam_update(const std::vector<AdamUpdate>& updates);
  // One SGD step of each entry (optional); param, grad and momentum_buffer (undefined when
  // momentum is 0) contiguous, of one shape and floating dtype; the coefficients are rounded
  // to the dtype:
  //   d = weight_decay != 0 ? g + weight_decay * p : g
  //   buf = buf * momentum + d,  d = nesterov ? d + momentum * buf : buf   (with a buffer)
  //   p = p - lr * d
  struct SgdUpdate {
    Tensor param, grad, momentum_buffer;
    double lr = 0.0, weight_decay = 0.0, momentum = 0.0;
    bool nesterov = false;
  };
  virtual void sgd_update(const std::vector<SgdUpdate>& updates);
  // Returns the L2 norm of all `grads` (contiguous, floating) taken together, the squares
  // summed in double in a fixed order. When the norm is finite and coef = max_norm / (norm +
  // eps) is below 1, every grad is scaled in place by coef (rounded to its dtype).
  virtual double clip_grad_norm(const std::vector<Tensor>& grads, double max_norm, double eps) = 0;
};

Backend& backend_for(Device device);
inline Backend& backend_of(const Tensor& t) { return backend_for(t.device()); }

}  // namespace relpos
