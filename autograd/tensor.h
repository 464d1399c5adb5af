#pragma once
// Tensor: a strided view of shared Storage, with autograd metadata.
// A Tensor is a cheap handle (shared_ptr); copies alias the same tensor.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "autograd/dtype.h"
#include "autograd/storage.h"

namespace relpos {

using Shape = std::vector<std::int64_t>;

std::string to_string(const Shape& shape);
std::int64_t numel_of(const Shape& shape);
Shape contiguous_strides(const Shape& shape);

struct TensorImpl;

class Tensor {
 public:
  Tensor() = default;
  explicit Tensor(std::shared_ptr<TensorImpl> impl) : impl_(std::move(impl)) {}

  // ---- creation ----
  static Tensor empty(const Shape& shape, DType dtype = DType::f32, Device device = Device::cpu);
  static Tensor zeros(const Shape& shape, DType dtype = DType::f32, Device device = Device::cpu);
  static Tensor full(const Shape& shape, double value, DType dtype = DType::f32,
                     Device device = Device::cpu);
  static Tensor ones(const Shape& shape, DType dtype = DType::f32, Device device = Device::cpu) {
    return full(shape, 1.0, dtype, device);
  }
  static Tensor scalar(double value, DType dtype = DType::f32) { return full({}, value, dtype); }
  static Tensor from_data(const std::vector<double>& values, const Shape& shape,
                          DType dtype = DType::f32);
  static Tensor from_data(const std::vector<float>& values, const Shape& shape);
  // A strided view of existing storage (used by view ops).
  static Tensor view_of(const Tensor& base, Shape shape, Shape strides, std::int64_t offset);

  // ---- metadata ----
  bool defined() const { return impl_ != nullptr; }
  const Shape& shape() const;
  const Shape& strides() const;
  std::int64_t offset() const;
  std::int64_t dim() const { return static_cast<std::int64_t>(shape().size()); }
  std::int64_t size(std::int64_t axis) const;  // negative axes count from the end
  std::int64_t numel() const { return numel_of(shape()); }
  DType dtype() const;
  Device device() const;
  bool is_contiguous() const;
  std::string describe() const;  // e.g. "f32[2, 3] cpu"
  const std::shared_ptr<Storage>& storage() const;
  TensorImpl* impl() const { return impl_.get(); }
  const std::shared_ptr<TensorImpl>& impl_ptr() const { return impl_; }

  // ---- data access (CPU) ----
  void* raw_data() const;  // points at element 0 of the view
  template <class T>
  T* data() const {
    check_access(dtype_of<T>());
    return static_cast<T*>(raw_data());
  }
  double item() const;
  std::vector<double> to_vector() const;  // row-major copy of the elements

  // ---- copies and conversions (not recorded on the tape) ----
  Tensor contiguous() const;  // self if already contiguous
  Tensor clone() const;       // always a fresh contiguous copy
  Tensor to(Device device) const;
  Tensor to(DType dtype) const;
  Tensor detach() const;  // same storage, no autograd history

  // ---- in-place writes: bump the version, never recorded ----
  Tensor& fill_(double value);
  Tensor& copy_(const Tensor& source);  // same shape; any strides/dtype
  std::uint64_t version() const;
  void bump_version() const;

  // ---- autograd ----
  bool requires_grad() const;
  Tensor& set_requires_grad(bool value);
  bool is_leaf() const;
  Tensor grad() const;
  void set_grad(const Tensor& grad) const;
  void zero_grad() const;  // drops .grad

 private:
  void check_access(DType requested) const;
  std::shared_ptr<TensorImpl> impl_;
};

struct TensorImpl {
  std::shared_ptr<Storage> storage;
  Shape shape;
  Shape strides;
  std::int64_t offset = 0;
  DType dtype = DType::f32;
  // autograd
  bool requires_grad = false;   // leaves: set by the user; outputs: set by recording
  std::int64_t tape_slot = -1;  // gradient slot of the producing op's output on the tape, -1: leaf
  std::uint64_t tape_epoch = 0;
  Tensor grad;
};

}  // namespace relpos
