// Host allocator: 64-byte aligned blocks with usage statistics.
#include <cstdlib>
#include <mutex>
#include <new>

#include "autograd/cpu/cpu_backend.h"

namespace relpos {
namespace {

class CpuAllocator final : public Allocator {
 public:
  void* allocate(std::size_t bytes) override {
    const std::size_t rounded = (bytes + 63) / 64 * 64;
    void* p = rounded == 0 ? nullptr : std::aligned_alloc(64, rounded);
    if (rounded != 0 && p == nullptr) throw std::bad_alloc();
    std::lock_guard lock(mutex_);
    stats_.current_bytes += bytes;
    stats_.peak_bytes = std::max(stats_.peak_bytes, stats_.current_bytes);
    stats_.largest_block = std::max(stats_.largest_block, bytes);
    ++stats_.allocations;
    return p;
  }
  void deallocate(void* ptr, std::size_t bytes) override {
    std::free(ptr);
    std::lock_guard lock(mutex_);
    stats_.current_bytes -= bytes;
  }
  AllocatorStats stats() const override {
    std::lock_guard lock(mutex_);
    return stats_;
  }
  void reset_peak() override {
    std::lock_guard lock(mutex_);
    stats_.peak_bytes = stats_.current_bytes;
    stats_.largest_block = 0;
    stats_.allocations = 0;
  }

 private:
  mutable std::mutex mutex_;
  AllocatorStats stats_;
};

}  // namespace

Allocator& CpuBackend::allocator() {
  static CpuAllocator instance;
  return instance;
}

}  // namespace relpos
