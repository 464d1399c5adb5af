// The runner of the op table (backend_ops.h): one entry on one backend in one
// dtype, against the CPU in f64.
#include "tests/backend_ops.h"

#include <fmt/format.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <limits>

#include "autograd/tape.h"

namespace relpos::backend_ops {
namespace {

// The output, then the gradient of each `grad` input, as host f64 values.
using Results = std::vector<std::vector<double>>;

std::vector<double> host_values(const Tensor& t) { return t.detach().to(Device::cpu).to_vector(); }

Results run(const OpCase& op, const std::vector<Input>& inputs, const Tensor& weights,
            Device device, DType dtype) {
  std::vector<Tensor> x;
  for (const Input& in : inputs) {
    Tensor t = (is_floating(in.value.dtype()) ? in.value.to(dtype) : in.value).to(device).detach();
    if (in.grad && op.backward) t.set_requires_grad(true);
    x.push_back(t);
  }
  const Tensor out = op.forward(x);
  Results results{host_values(out)};
  if (!op.backward) return results;
  backward(out, weights.to(dtype).to(device));
  for (std::size_t i = 0; i < x.size(); ++i) {
    if (!inputs[i].grad) continue;
    INFO("input " << i << " has no gradient");
    REQUIRE(x[i].grad().defined());
    results.push_back(host_values(x[i].grad()));
  }
  return results;
}

bool same_bits(double a, double b) { return a == b || (std::isnan(a) && std::isnan(b)); }

// max |got - want| / max |want| over the finite elements; infinite when NaNs or
// infinities differ in place, or when want is all zeros and got is not.
double relative_error(const std::vector<double>& got, const std::vector<double>& want) {
  REQUIRE(got.size() == want.size());
  double diff = 0.0, scale = 0.0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    if (!std::isfinite(want[i]) || !std::isfinite(got[i])) {
      if (!same_bits(got[i], want[i])) return std::numeric_limits<double>::infinity();
      continue;
    }
    diff = std::max(diff, std::abs(got[i] - want[i]));
    scale = std::max(scale, std::abs(want[i]));
  }
  if (diff == 0.0) return 0.0;
  return scale == 0.0 ? std::numeric_limits<double>::infinity() : diff / scale;
}

std::string what_of(std::size_t index) {
  return index == 0 ? "the output" : fmt::format("gradient {}", index);
}

void report(const OpCase& op, Device device, DType dtype, const std::string& status) {
  fmt::print("[backend_ops] {:<4} {:<3}  {:<58} {}\n", name_of(device), name_of(dtype), op.name,
             status);
}

}  // namespace

Outcome check_op(const OpCase& op, Device device, DType dtype) {
  INFO(op.name << " on " << name_of(device) << " in " << name_of(dtype));
  Rng rng(0x0b5e55ed);
  const std::vector<Input> inputs = op.inputs(rng);
  const bool missing = op.kernel.has_value() && !kernel_supported(device, *op.kernel);
  if (missing && !op.falls_back) {
    // The table says "not supported": the op must then refuse to run.
    REQUIRE_THROWS(run(op, inputs, Tensor(), device, dtype));
    Tape::current().clear();
    report(op, device, dtype, fmt::format("not supported (no {} kernel)", name_of(*op.kernel)));
    return Outcome::not_supported;
  }

  Tensor weights;  // the output's cotangent: fixed, f32-representable
  if (op.backward) {
    Tensor probe;
    {
      NoGradGuard no_grad;
      std::vector<Tensor> x;
      for (const Input& in : inputs) x.push_back(in.value);
      probe = op.forward(x);
    }
    weights = randn(probe.shape(), rng).to(DType::f64);
  }
  const Results want = run(op, inputs, weights, Device::cpu, DType::f64);
  const Results got = run(op, inputs, weights, device, dtype);
  const Results again = run(op, inputs, weights, device, dtype);
  REQUIRE(got.size() == want.size());
  const double tolerance = dtype == DType::f32 ? op.f32_tolerance : op.f64_tolerance;
  double worst = 0.0;
  bool repeats = true;
  for (std::size_t i = 0; i < want.size(); ++i) {
    const double error = relative_error(got[i], want[i]);
    INFO(what_of(i) << ": relative error " << error << ", tolerance " << tolerance);
    CHECK(error <= tolerance);
    worst = std::max(worst, error);
    const bool same = std::equal(got[i].begin(), got[i].end(), again[i].begin(), same_bits);
    INFO(what_of(i) << " differs between two identical runs");
    CHECK(same);
    repeats = repeats && same;
  }
  const bool ok = worst <= tolerance && repeats;
  report(
      op, device, dtype,
      fmt::format(
          "{}{} (error {:.1e}, tolerance {:.0e})", ok ? "ok" : "FAILED",
          missing ? fmt::format(" through its fallback (no {} kernel)", name_of(*op.kernel)) : "",
          worst, tolerance));
  return missing ? Outcome::matched_fallback : Outcome::matched;
}

void check_op_table(Device device) {
  int matched = 0, fallback = 0, unsupported = 0;
  for (const OpCase& op : op_table()) {
    for (const DType dtype : {DType::f32, DType::f64}) {
      switch (check_op(op, device, dtype)) {
        case Outcome::matched:
          ++matched;
          break;
        case Outcome::matched_fallback:
          ++fallback;
          break;
        case Outcome::not_supported:
          ++unsupported;
          break;
      }
    }
  }
  fmt::print("[backend_ops] {}: {} matched, {} matched through a fallback, {} not supported\n",
             name_of(device), matched, fallback, unsupported);
}

}  // namespace relpos::backend_ops
