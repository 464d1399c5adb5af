// Host allocator: 64-byte aligned blocks with usage statistics, and a bounded
// cache of freed blocks of every size.
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <mutex>
#include <new>
#include <unordered_map>
#include <vector>

#include "autograd/cpu/cpu_backend.h"

namespace relpos {
namespace {

constexpr std::size_t kAlignment = 64;
// Freed blocks are kept, per size class, and handed out again for a request of
// the same class, up to kCacheMaxBytes in all. A training step allocates the
// same sizes as the step before it, so once the first steps have filled the
// cache a step makes no system allocation: no malloc for the tape's small
// per-op tensors, and no page faults for the large ones (glibc gives large freed
// blocks back to the OS, and faulting their pages in again on the next step cost
// 15-20% of a 512×512×512 matmul forward+backward).
// Within that, the cache holds no more than twice the most memory the process has had
// in use at once (at least kCacheFloorBytes; twice, for the rounding to size classes):
// a steady training step needs no more, and sampling or evaluation at ever new lengths,
// whose freed blocks of new sizes are never reused, cannot keep gigabytes. When a freed
// block does not fit, the cache is emptied first (its blocks are of sizes no longer
// asked for) and the block kept.
constexpr std::size_t kCacheMaxBytes = std::size_t{4} << 30;
constexpr std::size_t kCacheFloorBytes = std::size_t{64} << 20;
// Size classes: multiples of 64 B below 64 KiB, of a page above. Coarser
// classes for large blocks would serve more requests from the cache when sizes
// vary, but a block reused for a larger request of its class faults in its tail
// pages: that raised the peak RSS of a training step by 8% (d_model 256, L 128).
constexpr std::size_t kSmallLimit = std::size_t{64} << 10;
constexpr std::size_t kPageBytes = 4096;

// The size of the block that serves a request.
std::size_t size_class(std::size_t bytes) {
  const std::size_t unit = bytes <= kSmallLimit ? kAlignment : kPageBytes;
  return (bytes + unit - 1) / unit * unit;
}

// A kAlignment-aligned block carved out of a plain malloc() block, whose address
// is kept in the word just before the aligned pointer. glibc's aligned_alloc
// splits and frees the slack of every block, which made small tensors (the
// tape's per-op outputs) several times more expensive to allocate than malloc.
// nullptr when the system has no memory.
void* allocate_aligned(std::size_t bytes) {
  void* raw = std::malloc(bytes + kAlignment);  // malloc gives at least 16-byte alignment
  if (raw == nullptr) return nullptr;
  const auto address = (reinterpret_cast<std::uintptr_t>(raw) + kAlignment) & ~(kAlignment - 1);
  void* aligned = reinterpret_cast<void*>(address);
  static_cast<void**>(aligned)[-1] = raw;
  return aligned;
}

void free_aligned(void* aligned) {
  if (aligned != nullptr) std::free(static_cast<void**>(aligned)[-1]);
}

class CpuAllocator final : public Allocator {
 public:
  ~CpuAllocator() override { release_cache(); }

  void* allocate(std::size_t bytes) override {
    if (bytes == 0) {
      std::lock_guard lock(mutex_);
      stats_.record_allocation(0);
      return nullptr;
    }
    const std::size_t size = size_class(bytes);
    std::lock_guard lock(mutex_);
    void* p = take_cached(size);
    if (p == nullptr) {
      p = allocate_aligned(size);
      if (p == nullptr) {  // the cache may hold the memory this request needs
        release_cache();
        p = allocate_aligned(size);
      }
      if (p == nullptr) throw std::bad_alloc();
      stats_.record_system_allocation();
    }
    stats_.record_allocation(bytes);
    most_in_use_ = std::max(most_in_use_, stats_.current_bytes);
    return p;
  }
  void deallocate(void* ptr, std::size_t bytes) override {
    const std::size_t size = size_class(bytes);
    {
      std::lock_guard lock(mutex_);
      stats_.record_free(bytes);
      if (ptr == nullptr) return;
      const std::size_t limit =
          std::min(kCacheMaxBytes, std::max(kCacheFloorBytes, 2 * most_in_use_));
      if (cached_bytes_ + size > limit) release_cache();
      if (size <= limit) {
        try {
          cache_[size].push_back(ptr);
          cached_bytes_ += size;
          return;
        } catch (const std::bad_alloc&) {
          // No memory to remember the block: free it instead.
        }
      }
    }
    free_aligned(ptr);
  }
  AllocatorStats stats() const override {
    std::lock_guard lock(mutex_);
    return stats_;
  }
  void reset_peak() override {
    std::lock_guard lock(mutex_);
    stats_.reset_peak();
  }

 private:
  // A cached block of exactly `size` bytes, or nullptr. Called with mutex_ held.
  void* take_cached(std::size_t size) {
    auto it = cache_.find(size);
    if (it == cache_.end() || it->second.empty()) return nullptr;
    void* p = it->second.back();
    it->second.pop_back();
    cached_bytes_ -= size;
    return p;
  }

  // Frees every cached block. Called with mutex_ held (or from the destructor).
  void release_cache() {
    for (auto& [size, blocks] : cache_)
      for (void* p : blocks) free_aligned(p);
    cache_.clear();
    cached_bytes_ = 0;
  }

  mutable std::mutex mutex_;
  AllocatorStats stats_;
  std::unordered_map<std::size_t, std::vector<void*>> cache_;  // block size -> free blocks
  std::size_t cached_bytes_ = 0;
  std::size_t most_in_use_ = 0;  // the largest current_bytes seen (never reset)
};

}  // namespace

Allocator& CpuBackend::allocator() {
  static CpuAllocator instance;
  return instance;
}

}  // namespace relpos
