#include "autograd/ops/norm.h"

#include "autograd/backend.h"
#include "autograd/ops/bf16_input.h"
#include "autograd/ops/check.h"
#include "autograd/precision.h"
#include "autograd/tape.h"

namespace relpos {
namespace {

void check_affine(const Tensor& x, const Tensor& p, const char* what, const char* op) {
  if (!p.defined()) return;
  check_same_kind(x, p, op);
  if (!(p.shape() == Shape{x.size(-1)}))
    fail("{}: {} has shape {}, expected [{}] for input {}", op, what, to_string(p.shape()),
         x.size(-1), x.describe());
}

struct NormInputs {
  Tensor x, gamma, beta;  // contiguous, detached; gamma, beta may be undefined
  std::int64_t rows = 0, n = 0;
};

NormInputs check_norm(const Tensor& x, const Tensor& gamma, const Tensor& beta, double eps,
                      const char* op) {
  check_floating(x, op);
  if (!(x.dim() >= 1 && x.size(-1) > 0))
    fail("{}: input {} has no elements along its last axis", op, x.describe());
  require(eps >= 0.0, "{}: eps must be non-negative, got {}", op, eps);
  check_affine(x, gamma, "gamma", op);
  check_affine(x, beta, "beta", op);
  NormInputs in;
  in.n = x.size(-1);
  in.rows = x.numel() / in.n;
  in.x = x.contiguous().detach();                                       // (rows, n)
  in.gamma = gamma.defined() ? gamma.contiguous().detach() : Tensor();  // (n)
  in.beta = beta.defined() ? beta.contiguous().detach() : Tensor();     // (n)
  return in;
}

// The gradients of the norm's input (plus grad_residual when defined), gamma and beta, given
// the normed output's gradient; h is the normalised input. grad_x_bf16 (with grad_residual,
// f32 on the CPU only): the pass also writes grad_x's bf16 rounding, kept with grad_x for the
// products that read it (autograd/ops/bf16_input.h).
std::vector<Tensor> norm_gradients(const Tensor& h, const Tensor& g, const Tensor& mean,
                                   const Tensor& rstd, const Tensor& grad,
                                   const Tensor& grad_residual, bool rms, bool need_gamma,
                                   bool need_beta, std::int64_t rows, std::int64_t n,
                                   bool grad_x_bf16 = false) {
  Tensor gy = grad.contiguous();
  Tensor grad_x = Tensor::empty(h.shape(), h.dtype(), h.device());
  const std::shared_ptr<Storage> dx16 =
      grad_x_bf16 && grad_residual.defined() && rows > 0 ? bf16_input(grad_x).bits : nullptr;
  Tensor grad_gamma = need_gamma ? Tensor::empty({n}, h.dtype(), h.device()) : Tensor();
  Tensor grad_beta = need_beta ? Tensor::empty({n}, h.dtype(), h.device()) : Tensor();
  if (rows > 0) {
    Backend& backend = backend_of(h);
    if (grad_residual.defined())
      backend.norm_backward_add(h, g, mean, rstd, gy, grad_residual.contiguous(), rms, rows, n,
                                grad_x, grad_gamma, grad_beta,
                                dx16 ? static_cast<std::uint16_t*>(dx16->data()) : nullptr);
    else
      backend.norm_backward(h, g, mean, rstd, gy, rms, rows, n, grad_x, grad_gamma, grad_beta);
  } else {  // nothing to reduce over: parameter gradients are 0
    if (need_gamma) grad_gamma.fill_(0.0);
    if (need_beta) grad_beta.fill_(0.0);
  }
  return {grad_x, grad_gamma, grad_beta};
}

Tensor norm_impl(const Tensor& x, const Tensor& gamma, const Tensor& beta, double eps, bool rms,
                 const char* op) {
  const NormInputs in = check_norm(x, gamma, beta, eps, op);
  const std::int64_t rows = in.rows, n = in.n;
  Tensor y = Tensor::empty(x.shape(), x.dtype(), x.device());  // (rows, n)
  Tensor mean = Tensor::empty({rows}, x.dtype(), x.device());  // (rows), unused by rms
  Tensor rstd = Tensor::empty({rows}, x.dtype(), x.device());  // (rows)
  if (rows > 0) backend_of(y).norm(in.x, in.gamma, in.beta, eps, rms, rows, n, y, mean, rstd);
  if (Tape::should_record({&x, &gamma, &beta})) {
    const bool need_gamma = gamma.defined() && gamma.requires_grad();
    const bool need_beta = beta.defined() && beta.requires_grad();
    std::vector<Tensor> saved{in.x};
    if (in.gamma.defined()) saved.push_back(in.gamma);
    Tape::current().record(
        op, {x, gamma, beta}, y,
        [=, h = in.x, g = in.gamma](const Tensor& grad) {
          return norm_gradients(h, g, mean, rstd, grad, Tensor(), rms, need_gamma, need_beta, rows,
                                n);
        },
        saved);
  }
  return y;
}

ResidualNorm add_norm_impl(const Tensor& x, const Tensor& delta, const Tensor& gamma,
                           const Tensor& beta, double eps, bool rms, const NormBf16& bf16,
                           const char* op) {
  check_same_kind(x, delta, op);
  if (x.shape() != delta.shape())
    fail("{}: the residual {} and the added {} differ in shape", op, x.describe(),
         delta.describe());
  const NormInputs in = check_norm(x, gamma, beta, eps, op);
  const std::int64_t rows = in.rows, n = in.n;
  Tensor d = delta.contiguous().detach();                      // (rows, n)
  Tensor h = Tensor::empty(x.shape(), x.dtype(), x.device());  // (rows, n) x + delta
  Tensor y = Tensor::empty(x.shape(), x.dtype(), x.device());  // (rows, n) norm(h)
  Tensor mean = Tensor::empty({rows}, x.dtype(), x.device());  // (rows), unused by rms
  Tensor rstd = Tensor::empty({rows}, x.dtype(), x.device());  // (rows)
  const bool record = Tape::should_record({&x, &delta, &gamma, &beta});
  const bool bf16_copies = record && current_precision() == Precision::bf16 &&
                           y.dtype() == DType::f32 && y.device() == Device::cpu && rows > 0;
  // Held by the backward (not read there) until the next layer's products take it.
  const std::shared_ptr<Storage> y16 =
      bf16.normed_feeds_linear && bf16_copies ? bf16_input(y).bits : nullptr;  // (rows, n) bf16
  const bool grad_x_bf16 = bf16.delta_from_linear && bf16_copies;
  if (rows > 0)
    backend_of(y).add_norm(in.x, d, in.gamma, in.beta, eps, rms, rows, n, h, y, mean, rstd,
                           y16 ? static_cast<std::uint16_t*>(y16->data()) : nullptr);
  if (record) {
    const bool need_gamma = gamma.defined() && gamma.requires_grad();
    const bool need_beta = beta.defined() && beta.requires_grad();
    const Tensor saved_h = h.detach();  // h itself becomes an output of the tape: not a cycle
    std::vector<Tensor> saved{saved_h};
    if (in.gamma.defined()) saved.push_back(in.gamma);
    Tape::current().record_multi(
        op, {x, delta, gamma, beta}, {h, y},
        [=, g = in.gamma](const std::vector<Tensor>& grads) {
          (void)y16;                          // held, not read: the next layer's products read it
          const Tensor& grad_sum = grads[0];  // (..., n) or undefined
          const Tensor& grad_normed = grads[1];  // (..., n) or undefined
          if (!grad_normed.defined())            // only the sum's consumers sent a gradient
            return std::vector<Tensor>{grad_sum, grad_sum, Tensor(), Tensor()};
          std::vector<Tensor> g_norm =
              norm_gradients(saved_h, g, mean, rstd, grad_normed, grad_sum, rms, need_gamma,
                             need_beta, rows, n, grad_x_bf16 && grad_sum.defined());
          // d(x + delta)/dx = d/ddelta = 1: both inputs receive the residual stream's gradient.
          return std::vector<Tensor>{g_norm[0], g_norm[0], g_norm[1], g_norm[2]};
        },
        saved);
  }
  return {h, y};
}

}  // namespace

Tensor layer_norm(const Tensor& x, const Tensor& gamma, const Tensor& beta, double eps) {
  return norm_impl(x, gamma, beta, eps, false, "layer_norm");
}

Tensor rms_norm(const Tensor& x, const Tensor& gamma, double eps) {
  return norm_impl(x, gamma, Tensor(), eps, true, "rms_norm");
}

ResidualNorm add_layer_norm(const Tensor& x, const Tensor& delta, const Tensor& gamma,
                            const Tensor& beta, double eps, NormBf16 bf16) {
  return add_norm_impl(x, delta, gamma, beta, eps, false, bf16, "add_layer_norm");
}

ResidualNorm add_rms_norm(const Tensor& x, const Tensor& delta, const Tensor& gamma, double eps,
                          NormBf16 bf16) {
  return add_norm_impl(x, delta, gamma, Tensor(), eps, true, bf16, "add_rms_norm");
}

}  // namespace relpos
