#include "layers/position/alibi_slopes.h"

#include <cmath>

#include "autograd/error.h"

namespace relpos {
namespace {
std::vector<double> power_of_two_slopes(std::int64_t n) {
  std::vector<double> slopes(static_cast<std::size_t>(n));
  for (std::int64_t h = 0; h < n; ++h)
    slopes[h] = std::pow(2.0, -8.0 * static_cast<double>(h + 1) / static_cast<double>(n));
  return slopes;
}
}  // namespace

std::vector<double> alibi_slopes(std::int64_t heads) {
  require(heads >= 1, "alibi: need at least one head, got {}", heads);
  std::int64_t lower = 1;
  while (lower * 2 <= heads) lower *= 2;
  std::vector<double> slopes = power_of_two_slopes(lower);
  if (lower == heads) return slopes;
  const std::vector<double> finer = power_of_two_slopes(2 * lower);
  for (std::int64_t i = 0; static_cast<std::int64_t>(slopes.size()) < heads; i += 2)
    slopes.push_back(finer[i]);
  return slopes;
}

}  // namespace relpos
