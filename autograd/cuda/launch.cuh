#pragma once
// Launch geometry shared by the kernels: 256-thread blocks walking their range
// with grid-stride loops, or one warp per row for row reductions.
#include <algorithm>
#include <cstdint>

namespace relpos::cuda {

constexpr int kThreads = 256;
constexpr int kWarp = 32;
constexpr int kWarpsPerBlock = kThreads / kWarp;
// Enough blocks to fill an H100 several times over; grid-stride loops do the rest.
constexpr std::int64_t kMaxBlocks = 8192;

// Blocks for `items` work items when each block takes `per_block` of them.
inline unsigned blocks_for(std::int64_t items, std::int64_t per_block = kThreads) {
  return static_cast<unsigned>(std::min(kMaxBlocks, (items + per_block - 1) / per_block));
}

// Blocks for one warp per row.
inline unsigned blocks_for_rows(std::int64_t rows) { return blocks_for(rows, kWarpsPerBlock); }

#ifdef __CUDACC__
__device__ inline std::int64_t thread_index() {
  return static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}
__device__ inline std::int64_t thread_count() {
  return static_cast<std::int64_t>(gridDim.x) * blockDim.x;
}
__device__ inline int lane_index() { return static_cast<int>(threadIdx.x) % kWarp; }
// The first row of this warp; the warp then steps by warp_row_count().
__device__ inline std::int64_t warp_row_index() {
  return static_cast<std::int64_t>(blockIdx.x) * kWarpsPerBlock + threadIdx.x / kWarp;
}
__device__ inline std::int64_t warp_row_count() {
  return static_cast<std::int64_t>(gridDim.x) * kWarpsPerBlock;
}
#endif

}  // namespace relpos::cuda
