// Caching device allocator. Blocks come from cudaMalloc; a freed block goes to
// the free list of its size class and is handed out again for the next request
// of that class, so a training step that repeats the previous one's requests
// makes no cudaMalloc. Reuse without waiting is safe because all work runs on
// one stream: a kernel that still reads a freed block is queued before any
// kernel that writes to its next owner.
#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "autograd/cuda/check.h"
#include "autograd/cuda/cuda_backend.h"

namespace relpos {
namespace {

constexpr std::size_t kSmallLimit = std::size_t{1} << 20;
constexpr std::size_t kSmallGranule = 512;

std::size_t round_up(std::size_t bytes, std::size_t granule) {
  return (bytes + granule - 1) / granule * granule;
}

// The size class of a request: multiples of 512 B up to 1 MiB, then eight
// classes per power of two (at most 12.5 % rounding waste).
std::size_t size_class(std::size_t bytes) {
  if (bytes <= kSmallLimit) return round_up(bytes, kSmallGranule);
  return round_up(bytes, std::bit_floor(bytes) / 8);
}

class CudaAllocator final : public Allocator {
 public:
  void* allocate(std::size_t bytes) override {
    std::lock_guard lock(mutex_);
    void* block = bytes == 0 ? nullptr : take_block(size_class(bytes));
    stats_.record_allocation(bytes);
    return block;
  }

  void deallocate(void* ptr, std::size_t bytes) override {
    std::lock_guard lock(mutex_);
    stats_.record_free(bytes);
    if (ptr == nullptr) return;
    const std::size_t size = size_class(bytes);
    free_blocks_[size].push_back(ptr);
    memory_.cached_bytes += size;
  }

  AllocatorStats stats() const override {
    std::lock_guard lock(mutex_);
    return stats_;
  }

  void reset_peak() override {
    std::lock_guard lock(mutex_);
    stats_.reset_peak();
  }

  CudaMemoryStats memory_stats() const {
    std::lock_guard lock(mutex_);
    return memory_;
  }

  void release_cached() {
    std::lock_guard lock(mutex_);
    release_cached_locked();
  }

 private:
  void* take_block(std::size_t size) {
    auto& list = free_blocks_[size];
    if (!list.empty()) {
      void* block = list.back();
      list.pop_back();
      memory_.cached_bytes -= size;
      return block;
    }
    void* block = nullptr;
    cudaError_t status = cudaMalloc(&block, size);
    if (status == cudaErrorMemoryAllocation && memory_.cached_bytes > 0) {
      cudaGetLastError();  // clear the failure, give the cache back and try once more
      release_cached_locked();
      status = cudaMalloc(&block, size);
    }
    if (status != cudaSuccess) {
      const std::string call =
          fmt::format("cudaMalloc of {} bytes ({} bytes in use by tensors, {} reserved)", size,
                      stats_.current_bytes, memory_.reserved_bytes);
      cuda::check(status, call.c_str(), __FILE__, __LINE__);
    }
    ++memory_.device_mallocs;
    memory_.reserved_bytes += size;
    return block;
  }

  void release_cached_locked() {
    // Queued kernels may still use blocks freed after their launch.
    RELPOS_CUDA_CHECK(cudaDeviceSynchronize());
    for (auto& [size, list] : free_blocks_) {
      for (void* block : list) RELPOS_CUDA_CHECK(cudaFree(block));
      memory_.reserved_bytes -= size * list.size();
      list.clear();
    }
    memory_.cached_bytes = 0;
  }

  mutable std::mutex mutex_;
  AllocatorStats stats_;
  CudaMemoryStats memory_;
  std::unordered_map<std::size_t, std::vector<void*>> free_blocks_;  // size class -> blocks
};

CudaAllocator& device_allocator() {
  // Never destroyed: tensors in static storage may be freed after it at exit,
  // and the driver reclaims device memory when the process ends.
  static auto* instance = new CudaAllocator;
  return *instance;
}

}  // namespace

Allocator& CudaBackend::allocator() { return device_allocator(); }
CudaMemoryStats CudaBackend::memory_stats() { return device_allocator().memory_stats(); }
void CudaBackend::release_cached_memory() { device_allocator().release_cached(); }

}  // namespace relpos
