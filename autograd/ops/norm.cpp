#include "autograd/ops/norm.h"

#include "autograd/backend.h"
#include "autograd/ops/check.h"
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

Tensor norm_impl(const Tensor& x, const Tensor& gamma, const Tensor& beta, double eps, bool rms,
                 const char* op) {
  check_floating(x, op);
  if (!(x.dim() >= 1 && x.size(-1) > 0))
    fail("{}: input {} has no elements along its last axis", op, x.describe());
  require(eps >= 0.0, "{}: eps must be non-negative, got {}", op, eps);
  check_affine(x, gamma, "gamma", op);
  check_affine(x, beta, "beta", op);
  const std::int64_t n = x.size(-1);
  const std::int64_t rows = x.numel() / n;
  Tensor in = x.contiguous().detach();                                  // (rows, n)
  Tensor g = gamma.defined() ? gamma.contiguous().detach() : Tensor();  // (n)
  Tensor b = beta.defined() ? beta.contiguous().detach() : Tensor();    // (n)
  Tensor y = Tensor::empty(x.shape(), x.dtype(), x.device());           // (rows, n)
  Tensor mean = Tensor::empty({rows}, x.dtype(), x.device());           // (rows), unused by rms
  Tensor rstd = Tensor::empty({rows}, x.dtype(), x.device());           // (rows)
  if (rows > 0) backend_of(y).norm(in, g, b, eps, rms, rows, n, y, mean, rstd);
  if (Tape::should_record({&x, &gamma, &beta})) {
    const bool need_gamma = gamma.defined() && gamma.requires_grad();
    const bool need_beta = beta.defined() && beta.requires_grad();
    std::vector<Tensor> saved{in};
    if (g.defined()) saved.push_back(g);
    Tape::current().record(
        op, {x, gamma, beta}, y,
        [=](const Tensor& grad) {
          Tensor gy = grad.contiguous();
          Tensor grad_x = Tensor::empty(in.shape(), in.dtype(), in.device());
          Tensor grad_gamma = need_gamma ? Tensor::empty({n}, in.dtype(), in.device()) : Tensor();
          Tensor grad_beta = need_beta ? Tensor::empty({n}, in.dtype(), in.device()) : Tensor();
          if (rows > 0) {
            backend_of(in).norm_backward(in, g, mean, rstd, gy, rms, rows, n, grad_x, grad_gamma,
                                         grad_beta);
          } else {  // nothing to reduce over: parameter gradients are 0
            if (need_gamma) grad_gamma.fill_(0.0);
            if (need_beta) grad_beta.fill_(0.0);
          }
          return std::vector<Tensor>{grad_x, grad_gamma, grad_beta};
        },
        saved);
  }
  return y;
}

}  // namespace

Tensor layer_norm(const Tensor& x, const Tensor& gamma, const Tensor& beta, double eps) {
  return norm_impl(x, gamma, beta, eps, false, "layer_norm");
}

Tensor rms_norm(const Tensor& x, const Tensor& gamma, double eps) {
  return norm_impl(x, gamma, Tensor(), eps, true, "rms_norm");
}

}  // namespace relpos
