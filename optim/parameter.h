#pragma once
// A trainable tensor with its hierarchical name (e.g. "blocks.0.attn.q.weight",
// also its checkpoint path), whether weight decay applies to it, and the factor of its
// learning rate.
#include <string>

#include "autograd/tensor.h"

namespace relpos {

struct NamedParameter {
  std::string name;
  Tensor tensor;
  bool decay = true;  // false for norms, biases and position tables; the model decides
  // The optimizer's learning rate times this (optim.position_lr_scale for the position
  // parameters; train/run_state.cpp sets it).
  double lr_scale = 1.0;
};

}  // namespace relpos
