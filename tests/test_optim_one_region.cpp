// The CPU optimizer kernels run one parallel region over all parameters of a step
// (autograd/cpu/optimizer.cpp): the element range of every tensor taken together is cut
// into one piece per thread, so pieces start and end inside tensors. These tests compare
// that pass with the composed form it replaces (one optimizer, and so one kernel call,
// per parameter) and between 1 and 2 threads: every value must be equal bit for bit.
#include <catch2/catch.hpp>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "autograd/threads.h"
#include "optim/adam.h"
#include "optim/clip.h"
#include "optim/sgd.h"

using namespace relpos;

namespace {

// Sizes below and above the kernels' parallel threshold (32768 elements); 1 and 3 make
// the thread boundaries fall inside tensors.
const std::vector<std::int64_t> kSizes{1, 40001, 3, 257, 65537, 1024, 9};

// f32 parameters with distinct values and gradients; every other one decays.
std::vector<NamedParameter> parameters() {
  std::vector<NamedParameter> out;
  for (std::size_t t = 0; t < kSizes.size(); ++t) {
    const std::int64_t n = kSizes[t];
    std::vector<float> v(static_cast<std::size_t>(n)), g(v.size());
    for (std::size_t i = 0; i < v.size(); ++i) {
      v[i] = 0.01f * static_cast<float>((i * 7 + t) % 23) - 0.1f;
      g[i] = 0.3f * static_cast<float>((i * 5 + 3 * t) % 17) - 2.0f;
    }
    Tensor p = Tensor::from_data(v, {n});
    p.set_requires_grad(true);
    p.set_grad(Tensor::from_data(g, {n}));
    std::string name = "p";  // ("p" + std::to_string(t) trips GCC 12's -Wrestrict)
    name += std::to_string(t);
    out.push_back({name, p, t % 2 == 0});
  }
  return out;
}

std::vector<std::vector<double>> values_of(const std::vector<NamedParameter>& params) {
  std::vector<std::vector<double>> out;
  for (const NamedParameter& p : params) {
    out.push_back(p.tensor.to_vector());
    out.push_back(p.tensor.grad().to_vector());
  }
  return out;
}

// Two steps of the optimizer that make(params) builds: over all parameters at once
// (together) or with one optimizer per parameter (composed).
template <class Make>
std::vector<std::vector<double>> two_steps(bool together, Make make) {
  std::vector<NamedParameter> params = parameters();
  std::vector<std::unique_ptr<Optimizer>> optimizers;
  if (together) {
    optimizers.push_back(make(params));
  } else {
    for (const NamedParameter& p : params) optimizers.push_back(make({p}));
  }
  for (double lr : {0.01, 0.02})
    for (auto& o : optimizers) o->step(lr);
  return values_of(params);
}

// Where two runs first differ, for the failure message.
std::string first_difference(const std::vector<std::vector<double>>& a,
                             const std::vector<std::vector<double>>& b) {
  for (std::size_t t = 0; t < a.size() && t < b.size(); ++t)
    for (std::size_t i = 0; i < a[t].size() && i < b[t].size(); ++i)
      if (a[t][i] != b[t][i])
        return "vector " + std::to_string(t) + " (tensor " + std::to_string(t / 2) +
               (t % 2 ? ", gradient" : ", value") + ") element " + std::to_string(i) + ": " +
               std::to_string(a[t][i]) + " vs " + std::to_string(b[t][i]);
  return a.size() == b.size() ? "none" : "sizes";
}

template <class Make>
void check_one_region(Make make) {
  const int threads = num_threads();
  std::vector<std::vector<std::vector<double>>> runs;
  for (int t : {1, 2}) {
    set_num_threads(t);
    runs.push_back(two_steps(true, make));
    runs.push_back(two_steps(false, make));
  }
  set_num_threads(threads);
  INFO("1 thread, together vs composed: " << first_difference(runs[0], runs[1]));
  INFO("2 threads, together vs composed: " << first_difference(runs[2], runs[3]));
  INFO("together, 1 vs 2 threads: " << first_difference(runs[0], runs[2]));
  CHECK(runs[0] == runs[1]);
  CHECK(runs[2] == runs[3]);
  CHECK(runs[0] == runs[2]);
}

}  // namespace

TEST_CASE("AdamW over all parameters in one region equals one call per parameter",
          "[optim][one_region]") {
  check_one_region([](std::vector<NamedParameter> p) {
    return std::make_unique<AdamW>(std::move(p), AdamOptions{.beta2 = 0.99, .weight_decay = 0.1});
  });
}

TEST_CASE("Adam with L2 decay over all parameters in one region equals one call per parameter",
          "[optim][one_region]") {
  check_one_region([](std::vector<NamedParameter> p) {
    return std::make_unique<Adam>(std::move(p), AdamOptions{.weight_decay = 0.05});
  });
}

TEST_CASE("SGD with momentum over all parameters in one region equals one call per parameter",
          "[optim][one_region]") {
  check_one_region([](std::vector<NamedParameter> p) {
    return std::make_unique<Sgd>(
        std::move(p), SgdOptions{.momentum = 0.9, .nesterov = true, .weight_decay = 0.01});
  });
}

TEST_CASE("clip_grad_norm over all gradients in one region: the norm of the parts, scaled alike",
          "[optim][one_region][clip]") {
  const int threads = num_threads();
  std::vector<std::vector<std::vector<double>>> scaled;
  std::vector<double> norms;
  for (int t : {1, 2}) {
    set_num_threads(t);
    std::vector<NamedParameter> params = parameters();
    // The composed form: each gradient's own squared norm (one call per tensor, with a
    // bound no norm reaches, so nothing is scaled), summed in order.
    double squares = 0.0;
    for (const NamedParameter& p : params) {
      const double part = clip_grad_norm({p}, 1e30);
      squares += part * part;
    }
    const std::vector<std::vector<double>> before = values_of(params);
    const double norm = clip_grad_norm(params, 1.0);
    REQUIRE(norm == Approx(std::sqrt(squares)).epsilon(1e-13));
    const auto coef = static_cast<float>(1.0 / (norm + 1e-6));
    const std::vector<std::vector<double>> after = values_of(params);
    for (std::size_t t2 = 1; t2 < after.size(); t2 += 2)  // the gradients
      for (std::size_t i = 0; i < after[t2].size(); ++i)
        REQUIRE(after[t2][i] == static_cast<double>(static_cast<float>(before[t2][i]) * coef));
    norms.push_back(norm);
    scaled.push_back(after);
  }
  set_num_threads(threads);
  REQUIRE(norms[0] == norms[1]);
  REQUIRE(scaled[0] == scaled[1]);
}
