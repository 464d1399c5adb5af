// The op table (tests/backend_ops.h) on the CUDA backend: every entry forward and
// backward in f32 and f64 against the CPU in f64, entries whose kernel CUDA lacks
// reported as "not supported" (and refused), and TF32 GEMMs, which only CUDA has.
#include <catch2/catch.hpp>

#include "autograd/ops/matmul.h"
#include "cuda_test_helpers.h"
#include "tests/backend_ops.h"

using namespace relpos;
using namespace relpos::backend_ops;
using namespace relpos::cuda_testing;

TEST_CASE("every op in the table matches the CPU in f64, on the CUDA backend",
          "[cuda][backend_ops]") {
  check_op_table(Device::cuda);
}

namespace {

// Restores the TF32 setting even when a REQUIRE fails.
struct AllowTf32 {
  explicit AllowTf32(bool allow) : saved(gpu().allow_tf32()) { gpu().set_allow_tf32(allow); }
  ~AllowTf32() { gpu().set_allow_tf32(saved); }
  bool saved;
};

}  // namespace

TEST_CASE("matmul with TF32 allowed stays within TF32 precision", "[cuda]") {
  REQUIRE_FALSE(gpu().allow_tf32());  // TF32 is opt-in
  Rng rng(43);
  const Tensor a = randn({2, 17, 31}, rng), b = randn({2, 31, 23}, rng);
  const Tensor want = matmul(a.to(DType::f64), b.to(DType::f64));
  const AllowTf32 allow(true);
  const Tensor got = matmul(a.to(Device::cuda), b.to(Device::cuda));
  // TF32 keeps 10 mantissa bits: products are exact to about 1e-3; sums of k = 31
  // of them scale with sqrt(k).
  require_match(got, want, std::sqrt(31.0), 5e-3);
}
