#pragma once
// Gradient clipping by global L2 norm, as torch.nn.utils.clip_grad_norm_.
#include <vector>

#include "optim/parameter.h"

namespace relpos {

// Returns the L2 norm of all gradients taken together, before clipping
// (parameters without a gradient are skipped). The sum of squares is computed
// in double in a fixed order (fixed-size chunks, then parameters in list
// order), so the result does not depend on the thread count. When
// coef = max_norm / (norm + 1e-6) is below 1, every gradient is scaled in place
// by coef. A non-finite norm is returned as is and the gradients are left alone.
// The work is Backend::clip_grad_norm on the gradients' device (on CUDA: the
// norm is reduced and applied on the GPU; only the norm comes back).
double clip_grad_norm(const std::vector<NamedParameter>& parameters, double max_norm);

}  // namespace relpos
