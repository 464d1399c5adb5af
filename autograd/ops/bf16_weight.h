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

// w: contiguous, f32, on the CPU, 2-D with at least one element. The kept rounding of w's
// current values (w.numel() bf16 values, row-major), or nullptr when there is none yet.
std::shared_ptr<Storage> find_bf16_weight(const Tensor& w);

// Keeps `bits`, which hold w's current values rounded to bf16, with w's storage for
// find_bf16_weight, in place of the copy of an older version of w.
void keep_bf16_weight(const Tensor& w, std::shared_ptr<Storage> bits);

// How many copies keep_bf16_weight took so far on this thread (each one a rounding of a
// weight): what the tests count.
std::uint64_t bf16_weight_roundings();

}  // namespace relpos
