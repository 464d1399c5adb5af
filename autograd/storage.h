#pragma once
// A reference-counted block of device memory with a version counter that
// in-place writes bump, so the tape can detect saved tensors modified before
// backward.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <utility>

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

  // A block made from this one's values and kept with it, dying with it: the bf16 rounding
  // that bf16 products read (autograd/ops/bf16_input.h; a linear layer's weight:
  // autograd/ops/bf16_weight.h). `version`: this block's version when it was made; offset,
  // numel: the elements it was made from (one dense run, in memory order).
  struct Derived {
    std::shared_ptr<Storage> block;
    std::uint64_t version = 0;
    std::int64_t offset = 0, numel = 0;
  };
  const Derived& derived() const { return derived_; }
  void set_derived(Derived derived) { derived_ = std::move(derived); }

 private:
  void* data_ = nullptr;
  std::size_t bytes_ = 0;
  Device device_;
  std::uint64_t version_ = 0;
  Derived derived_;
};

}  // namespace relpos
