#include "train/plot/axis_ticks.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "autograd/error.h"

namespace relpos {

namespace {

constexpr double kSlack = 1e-9;  // relative tolerance for a tick on the axis end

// Labels with `decimals` fixed decimals, or in exponent notation for huge or tiny values.
std::string format_tick(double value, int decimals, bool exponent) {
  if (exponent) return fmt::format("{:.3g}", value);
  return fmt::format("{:.{}f}", value, decimals);
}

}  // namespace

std::vector<Tick> linear_ticks(double low, double high, int target) {
  require(std::isfinite(low) && std::isfinite(high) && low < high && target >= 1,
          "axis ticks over [{}, {}] (target {}): expected finite low < high and target >= 1", low,
          high, target);
  // The nice step closest to (high - low) / target.
  const double raw_step = (high - low) / target;
  int exponent = static_cast<int>(std::floor(std::log10(raw_step)));
  const double residual = raw_step / std::pow(10.0, exponent);
  double multiple = residual < 1.5 ? 1 : residual < 3 ? 2 : residual < 7 ? 5 : 10;
  if (multiple == 10) multiple = 1, ++exponent;
  const double step = multiple * std::pow(10.0, exponent);
  const double magnitude = std::max(std::abs(low), std::abs(high));
  const bool exponent_labels = magnitude >= 1e6 || step < 1e-4;
  const int decimals = std::max(-exponent, 0);
  std::vector<Tick> ticks;
  const auto first = static_cast<long long>(std::ceil(low / step - kSlack));
  const auto last = static_cast<long long>(std::floor(high / step + kSlack));
  for (long long k = first; k <= last; ++k) {
    const double value = static_cast<double>(k) * step;
    ticks.push_back({value, format_tick(value, decimals, exponent_labels)});
  }
  return ticks;
}

std::vector<Tick> log_ticks(double low, double high, int target, bool powers_of_two) {
  require(low > 0 && low < high && std::isfinite(high) && target >= 1,
          "log axis ticks over [{}, {}] (target {}): expected 0 < low < high and target >= 1", low,
          high, target);
  std::vector<double> values;
  if (powers_of_two) {
    const auto first = static_cast<int>(std::ceil(std::log2(low) - kSlack));
    const auto last = static_cast<int>(std::floor(std::log2(high) + kSlack));
    const int stride = std::max((last - first) / target + 1, 1);
    for (int k = first; k <= last; ++k)
      if (k % stride == 0) values.push_back(std::ldexp(1.0, k));
  } else {
    const auto first = static_cast<int>(std::floor(std::log10(low)));
    const auto last = static_cast<int>(std::ceil(std::log10(high)));
    for (const auto& multiples : {std::vector<double>{1, 2, 5}, std::vector<double>{1}}) {
      values.clear();
      for (int d = first; d <= last; ++d)
        for (double m : multiples) {
          const double v = m * std::pow(10.0, d);
          if (v >= low * (1 - kSlack) && v <= high * (1 + kSlack)) values.push_back(v);
        }
      if (static_cast<int>(values.size()) <= target) break;
    }
    if (static_cast<int>(values.size()) > target) {  // whole decades, still too many
      const int stride = static_cast<int>(values.size()) / target + 1;
      std::vector<double> kept;
      for (double v : values)
        if (static_cast<int>(std::lround(std::log10(v))) % stride == 0) kept.push_back(v);
      values = kept;
    }
  }
  if (values.size() < 2) return linear_ticks(low, high, target);
  std::vector<Tick> ticks;
  for (double v : values) ticks.push_back({v, format_number(v)});
  return ticks;
}

std::string format_number(double value) {
  if (value == 0) return "0";  // also -0
  if (value == std::round(value) && std::abs(value) < 1e7) return fmt::format("{:.0f}", value);
  return fmt::format("{:.4g}", value);
}

}  // namespace relpos
