#pragma once
// Loops over [0, n) split across OpenMP threads only when `parallel` holds.
// An inactive `#pragma omp parallel for if(false)` still costs about half a
// microsecond per call here (measured in bench/op_overhead_bench.cpp), which is
// most of a small op's time, so small loops skip OpenMP entirely.
#include <cstdint>

namespace relpos::cpu {

template <class Body>
void parallel_for(std::int64_t n, bool parallel, Body&& body) {
  if (!parallel || n < 2) {
    for (std::int64_t i = 0; i < n; ++i) body(i);
    return;
  }
#pragma omp parallel for schedule(static)
  for (std::int64_t i = 0; i < n; ++i) body(i);
}

}  // namespace relpos::cpu
