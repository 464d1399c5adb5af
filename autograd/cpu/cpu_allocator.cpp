// Host allocator: 64-byte aligned blocks with usage statistics, and a bounded
// cache of large freed blocks.
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
// Freed blocks of at least kCacheMinBytes are kept and handed out again for the
// same rounded size, up to kCacheMaxBytes in all. glibc gives large freed blocks
// back to the OS (munmap, heap trimming), and faulting their pages in again on
// the next step cost 15-20% of a 512×512×512 matmul forward+backward.
constexpr std::size_t kCacheMinBytes = std::size_t{64} << 10;
constexpr std::size_t kCacheMaxBytes = std::size_t{4} << 30;
constexpr std::size_t kPageBytes = 4096;

// The size of the block that serves a request: a multiple of the alignment, and
// of the page size for cached blocks so that nearby sizes share cache entries.
std::size_t block_size(std::size_t bytes) {
  const std::size_t unit = bytes >= kCacheMinBytes ? kPageBytes : kAlignment;
  return (bytes + unit - 1) / unit * unit;
}

// A kAlignment-aligned block carved out of a plain malloc() block, whose address
// is kept in the word just before the aligned pointer. glibc's aligned_alloc
// splits and frees the slack of every block, which made small tensors (the
// tape's per-op outputs) several times more expensive to allocate than malloc.
void* allocate_aligned(std::size_t bytes) {
  if (bytes == 0) return nullptr;
  void* raw = std::malloc(bytes + kAlignment);  // malloc gives at least 16-byte alignment
  if (raw == nullptr) throw std::bad_alloc();
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
  ~CpuAllocator() override {
    for (auto& [size, blocks] : cache_)
      for (void* p : blocks) free_aligned(p);
  }

  void* allocate(std::size_t bytes) override {
    const std::size_t size = block_size(bytes);
    void* p = size >= kCacheMinBytes ? take_cached(size) : nullptr;
    if (p == nullptr) p = allocate_aligned(size);
    std::lock_guard lock(mutex_);
    stats_.record_allocation(bytes);
    return p;
  }
  void deallocate(void* ptr, std::size_t bytes) override {
    const std::size_t size = block_size(bytes);
    {
      std::lock_guard lock(mutex_);
      stats_.record_free(bytes);
      if (ptr != nullptr && size >= kCacheMinBytes && cached_bytes_ + size <= kCacheMaxBytes) {
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
  // A cached block of exactly `size` bytes, or nullptr.
  void* take_cached(std::size_t size) {
    std::lock_guard lock(mutex_);
    auto it = cache_.find(size);
    if (it == cache_.end() || it->second.empty()) return nullptr;
    void* p = it->second.back();
    it->second.pop_back();
    cached_bytes_ -= size;
    return p;
  }

  mutable std::mutex mutex_;
  AllocatorStats stats_;
  std::unordered_map<std::size_t, std::vector<void*>> cache_;  // block size -> free blocks
  std::size_t cached_bytes_ = 0;
};

}  // namespace

Allocator& CpuBackend::allocator() {
  static CpuAllocator instance;
  return instance;
}

}  // namespace relpos
