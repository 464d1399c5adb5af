#pragma once
// Helpers shared by the tests.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "autograd/bf16_support.h"
#include "autograd/gradcheck.h"
#include "autograd/random.h"
#include "autograd/tensor.h"

namespace relpos::testing {

// The bit patterns of an f32 tensor, row-major.
inline std::vector<std::uint32_t> f32_bits(const Tensor& t) {
  const Tensor c = t.detach().contiguous();
  std::vector<std::uint32_t> out(static_cast<std::size_t>(c.numel()));
  std::memcpy(out.data(), c.data<float>(), out.size() * sizeof(float));
  return out;
}

// A copy of `values` that requires grad.
inline Tensor leaf(const Tensor& values) {
  Tensor t = values.clone();
  t.set_requires_grad(true);
  return t;
}

// Whether train.precision=bf16's matrix products run here (oneDNN and a CPU with
// AVX-512-BF16 or AMX); where they don't, says "SKIPPED: ..." (ctest reports the test
// as skipped) and returns false.
inline bool bf16_usable() {
  const std::string why = bf16_unavailable_reason();
  if (why.empty()) return true;
  WARN("SKIPPED: bf16 products are not available: " << why);
  return false;
}

// max |a - b| over the elements of two tensors of the same size.
inline double largest_difference(const Tensor& a, const Tensor& b) {
  const std::vector<double> x = a.to_vector(), y = b.to_vector();
  REQUIRE(x.size() == y.size());
  double largest = 0.0;
  for (std::size_t i = 0; i < x.size(); ++i) largest = std::max(largest, std::abs(x[i] - y[i]));
  return largest;
}

// max |a - b| / max |b| over the elements of two tensors of the same size: the error of
// `a` relative to the reference `b`, as the attention tests measure it.
inline double relative_error(const Tensor& a, const Tensor& b) {
  const std::vector<double> x = a.to_vector(), y = b.to_vector();
  REQUIRE(x.size() == y.size());
  double diff = 0.0, scale = 0.0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    diff = std::max(diff, std::abs(x[i] - y[i]));
    scale = std::max(scale, std::abs(y[i]));
  }
  return diff / scale;
}

// The share of the elements of `a` that differ from the reference `b` by more than
// bound · max |b|: relative_error's measure element by element, for comparisons where a few
// isolated elements may stand apart (a bf16 rounding of an intermediate that flips).
inline double share_apart(const Tensor& a, const Tensor& b, double bound) {
  const std::vector<double> x = a.to_vector(), y = b.to_vector();
  REQUIRE(x.size() == y.size());
  REQUIRE_FALSE(x.empty());
  double scale = 0.0;
  for (double v : y) scale = std::max(scale, std::abs(v));
  std::size_t apart = 0;
  for (std::size_t i = 0; i < x.size(); ++i) apart += std::abs(x[i] - y[i]) > bound * scale;
  return static_cast<double>(apart) / static_cast<double>(x.size());
}

// Small tensors from literal values, in the dtype each name says: f64({1, 2, 3, 4}, {2, 2}).
inline Tensor f64(const std::vector<double>& values, const Shape& shape) {
  return Tensor::from_data(values, shape, DType::f64);
}

inline Tensor i64(const std::vector<double>& values, const Shape& shape) {
  return Tensor::from_data(values, shape, DType::i64);
}

inline Tensor u8(const std::vector<double>& values, const Shape& shape) {
  return Tensor::from_data(values, shape, DType::u8);
}

// An f64 leaf that requires grad, filled with N(0, 1).
inline Tensor leaf(const Shape& shape, Rng& rng, double scale = 1.0) {
  Tensor t = randn(shape, rng, DType::f64, scale);
  t.set_requires_grad(true);
  return t;
}

// A non-contiguous f64 leaf: the transpose of the last two axes of a fresh tensor.
inline Tensor transposed_leaf(const Shape& shape, Rng& rng) {
  Shape swapped = shape;
  std::swap(swapped[swapped.size() - 1], swapped[swapped.size() - 2]);
  Tensor base = randn(swapped, rng, DType::f64);
  Shape strides = base.strides();
  std::swap(strides[strides.size() - 1], strides[strides.size() - 2]);
  Tensor view = Tensor::view_of(base, shape, strides, 0);
  view.set_requires_grad(true);
  return view;
}

inline void require_gradcheck(const TensorFunction& f, const std::vector<Tensor>& inputs,
                              const GradcheckOptions& options = {}) {
  const GradcheckResult r = gradcheck(f, inputs, options);
  INFO(r.message);
  REQUIRE(r.ok);
  REQUIRE(r.checked > 0);
}

inline void require_close(const std::vector<double>& actual, const std::vector<double>& expected,
                          double tolerance) {
  REQUIRE(actual.size() == expected.size());
  for (std::size_t i = 0; i < actual.size(); ++i) {
    INFO("element " << i);
    REQUIRE(actual[i] == Approx(expected[i]).margin(tolerance).epsilon(tolerance));
  }
}

}  // namespace relpos::testing
