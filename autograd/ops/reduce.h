#pragma once
// Differentiable reductions over a set of axes.
#include <vector>

#include "autograd/tensor.h"

namespace relpos {

Tensor sum(const Tensor& x, const std::vector<std::int64_t>& axes, bool keepdim = false);
Tensor sum(const Tensor& x);  // over all elements, rank 0
Tensor mean(const Tensor& x, const std::vector<std::int64_t>& axes, bool keepdim = false);
Tensor mean(const Tensor& x);
// Maximum over one axis; the gradient flows to the first maximal element.
Tensor max(const Tensor& x, std::int64_t axis, bool keepdim = false);

}  // namespace relpos
