#pragma once
// Differentiable softmax and log-softmax along one axis (numerically stable:
// the maximum along the axis is subtracted first).
#include <cstdint>

#include "autograd/tensor.h"

namespace relpos {

// y has x's shape; y sums to 1 along `axis`. A slice that is entirely -inf gives NaN.
Tensor softmax(const Tensor& x, std::int64_t axis = -1);
// log(softmax(x, axis)), computed without forming softmax(x).
Tensor log_softmax(const Tensor& x, std::int64_t axis = -1);

}  // namespace relpos
