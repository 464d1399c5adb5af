#pragma once
// Warp-wide reductions by a fixed butterfly of shuffles: every lane ends with
// the same bits, and the order of the additions never changes from run to run.
#include "autograd/cuda/launch.cuh"

namespace relpos::cuda {

constexpr unsigned kFullMask = 0xffffffffu;

template <class T>
__device__ inline T warp_sum(T value) {
  for (int delta = kWarp / 2; delta > 0; delta /= 2)
    value += __shfl_xor_sync(kFullMask, value, delta);
  return value;
}

// The largest value; NaN lanes are ignored unless every lane is NaN.
template <class T>
__device__ inline T warp_max(T value) {
  for (int delta = kWarp / 2; delta > 0; delta /= 2) {
    const T other = __shfl_xor_sync(kFullMask, value, delta);
    value = other > value || value != value ? other : value;
  }
  return value;
}

}  // namespace relpos::cuda
