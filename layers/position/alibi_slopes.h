#pragma once
// ALiBi head slopes (Press et al. 2022): a geometric sequence from 2^(-8/n) for n a
// power of two; otherwise the slopes of the largest power of two below n followed by
// every other slope of the next power of two.
#include <cstdint>
#include <vector>

namespace relpos {

std::vector<double> alibi_slopes(std::int64_t heads);

}  // namespace relpos
