#include "train/ablation/statistics.h"

#include <boost/math/distributions/students_t.hpp>
#include <cmath>

namespace relpos {

double t_quantile_975(std::size_t df) {
  if (df == 0) return std::numeric_limits<double>::quiet_NaN();
  return boost::math::quantile(boost::math::students_t(static_cast<double>(df)), 0.975);
}

Stat stat_of(const std::vector<double>& values) {
  Stat s;
  double sum = 0.0;
  for (const double v : values)
    if (std::isfinite(v)) sum += v, ++s.n;
  if (s.n == 0) return s;
  s.mean = sum / static_cast<double>(s.n);
  if (s.n < 2) return s;
  double squares = 0.0;
  for (const double v : values)
    if (std::isfinite(v)) squares += (v - s.mean) * (v - s.mean);
  s.std = std::sqrt(squares / static_cast<double>(s.n - 1));
  s.ci95 = t_quantile_975(s.n - 1) * s.std / std::sqrt(static_cast<double>(s.n));
  return s;
}

Stat paired_difference(const std::map<std::uint64_t, double>& a,
                       const std::map<std::uint64_t, double>& b) {
  std::vector<double> differences;
  for (const auto& [seed, value] : a)
    if (const auto other = b.find(seed); other != b.end())
      if (std::isfinite(value) && std::isfinite(other->second))
        differences.push_back(value - other->second);
  return stat_of(differences);
}

}  // namespace relpos
