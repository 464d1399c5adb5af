#pragma once
// Matrix products through the backend's GEMM (OpenBLAS on the CPU), in the
// forward and the backward.
#include "autograd/tensor.h"

namespace relpos {

// a: (..., M, K), b: (..., K, N) -> (..., M, N). Leading (batch) axes must be
// equal, or one operand is 2-D and is shared across the other's batch.
// Operands that are transposed views (e.g. transpose(w, 0, 1)) are passed to
// GEMM as transposed without a copy.
Tensor matmul(const Tensor& a, const Tensor& b);

}  // namespace relpos
