#pragma once
// Adam (torch.optim.Adam: L2 weight decay added to the gradient) and AdamW
// (torch.optim.AdamW: decoupled weight decay). With t the parameter's own step
// count (parameters skipped for lack of a gradient do not advance it) and
// wd = weight_decay, or 0 when the parameter has decay = false:
//   Adam:   g = g + wd * p
//   AdamW:  p = p * (1 - lr * wd)
//   m = beta1 * m + (1 - beta1) * g
//   v = beta2 * v + (1 - beta2) * g * g
//   p = p - lr / (1 - beta1^t) * m / (sqrt(v) / sqrt(1 - beta2^t) + eps)
// State per parameter: "<name>/step" (i64 scalar, on the host), "<name>/exp_avg"
// (m), "<name>/exp_avg_sq" (v), on the parameters' device. One step is one call
// of Backend::adam_update over all parameters (on CUDA: one fused launch).
#include <vector>

#include "optim/optimizer.h"

namespace relpos {

struct AdamOptions {
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  double weight_decay = 0.0;
};

class Adam : public Optimizer {
 public:
  Adam(std::vector<NamedParameter> parameters, AdamOptions options);

 protected:
  enum class WeightDecay { l2, decoupled };
  Adam(std::vector<NamedParameter> parameters, AdamOptions options, WeightDecay mode);

 private:
  struct Buffers {
    Tensor step, exp_avg, exp_avg_sq;
  };
  void update(const std::vector<GradientOf>& gradients, double lr) override;

  AdamOptions options_;
  WeightDecay mode_;
  std::vector<Buffers> buffers_;
};

class AdamW : public Adam {
 public:
  AdamW(std::vector<NamedParameter> parameters, AdamOptions options)
      : Adam(std::move(parameters), options, WeightDecay::decoupled) {}
};

}  // namespace relpos
