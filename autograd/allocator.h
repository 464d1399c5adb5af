#pragma once
// Device memory allocators with statistics. Every tensor's storage comes from
// here, so tests can measure what an op really allocates (current, peak and the
// largest single block).
#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "autograd/dtype.h"

namespace relpos {

struct AllocatorStats {
  std::size_t current_bytes = 0;
  std::size_t peak_bytes = 0;
  std::size_t largest_block = 0;
  std::uint64_t allocations = 0;

  void record_allocation(std::size_t bytes) {
    current_bytes += bytes;
    peak_bytes = std::max(peak_bytes, current_bytes);
    largest_block = std::max(largest_block, bytes);
    ++allocations;
  }
  void record_free(std::size_t bytes) { current_bytes -= bytes; }
  // Peak restarts from what is in use now; the block and allocation counts restart at zero.
  void reset_peak() {
    peak_bytes = current_bytes;
    largest_block = 0;
    allocations = 0;
  }
};

class Allocator {
 public:
  virtual ~Allocator() = default;
  virtual void* allocate(std::size_t bytes) = 0;
  virtual void deallocate(void* ptr, std::size_t bytes) = 0;
  virtual AllocatorStats stats() const = 0;
  // Resets peak_bytes to current_bytes and largest_block/allocations to zero.
  virtual void reset_peak() = 0;
};

Allocator& allocator_for(Device device);

}  // namespace relpos
