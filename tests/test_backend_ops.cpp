// The op table (tests/backend_ops.h) on the CPU backend, and with each optional
// kernel switched off: its ops must then fall back or be refused, as on a backend
// that lacks the kernel. tests/cuda/ runs the same table on the GPU.
#include <catch2/catch.hpp>

#include "tests/backend_ops.h"

using namespace relpos;
using namespace relpos::backend_ops;

TEST_CASE("every op in the table matches the CPU in f64, on the CPU backend",
          "[backend_ops][slow]") {
  check_op_table(Device::cpu);
}

TEST_CASE("without an optional kernel, its ops fall back or are refused", "[backend_ops]") {
  for (const Kernel kernel : kOptionalKernels) {
    INFO("kernel " << name_of(kernel));
    {
      const KernelSwitchedOff off(Device::cpu, kernel);
      REQUIRE_FALSE(kernel_supported(Device::cpu, kernel));
      int entries = 0;
      for (const OpCase& op : op_table()) {
        if (op.kernel != kernel) continue;
        ++entries;
        const Outcome outcome = check_op(op, Device::cpu, DType::f32);
        CHECK(outcome == (op.falls_back ? Outcome::matched_fallback : Outcome::not_supported));
      }
      CHECK(entries > 0);  // every optional kernel has an entry in the table
    }
    CHECK(kernel_supported(Device::cpu, kernel));  // on again
  }
}
