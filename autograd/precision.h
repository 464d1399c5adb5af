#pragma once
// The arithmetic precision of matrix products (train.precision; docs/bf16.md).
//   fp32: f32 tensors multiply in f32 (f64 tensors always compute in f64).
//   bf16: f32 matrix products (linear layers, matmul, attention's q·kᵀ and p·v) round
//         their operands to bfloat16 and accumulate in f32; everything else (norms,
//         softmax statistics, losses, position terms, optimizer state) stays f32.
// The precision is set for a scope on the calling thread, like an autocast region. An
// op reads it when it is recorded, and its backward uses the precision it recorded,
// so a backward walk outside the scope repeats the forward's choice.
#include <cstdint>
#include <string_view>

namespace relpos {

enum class Precision : std::uint8_t { fp32, bf16 };

constexpr std::string_view name_of(Precision p) { return p == Precision::fp32 ? "fp32" : "bf16"; }

// The precision in force on this thread (fp32 outside every PrecisionScope).
Precision current_precision();

// Sets the precision until the end of the scope, then restores the previous one.
class PrecisionScope {
 public:
  explicit PrecisionScope(Precision p);
  ~PrecisionScope();
  PrecisionScope(const PrecisionScope&) = delete;
  PrecisionScope& operator=(const PrecisionScope&) = delete;

 private:
  Precision previous_;
};

}  // namespace relpos
