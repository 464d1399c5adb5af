#pragma once
// The loop shape shared by the CPU optimizer and clipping kernels: one pass over
// flat contiguous data, each element independent, so results do not depend on
// the thread count.
#include <cstdint>

namespace relpos::optim_detail {

// Below this many elements a parallel region costs more than it saves.
inline constexpr std::int64_t kParallelThreshold = 32768;

template <class Fn>
void for_each_index(std::int64_t n, const Fn& fn) {
#pragma omp parallel for schedule(static) if (n > kParallelThreshold)
  for (std::int64_t i = 0; i < n; ++i) fn(i);
}

}  // namespace relpos::optim_detail
