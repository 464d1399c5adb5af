#pragma once
// SGD with momentum, Nesterov momentum and L2 weight decay, as torch.optim.SGD
// (dampening 0):
//   d = g + wd * p                      (wd = weight_decay, 0 when decay = false)
//   buf = momentum * buf + d            (buf starts at 0, so the first buf is d)
//   d = nesterov ? d + momentum * buf : buf        (when momentum > 0)
//   p = p - lr * d
// State: "<name>/momentum_buffer" for each parameter when momentum > 0. One step
// is one call of Backend::sgd_update over all parameters; a backend without that
// kernel (autograd/kernel.h) refuses the optimizer when it is built.
#include <vector>

#include "optim/optimizer.h"

namespace relpos {

struct SgdOptions {
  double momentum = 0.0;
  bool nesterov = false;
  double weight_decay = 0.0;
};

class Sgd : public Optimizer {
 public:
  Sgd(std::vector<NamedParameter> parameters, SgdOptions options);

 private:
  void update(const std::vector<GradientOf>& gradients, double lr) override;

  SgdOptions options_;
  std::vector<Tensor> momentum_buffers_;  // empty when momentum == 0
};

}  // namespace relpos
