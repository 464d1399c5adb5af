#pragma once
// One table of ops run on every built backend (in the spirit of ggml's
// test-backend-ops): each entry names an op and its shapes, the optional kernel it
// needs (autograd/kernel.h), an input generator and a tolerance. check_op runs the
// entry's forward and backward on a backend in one dtype and compares the output
// and every input gradient with the CPU's in f64 (the reference that the fp64
// gradchecks elsewhere prove), and runs it twice to show the bits repeat.
// tests/test_backend_ops.cpp runs the table on the CPU; tests/cuda/ on the GPU.
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "autograd/kernel.h"
#include "autograd/random.h"
#include "autograd/tensor.h"

namespace relpos::backend_ops {

// One input of an op: a CPU tensor, f64 (holding f32-representable values, so the
// f32 run sees the same numbers) or i64/u8. Floating inputs are converted to the
// run's dtype; `grad` inputs become leaves whose gradients are compared.
struct Input {
  Tensor value;
  bool grad = true;
};

struct OpCase {
  std::string name = {};              // the op and its shapes
  std::optional<Kernel> kernel = {};  // the optional kernel it needs, if any
  bool falls_back = false;            // without that kernel, the op composes required ones
  std::function<std::vector<Input>(Rng&)> inputs = {};
  std::function<Tensor(const std::vector<Tensor>&)> forward = {};
  // max |got - want| / max |want| over each compared tensor, by the run's dtype.
  double f32_tolerance = 1e-5;
  double f64_tolerance = 1e-12;
  bool backward = true;  // false: forward only (optimizer steps)
};

const std::vector<OpCase>& op_table();

enum class Outcome {
  matched,           // within tolerance, the same bits on a second run
  matched_fallback,  // the same, through the op's fallback (the kernel is missing)
  not_supported,     // the kernel is missing and the op was refused, as it must be
};

// Runs `op` on `device` in `dtype` with Catch2 REQUIREs, prints one report line
// and returns what happened.
Outcome check_op(const OpCase& op, Device device, DType dtype);

// check_op for every entry, in f32 and f64; prints a summary line.
void check_op_table(Device device);

}  // namespace relpos::backend_ops
