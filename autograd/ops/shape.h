#pragma once
// Differentiable shape ops. reshape, permute, transpose, slice and expand
// return views of the input's storage when they can; concat copies.
#include <vector>

#include "autograd/tensor.h"

namespace relpos {

// One dimension may be -1 (inferred). A view when x is contiguous, else a copy.
Tensor reshape(const Tensor& x, const Shape& shape);
Tensor permute(const Tensor& x, const std::vector<std::int64_t>& order);
Tensor transpose(const Tensor& x, std::int64_t axis0, std::int64_t axis1);
// Elements start, start+step, ... < end along axis (end clamped to the size).
Tensor slice(const Tensor& x, std::int64_t axis, std::int64_t start, std::int64_t end,
             std::int64_t step = 1);
Tensor concat(const std::vector<Tensor>& xs, std::int64_t axis);
// Broadcasts size-1 axes (and new leading axes) to `shape` without copying.
Tensor expand(const Tensor& x, const Shape& shape);
Tensor unsqueeze(const Tensor& x, std::int64_t axis);
Tensor squeeze(const Tensor& x, std::int64_t axis);

}  // namespace relpos
