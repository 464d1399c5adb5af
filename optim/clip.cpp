#include "optim/clip.h"

#include <cmath>
#include <vector>

#include "autograd/backend.h"
#include "autograd/error.h"

namespace relpos {

namespace {

constexpr double kClipEps = 1e-6;  // as torch.nn.utils.clip_grad_norm_

void check_gradient(const NamedParameter& p, Device device) {
  const Tensor grad = p.tensor.grad();
  require(is_floating(grad.dtype()) && grad.is_contiguous(),
          "clip_grad_norm: gradient of '{}' is {}; expected a contiguous f32 or f64 tensor", p.name,
          grad.describe());
  require(grad.device() == device,
          "clip_grad_norm: gradient of '{}' is on {} but an earlier one is on {}; all gradients "
          "must live on one device",
          p.name, name_of(grad.device()), name_of(device));
}

}  // namespace

double clip_grad_norm(const std::vector<NamedParameter>& parameters, double max_norm) {
  require(std::isfinite(max_norm) && max_norm > 0,
          "clip_grad_norm: max_norm {} must be finite and > 0", max_norm);
  std::vector<Tensor> grads;
  for (const NamedParameter& p : parameters) {
    if (!p.tensor.grad().defined()) continue;
    check_gradient(p, grads.empty() ? p.tensor.grad().device() : grads.front().device());
    grads.push_back(p.tensor.grad());
  }
  if (grads.empty()) return 0.0;
  const double norm = backend_of(grads.front()).clip_grad_norm(grads, max_norm, kClipEps);
  // The backend scaled the gradients exactly when this holds.
  if (std::isfinite(norm) && max_norm / (norm + kClipEps) < 1.0)
    for (const Tensor& g : grads) g.bump_version();
  return norm;
}

}  // namespace relpos
