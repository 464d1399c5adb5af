#pragma once
// A reference-counted block of device memory with a version counter that
// in-place writes bump, so the tape can detect saved tensors modified before
// backward.
#include <cstddef>
#include <cstdint>

#include "autograd/dtype.h"

namespace relpos {

class Storage {
 public:
  Storage(std::size_t bytes, Device device);
  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;

  void* data() const { return data_; }
  std::size_t bytes() const { return bytes_; }
  Device device() const { return device_; }
  std::uint64_t version() const { return version_; }
  void bump_version() { ++version_; }

 private:
  void* data_ = nullptr;
  std::size_t bytes_ = 0;
  Device device_;
  std::uint64_t version_ = 0;
};

}  // namespace relpos
