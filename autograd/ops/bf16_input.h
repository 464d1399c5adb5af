#pragma once
// The bf16 rounding of a tensor's values that bf16 products read instead of rounding the
// tensor themselves (docs/bf16.md). Under Precision::bf16 on the CPU, the op that writes a
// tensor a bf16 product will read also writes its rounding in the same pass (LayerNorm's
// output, the GELU output, the attention output, the residual stream's gradient), and a
// linear layer's forward rounds an input that has none into such a block, which its
// backward's dW = dzᵀ·x then reads (the input kept in half of f32's bytes, rounded once). The
// block is kept with the tensor's storage (Storage::derived) and found again by every product
// that reads the same values while the storage's version is unchanged (every in-place write
// bumps it), so linear layers that read one x (attention's q, k and v) share one copy. It dies
// with the storage (or is released by its last reader), or later while a backward holds it.
#include <cstdint>
#include <memory>

#include "autograd/storage.h"
#include "autograd/tensor.h"

namespace relpos {

struct Bf16Input {
  std::shared_ptr<Storage> bits;  // x.numel() bf16 values in x's memory order, from the allocator
  bool rounded = false;           // true: bits already hold x rounded; false: to be written
};

// x: dense (its elements fill one block: contiguous, or a permutation of a contiguous tensor),
// f32, on the CPU, with at least one element. The kept rounding of x's current values, or a
// new block kept with x's storage for the caller to write x's rounding into (in x's memory
// order, each row of a contiguous x as cpu::round_row_to_bf16 rounds it) before anything
// reads x's copy.
Bf16Input bf16_input(const Tensor& x);

// The kept rounding of x's current values (x as for bf16_input), or nullptr when there is none.
std::shared_ptr<Storage> find_bf16_input(const Tensor& x);

// Drops x's kept rounding (its last reader is done with it): freed unless someone else holds
// it. A block kept for other values of the storage stays.
void release_bf16_input(const Tensor& x);

}  // namespace relpos
