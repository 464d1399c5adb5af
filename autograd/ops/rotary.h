#pragma once
// Rotary position embedding as one op (rotate-half convention): dimension m of a
// head is paired with m + D/2 and rotated by the angle whose cosine and sine the
// tables give for that position.
#include "autograd/tensor.h"

namespace relpos {

// x (B, H, L, D), any strides with a contiguous last axis; cos, sin (L, D/2) in x's
// dtype. out[.., p, m] = x[m] cos[p, m] - x[m + D/2] sin[p, m] and
// out[.., p, m + D/2] = x[m + D/2] cos[p, m] + x[m] sin[p, m]. The gradient rotates back.
// One kernel where the backend has it (Kernel::rotary); elsewhere the same rotation
// composed from elementwise ops.
Tensor rotary(const Tensor& x, const Tensor& cos, const Tensor& sin);

}  // namespace relpos
