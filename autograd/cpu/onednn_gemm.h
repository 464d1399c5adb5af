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

// Whether bf16 products whose A is not transposed (a linear layer's x·Wᵀ and dz·W) go
// through oneDNN's inner product instead of its matmul (on by default where the CPU has AMX;
// onednn_gemm.cpp says why), and the switch that tests use to run them through the matmul,
// the path it replaces. Switching it on is a no-op on a CPU without AMX.
bool onednn_inner_product_enabled();
void set_onednn_inner_product_enabled(bool on);

// Whether onednn_gemm runs this product through the inner product: bf16, A not transposed
// and dense (lda = k), one matrix, alpha 1, C dense (ldc = n), while that is enabled.
bool onednn_gemm_uses_inner_product(const GemmArgs& args);

// args.dtype must be f32. Throws UsageError when bf16 is asked and unavailable.
void onednn_gemm(const GemmArgs& args);

}  // namespace relpos::cpu
