#pragma once
// RoPE context extension (model.position.rope_scaling, docs/position-schemes.md): the
// rotation frequencies, and the factor on cos and sin, of a RoPE model evaluated or
// fine-tuned beyond the length it was trained at.
//   linear       Position Interpolation (Chen et al. 2023): positions m -> m / s.
//   ntk          NTK-aware: base b -> b * s^(D / (D - 2)).
//   dynamic_ntk  NTK-aware with the scale from the sequence length n = start + L:
//                b -> b * (s * n / L_orig - (s - 1))^(D / (D - 2)) when n > L_orig
//                (HuggingFace's formula; s = 1 gives the plain ratio n / L_orig).
//   yarn         YaRN (Peng et al. 2023): per frequency, interpolation by s, extrapolation
//                or a linear ramp between them by the number of rotations the frequency
//                makes over L_orig (beta_fast = 32 and beta_slow = 1 rotations), and cos
//                and sin times sqrt(1/t) = 0.1 ln s + 1, so the logits are scaled by 1/t.
#include <cstdint>
#include <string>
#include <vector>

namespace relpos {

class PositionConfig;

struct RopeScaling {
  std::string kind = "none";      // none | linear | ntk | dynamic_ntk | yarn
  double factor = 1.0;            // s
  std::int64_t original_len = 0;  // L_orig: the length the model was trained at
  double beta_fast = 32.0;        // YaRN: frequencies with more rotations are extrapolated
  double beta_slow = 1.0;         // YaRN: frequencies with fewer rotations are interpolated

  bool depends_on_length() const { return kind == "dynamic_ntk"; }
};

// The allowed values of model.position.rope_scaling.kind.
const std::vector<std::string>& rope_scaling_kinds();
// model.position.rope_scaling.* of a config.
RopeScaling rope_scaling_of(const PositionConfig& config);
// A UsageError naming the key when the settings cannot be used.
void validate_rope_scaling(const RopeScaling& scaling);

struct RopeFrequencies {
  std::vector<double> inverse;  // (D/2): the angle of position p in pair m is p * inverse[m]
  double magnitude = 1.0;       // cos and sin are multiplied by it (YaRN's sqrt(1/t))
};

// The frequencies of head dimension `head_dim` and base `base` under `scaling`, for a
// sequence of `length` positions (read by dynamic_ntk only).
RopeFrequencies rope_frequencies(const RopeScaling& scaling, std::int64_t head_dim, double base,
                                 std::int64_t length);

}  // namespace relpos
