#pragma once
// The bf16 copy of a linear layer's input that its backward keeps (docs/bf16.md): under
// Precision::bf16 on the CPU, the forward x·Wᵀ rounds x into this block and the
// backward's dW = dzᵀ·x reads it there, so the input is kept in half of f32's bytes and is
// rounded once. Linear layers that read the same x (attention's q, k and v) share one
// copy: the last rounding made on this thread is handed out again while its source is
// alive and unchanged.
#include <cstdint>
#include <memory>

#include "autograd/storage.h"
#include "autograd/tensor.h"

namespace relpos {

struct Bf16Input {
  std::shared_ptr<Storage> bits;  // x.numel() bf16 values, row-major, from the allocator
  bool rounded = false;           // true: bits already hold x rounded; false: to be written
};

// x: contiguous, f32, on the CPU, with at least one element.
Bf16Input bf16_input(const Tensor& x);

}  // namespace relpos
