#pragma once
// Multi-tensor launches: one kernel launch over many tensors. Each tensor is cut
// into chunks of kMultiTensorChunk elements; block b of the grid works on chunk
// b of all the tensors' chunks taken in list order. A tensor's descriptor (its
// "slot": pointers, element count, per-tensor constants) records the index of
// its first chunk; the slots live in one device buffer, and a block finds its
// slot by binary search.
#include <cuda_runtime_api.h>

#include <cstdint>
#include <vector>

#include "autograd/cuda/check.h"
#include "autograd/tensor.h"

namespace relpos::cuda {

constexpr std::int64_t kMultiTensorChunk = 16384;

inline std::int64_t chunks_of(std::int64_t numel) {
  return (numel + kMultiTensorChunk - 1) / kMultiTensorChunk;
}

// A device copy of `slots`; the returned u8 tensor owns the memory. The copy
// finishes before this returns, so `slots` may go away at once.
template <class Slot>
Tensor upload_slots(const std::vector<Slot>& slots) {
  const std::size_t bytes = slots.size() * sizeof(Slot);
  Tensor buffer = Tensor::empty({static_cast<std::int64_t>(bytes)}, DType::u8, Device::cuda);
  RELPOS_CUDA_CHECK(cudaMemcpy(buffer.raw_data(), slots.data(), bytes, cudaMemcpyHostToDevice));
  return buffer;
}

#ifdef __CUDACC__
// The slot that owns chunk `chunk`: the last one whose first_chunk <= chunk
// (slots are in chunk order and none is empty).
template <class Slot>
__device__ Slot slot_of_chunk(const Slot* slots, int count, std::int64_t chunk) {
  int low = 0, high = count - 1;
  while (low < high) {
    const int mid = (low + high + 1) / 2;
    if (slots[mid].first_chunk <= chunk) {
      low = mid;
    } else {
      high = mid - 1;
    }
  }
  return slots[low];
}
#endif

}  // namespace relpos::cuda
