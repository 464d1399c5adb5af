#pragma once
// The bf16 copy of a linear layer's weight (docs/bf16.md): under Precision::bf16 on the
// CPU, the first product that reads W (out, in) after W last changed rounds it into a block
// that is kept, and every later product (the forward's x·Wᵀ, the backward's dz·W, the next
// micro-batch's) reads that block instead of rounding W again. So W is rounded once per
// optimizer step, not once per product; the bits are those each product would make.
// The copy is kept with W's storage (Storage::derived, freed with it, as every kept bf16
// rounding: autograd/ops/bf16_input.h) and found again
// while W's version is unchanged: every write to a parameter must bump its version
// (Tensor::copy_, fill_ and the optimizers do).
#include <cstdint>
#include <memory>

#include "autograd/storage.h"
#include "autograd/tensor.h"

namespace relpos {

// Keeps `bits`, which hold w's current values rounded to bf16 (w: contiguous, f32, on the
// CPU, 2-D), with w's storage, in place of the copy of an older version of w. The copy is
// found again by find_bf16_input (autograd/ops/bf16_input.h), as every kept rounding.
void keep_bf16_weight(const Tensor& w, std::shared_ptr<Storage> bits);

// How many copies keep_bf16_weight took so far on this thread (each one a rounding of a
// weight): what the tests count.
std::uint64_t bf16_weight_roundings();

}  // namespace relpos
