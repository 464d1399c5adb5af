#pragma once
// The statistics of the ablation report over seeds: mean, sample standard deviation and
// the 95% Student t interval of the mean, and the difference between two variants
// paired by seed (one seed gives both variants the same data order and initialisation
// stream, so the paired difference removes what the seeds share).
#include <cstddef>
#include <cstdint>
#include <limits>
#include <map>
#include <vector>

namespace relpos {

// The 0.975 quantile of Student's t distribution with `df` degrees of freedom (the factor
// of a two-sided 95% interval; Boost.Math): 12.706 for 1, 2.776 for 4, -> 1.960. NaN for 0.
double t_quantile_975(std::size_t df);

// Over the n finite values: mean (NaN for n = 0), sample standard deviation (n − 1) and
// ci95 = t_{0.975, n−1} · std / √n, the half-width of the 95% interval of the mean (both
// NaN for n < 2).
struct Stat {
  double mean = std::numeric_limits<double>::quiet_NaN();
  double std = std::numeric_limits<double>::quiet_NaN();
  std::size_t n = 0;
  double ci95 = std::numeric_limits<double>::quiet_NaN();
  double low() const { return mean - ci95; }
  double high() const { return mean + ci95; }
  // Whether the interval is known and lies wholly on one side of 0.
  bool excludes_zero() const { return n >= 2 && (low() > 0.0 || high() < 0.0); }
};
Stat stat_of(const std::vector<double>& values);

// The statistics of a[seed] − b[seed] over the seeds both have, with finite values.
Stat paired_difference(const std::map<std::uint64_t, double>& a,
                       const std::map<std::uint64_t, double>& b);

}  // namespace relpos
