#pragma once
// Argument checks shared by ops; each throws a UsageError naming the op and shapes.
#include "autograd/error.h"
#include "autograd/tensor.h"

namespace relpos {

inline void check_floating(const Tensor& t, const char* op) {
  require(t.defined(), "{}: undefined input tensor", op);
  if (!is_floating(t.dtype())) fail("{}: expected a floating tensor, got {}", op, t.describe());
}

inline void check_same_kind(const Tensor& a, const Tensor& b, const char* op) {
  check_floating(a, op);
  check_floating(b, op);
  if (!(a.dtype() == b.dtype() && a.device() == b.device()))
    fail("{}: inputs {} and {} differ in dtype or device", op, a.describe(), b.describe());
}

// Maps a possibly negative axis into [0, rank).
inline std::int64_t normalize_axis(std::int64_t axis, std::int64_t rank, const char* op) {
  const std::int64_t a = axis < 0 ? axis + rank : axis;
  require(a >= 0 && a < rank, "{}: axis {} out of range for a tensor of rank {}", op, axis, rank);
  return a;
}

// The multi-index "[i, j, ...]" of element `flat` of a row-major tensor of this shape.
inline std::string position_of(std::int64_t flat, const Shape& shape) {
  Shape index(shape.size());
  for (std::size_t axis = shape.size(); axis-- > 0;) {
    index[axis] = flat % shape[axis];
    flat /= shape[axis];
  }
  return to_string(index);
}

}  // namespace relpos
