#pragma once
// Absolute schemes, added to the token embeddings: none, fixed sinusoids
// (Vaswani et al., interleaved sin/cos) and a learned table.
#include "layers/position/scheme.h"

namespace relpos {

class NoPosition final : public PositionScheme {
 public:
  std::string name() const override { return "none"; }
};

// The sinusoid table (RMS 1/sqrt(2)) is scaled to the token embeddings' initial
// scale, so that neither drowns the other at the start of training (Vaswani et
// al. reach the same balance by multiplying the embeddings by sqrt(d_model)).
inline constexpr double kSinusoidScale = kEmbeddingInitStd * 1.4142135623730951;

class SinusoidalPosition final : public PositionScheme {
 public:
  explicit SinusoidalPosition(std::int64_t d_model) : d_model_(d_model) {}
  Tensor embed(const Tensor& x, std::int64_t start) const override;
  std::string name() const override { return "sinusoidal"; }

 private:
  std::int64_t d_model_;
};

class LearnedPosition final : public PositionScheme {
 public:
  LearnedPosition(std::int64_t max_len, std::int64_t d_model, Rng& rng);
  Tensor embed(const Tensor& x, std::int64_t start) const override;
  std::string name() const override { return "learned"; }

 private:
  Tensor table_;  // (max_len, d_model)
};

}  // namespace relpos
