#pragma once
// Rotary position embedding (Su et al.), rotate-half convention: dimension m is
// paired with m + D/2 and rotated by the angle p * inv_freq[m].
#include <utility>

#include "layers/position/scheme.h"

namespace relpos {

class RotaryPosition final : public PositionScheme {
 public:
  RotaryPosition(std::int64_t head_dim, double base);
  Tensor rotate(const Tensor& x, std::int64_t start) const override;
  std::string name() const override { return "rope"; }

 private:
  // cos and sin (L, D/2) of positions start.. in `dtype`, from tables grown on demand.
  std::pair<Tensor, Tensor> angles(std::int64_t start, std::int64_t len, DType dtype) const;

  std::int64_t head_dim_;
  double base_;
  mutable Tensor cos_cache_, sin_cache_;  // (P, D/2) for positions 0..P-1
};

}  // namespace relpos
