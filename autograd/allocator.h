#pragma once
// Device memory allocators with statistics. Every tensor's storage comes from
// here, so tests can measure what an op really allocates (current, peak and the
// largest single block) and whether a training step still asks the system for
// memory once the allocator's cache is warm.
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
  // Allocations the cache could not serve, which went to the system allocator
  // (malloc on the CPU). Zero in the steady state of a training step.
  std::uint64_t system_allocations = 0;

  void record_allocation(std::size_t bytes) {
    current_bytes += bytes;
    peak_bytes = std::max(peak_bytes, current_bytes);
    largest_block = std::max(largest_block, bytes);
    ++allocations;
  }
  void record_free(std::size_t bytes) { current_bytes -= bytes; }
  void record_system_allocation() { ++system_allocations; }
  // Peak restarts from what is in use now; the block and allocation counts restart at zero.
  void reset_peak() {
    peak_bytes = current_bytes;
    largest_block = 0;
    allocations = 0;
    system_allocations = 0;
  }
};

class Allocator {
 public:
  virtual ~Allocator() = default;
  virtual void* allocate(std::size_t bytes) = 0;
  virtual void deallocate(void* ptr, std::size_t bytes) = 0;
  virtual AllocatorStats stats() const = 0;
  // Resets peak_bytes to current_bytes and largest_block and both allocation counts to zero.
  virtual void reset_peak() = 0;
};

Allocator& allocator_for(Device device);

}  // namespace relpos
