#pragma once
// A trainable tensor with its hierarchical name (e.g. "blocks.0.attn.q.weight",
// also its checkpoint path) and whether weight decay applies to it.
#include <string>

#include "autograd/tensor.h"

namespace relpos {

struct NamedParameter {
  std::string name;
  Tensor tensor;
  bool decay = true;  // false for norms, biases and position tables; the model decides
};

}  // namespace relpos
