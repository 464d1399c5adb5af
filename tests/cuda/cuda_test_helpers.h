#pragma once
// Helpers for the CUDA tests beside the op table: integer inputs on the host and
// the device, and element-wise comparisons with a count of mismatches.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <sstream>
#include <vector>

#include "autograd/backend.h"
#include "autograd/cuda/cuda_backend.h"
#include "autograd/random.h"

namespace relpos::cuda_testing {

// f32 kernels without TF32 must match the CPU to this relative error.
constexpr double kRtol = 1e-5;

inline CudaBackend& gpu() { return cuda_backend(); }

// The same values on the host and on the device.
struct Pair {
  Tensor host;
  Tensor device;
};

inline Pair pair_of(const Tensor& host) { return {host, host.to(Device::cuda)}; }

// Uniform integers in [low, high] stored in `dtype`.
inline Pair integer_pair(const Shape& shape, Rng& rng, std::int64_t low, std::int64_t high,
                         DType dtype) {
  std::vector<double> values(static_cast<std::size_t>(numel_of(shape)));
  for (double& v : values)
    v = static_cast<double>(
        low + static_cast<std::int64_t>(rng.below(static_cast<std::uint64_t>(high - low + 1))));
  return pair_of(Tensor::from_data(values, shape, dtype));
}

inline bool is_nan(double v) { return v != v; }

// Every element of `actual` within rtol * max(|expected|, floor) of `expected`;
// NaN only where NaN is expected, infinities only where the same one is.
inline void require_match(const Tensor& actual, const Tensor& expected, double floor = 1.0,
                          double rtol = kRtol) {
  REQUIRE(actual.shape() == expected.shape());
  const std::vector<double> a = actual.to_vector(), e = expected.to_vector();
  std::size_t mismatches = 0;
  std::ostringstream first;
  for (std::size_t i = 0; i < a.size(); ++i) {
    bool ok;
    if (is_nan(e[i]) || is_nan(a[i])) {
      ok = is_nan(e[i]) && is_nan(a[i]);
    } else if (std::isinf(e[i]) || std::isinf(a[i])) {
      ok = a[i] == e[i];
    } else {
      ok = std::abs(a[i] - e[i]) <= rtol * std::max(std::abs(e[i]), floor);
    }
    if (!ok && mismatches++ == 0)
      first << "element " << i << ": got " << a[i] << ", expected " << e[i];
  }
  INFO(mismatches << " of " << a.size() << " elements differ; first: " << first.str());
  REQUIRE(mismatches == 0);
}

// Bit-for-bit equal values (f32 and i64 survive to_vector's f64 exactly).
inline void require_identical(const Tensor& actual, const Tensor& expected) {
  require_match(actual, expected, 0.0, 0.0);
}

}  // namespace relpos::cuda_testing
