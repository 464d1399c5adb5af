#pragma once
// Rotary position embedding (Su et al.), rotate-half convention: dimension m is
// paired with m + D/2 and rotated by the angle p * inv_freq[m].
#include "layers/position/scheme.h"

namespace relpos {

class RotaryPosition final : public PositionScheme {
 public:
  RotaryPosition(std::int64_t head_dim, double base);
  Tensor rotate(const Tensor& x, std::int64_t start) const override;
  std::string name() const override { return "rope"; }

 private:
  std::int64_t head_dim_;
  double base_;
};

}  // namespace relpos
