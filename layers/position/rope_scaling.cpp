#include "layers/position/rope_scaling.h"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "autograd/error.h"
#include "layers/position/scheme.h"
#include "layers/position/sinusoid.h"

namespace relpos {
namespace {

// NTK-aware base for a scale s: the lowest frequency is interpolated by s, the highest
// left as it is.
double ntk_base(double base, double scale, std::int64_t head_dim) {
  const auto d = static_cast<double>(head_dim);
  return base * std::pow(scale, d / (d - 2.0));
}

// YaRN: the (fractional) pair index whose frequency makes `rotations` full turns over
// `length` positions.
double pair_with_rotations(double rotations, std::int64_t head_dim, double base,
                           std::int64_t length) {
  const auto d = static_cast<double>(head_dim);
  return d * std::log(static_cast<double>(length) / (rotations * 2.0 * std::numbers::pi)) /
         (2.0 * std::log(base));
}

RopeFrequencies yarn(const RopeScaling& s, std::int64_t head_dim, double base) {
  RopeFrequencies out{inverse_frequencies(head_dim, base), 1.0};
  const std::int64_t half = head_dim / 2;
  // Pairs below `low` are extrapolated (left as trained), pairs from `high` interpolated.
  const double low =
      std::max(std::floor(pair_with_rotations(s.beta_fast, head_dim, base, s.original_len)), 0.0);
  double high =
      std::min(std::ceil(pair_with_rotations(s.beta_slow, head_dim, base, s.original_len)),
               static_cast<double>(head_dim - 1));
  if (high == low) high += 0.001;  // no division by zero; the ramp is then a step
  for (std::int64_t m = 0; m < half; ++m) {
    const double ramp = std::clamp((static_cast<double>(m) - low) / (high - low), 0.0, 1.0);
    const double extrapolated = out.inverse[m], interpolated = extrapolated / s.factor;
    out.inverse[m] = interpolated * ramp + extrapolated * (1.0 - ramp);
  }
  if (s.factor > 1.0) out.magnitude = 0.1 * std::log(s.factor) + 1.0;
  return out;
}

}  // namespace

const std::vector<std::string>& rope_scaling_kinds() {
  static const std::vector<std::string> kinds{"none", "linear", "ntk", "dynamic_ntk", "yarn"};
  return kinds;
}

RopeScaling rope_scaling_of(const PositionConfig& c) {
  return {c.get<std::string>("rope_scaling.kind"), c.get<double>("rope_scaling.factor"),
          c.get<std::int64_t>("rope_scaling.original_len"), c.get<double>("rope_scaling.beta_fast"),
          c.get<double>("rope_scaling.beta_slow")};
}

void validate_rope_scaling(const RopeScaling& s) {
  const auto& kinds = rope_scaling_kinds();
  require(std::find(kinds.begin(), kinds.end(), s.kind) != kinds.end(),
          "model.position.rope_scaling.kind must be one of none, linear, ntk, dynamic_ntk, yarn, "
          "got '{}'",
          s.kind);
  if (s.kind == "none") return;
  require(std::isfinite(s.factor) && s.factor >= 1.0,
          "model.position.rope_scaling.factor must be >= 1 (the extension ratio), got {}",
          s.factor);
  require(s.original_len >= 1,
          "model.position.rope_scaling.original_len must be set to the training length (>= 1) "
          "for rope_scaling.kind={}, got {}",
          s.kind, s.original_len);
  if (s.kind == "yarn")
    require(s.beta_slow > 0.0 && s.beta_fast > s.beta_slow,
            "model.position.rope_scaling: yarn needs beta_fast > beta_slow > 0, got beta_fast={} "
            "and beta_slow={}",
            s.beta_fast, s.beta_slow);
}

RopeFrequencies rope_frequencies(const RopeScaling& s, std::int64_t head_dim, double base,
                                 std::int64_t length) {
  if (s.kind == "linear") {
    RopeFrequencies out{inverse_frequencies(head_dim, base), 1.0};
    for (double& f : out.inverse) f /= s.factor;
    return out;
  }
  if (s.kind == "ntk") return {inverse_frequencies(head_dim, ntk_base(base, s.factor, head_dim))};
  if (s.kind == "dynamic_ntk" && length > s.original_len) {
    const double scale =
        s.factor * static_cast<double>(length) / static_cast<double>(s.original_len) -
        (s.factor - 1.0);
    return {inverse_frequencies(head_dim, ntk_base(base, scale, head_dim))};
  }
  if (s.kind == "yarn") return yarn(s, head_dim, base);
  return {inverse_frequencies(head_dim, base)};
}

}  // namespace relpos
