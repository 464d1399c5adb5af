#pragma once
// Row-major GEMM through oneDNN's matmul primitive (docs/bf16.md), for f32 tensors:
//   bf16: the operands are rounded to bfloat16 and the products accumulate in f32;
//         AMX on CPUs that have it, AVX-512-BF16 otherwise (oneDNN picks).
//   fp32: f32 throughout.
// A primitive is created once per shape and layout and kept, up to 256 of them (the
// least recently used one is dropped for a new one).
#include <cstddef>
#include <cstdint>

#include "autograd/backend.h"
#include "autograd/bf16_support.h"

namespace relpos::cpu {

// Whether this build links oneDNN (RELPOS_ONEDNN).
bool onednn_built();

// How many primitives are kept now (at most 256).
std::size_t onednn_cached_primitives();

// How many primitives were created so far (one per new shape and layout, and one per
// shape made again after the cache dropped it): what a run's shapes cost.
std::uint64_t onednn_primitives_made();

// How many f32 operands bf16 products rounded so far on this thread (operands given as bf16
// bits are not counted): what the tests count.
std::uint64_t onednn_operand_roundings();

// args.dtype must be f32. Throws UsageError when bf16 is asked and unavailable.
void onednn_gemm(const GemmArgs& args);

}  // namespace relpos::cpu
