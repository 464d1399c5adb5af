// The fused optimizer kernels against the CPU: Adam/AdamW (one multi-tensor
// launch per step) and global-norm clipping reduced and applied on the GPU.
#include <fmt/format.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "autograd/error.h"
#include "cuda_test_helpers.h"
#include "optim/adam.h"
#include "optim/clip.h"
#include "optim/sgd.h"

using namespace relpos;
using namespace relpos::cuda_testing;

namespace {

// Odd sizes: one element, around a warp and a block, exactly one multi-tensor
// chunk (16384 elements), and tensors spanning several chunks with the last one
// partly filled.
const std::vector<Shape> kShapes = {{1}, {7}, {33, 17}, {257}, {16384}, {3, 16385}, {40001}};

// The same parameters on the host and on the device.
struct Twin {
  std::vector<NamedParameter> host, device;
};

Twin make_twin(DType dtype, Rng& rng) {
  Twin twin;
  for (std::size_t i = 0; i < kShapes.size(); ++i) {
    const std::string name = fmt::format("p{}", i);
    const bool decay = i % 3 != 1;  // some parameters without weight decay
    Tensor host = randn(kShapes[i], rng, dtype);
    Tensor device = host.to(Device::cuda);
    host.set_requires_grad(true);
    device.set_requires_grad(true);
    twin.host.push_back({name, host, decay});
    twin.device.push_back({name, device, decay});
  }
  return twin;
}

// Fresh random gradients on both sides, except for parameter `skipped` (none if
// out of range), which gets none: its step count must fall behind.
void set_grads(const Twin& twin, Rng& rng, double scale, std::size_t skipped) {
  for (std::size_t i = 0; i < twin.host.size(); ++i) {
    if (i == skipped) {
      twin.host[i].tensor.zero_grad();
      twin.device[i].tensor.zero_grad();
      continue;
    }
    const Tensor grad = randn(twin.host[i].tensor.shape(), rng, twin.host[i].tensor.dtype(), scale);
    twin.host[i].tensor.set_grad(grad);
    twin.device[i].tensor.set_grad(grad.to(Device::cuda));
  }
}

template <class Opt>
void require_same_trajectory(DType dtype) {
  Rng rng(11);
  const Twin twin = make_twin(dtype, rng);
  const AdamOptions options{.beta1 = 0.9, .beta2 = 0.95, .eps = 1e-8, .weight_decay = 0.1};
  Opt cpu_optimizer(twin.host, options);
  Opt gpu_optimizer(twin.device, options);
  for (int step = 0; step < 6; ++step) {
    INFO("step " << step);
    // Gradients of very different sizes, so that eps and the bias corrections matter.
    set_grads(twin, rng, std::pow(10.0, -step), step == 2 ? 3 : kShapes.size());
    const double lr = 1e-2 / (step + 1);
    cpu_optimizer.step(lr);
    gpu_optimizer.step(lr);
    for (std::size_t i = 0; i < kShapes.size(); ++i) {
      INFO("parameter " << twin.host[i].name);
      // The kernel's arithmetic is the CPU's, correctly rounded op by op
      // (explicit FMAs on both sides), so the bits must agree.
      require_identical(twin.device[i].tensor, twin.host[i].tensor);
    }
    const auto cpu_state = cpu_optimizer.state(), gpu_state = gpu_optimizer.state();
    REQUIRE(cpu_state.size() == gpu_state.size());
    for (const auto& [key, expected] : cpu_state) {
      INFO("state " << key);
      require_identical(gpu_state.at(key), expected);
    }
  }
  // Moments live with the parameters; step counters on the host.
  REQUIRE(gpu_optimizer.state().at("p0/exp_avg").device() == Device::cuda);
  REQUIRE(gpu_optimizer.state().at("p0/exp_avg_sq").device() == Device::cuda);
  REQUIRE(gpu_optimizer.state().at("p0/step").device() == Device::cpu);
  REQUIRE(gpu_optimizer.state().at("p3/step").item() == 5.0);  // skipped once
}

// Norm and clipped gradients of both sides; `max_norm` chosen by the caller.
void require_same_clipping(const Twin& twin, double max_norm, bool expect_scaled) {
  // Each side's gradients before this call: after an earlier clipping they differ by the
  // few ulps of the two coefficients, so each side is compared with its own.
  const auto grads_of = [](const std::vector<NamedParameter>& params) {
    std::vector<Tensor> grads;
    for (const NamedParameter& p : params)
      grads.push_back(p.tensor.grad().defined() ? p.tensor.grad().clone() : Tensor());
    return grads;
  };
  const std::vector<Tensor> host_before = grads_of(twin.host),
                            device_before = grads_of(twin.device);
  const double cpu_norm = clip_grad_norm(twin.host, max_norm);
  const double gpu_norm = clip_grad_norm(twin.device, max_norm);
  // Both sum squares in double, in different fixed orders.
  REQUIRE(std::abs(gpu_norm - cpu_norm) <= 1e-12 * cpu_norm);
  REQUIRE((cpu_norm > max_norm) == expect_scaled);
  for (std::size_t i = 0; i < twin.host.size(); ++i) {
    INFO("parameter " << twin.host[i].name);
    const Tensor cpu_grad = twin.host[i].tensor.grad(), gpu_grad = twin.device[i].tensor.grad();
    REQUIRE(cpu_grad.defined() == gpu_grad.defined());
    if (!cpu_grad.defined()) continue;
    if (expect_scaled) {
      // The coefficient comes from the two norms: equal to a few ulps of f64.
      require_match(gpu_grad, cpu_grad, 0.0, 1e-6);
    } else {
      require_identical(gpu_grad, device_before[i]);
      require_identical(cpu_grad, host_before[i]);
    }
  }
}

}  // namespace

TEST_CASE("fused AdamW and Adam on the GPU give the CPU's bits, step after step", "[cuda][optim]") {
  for (DType dtype : {DType::f32, DType::f64}) {
    INFO("dtype " << name_of(dtype));
    require_same_trajectory<AdamW>(dtype);
    require_same_trajectory<Adam>(dtype);  // L2 weight decay instead of decoupled
  }
}

TEST_CASE("optimizers on GPU parameters: one device, SGD refused", "[cuda][optim]") {
  Tensor host = Tensor::zeros({3});
  Tensor device = Tensor::zeros({3}, DType::f32, Device::cuda);
  host.set_requires_grad(true);
  device.set_requires_grad(true);
  REQUIRE_THROWS_WITH(AdamW({{"a", host}, {"b", device}}, AdamOptions{}),
                      Catch::Contains("'b' is on cuda but the first one is on cpu"));
  REQUIRE_THROWS_WITH(Sgd({{"b", device}}, SgdOptions{}),
                      "optimizer 'sgd': the sgd_update kernel is not supported on cuda");
}

TEST_CASE("global-norm clipping on the GPU matches the CPU", "[cuda][optim][clip]") {
  for (DType dtype : {DType::f32, DType::f64}) {
    INFO("dtype " << name_of(dtype));
    Rng rng(5);
    const Twin twin = make_twin(dtype, rng);
    set_grads(twin, rng, 0.3, 2);  // p2 has no gradient and is skipped
    // The norm is about 0.3 * sqrt(105805) = 98: clipped to 1, then left alone under 1e9.
    require_same_clipping(twin, 1.0, true);
    require_same_clipping(twin, 1e9, false);
  }
}

TEST_CASE("GPU clipping is deterministic and leaves non-finite gradients alone",
          "[cuda][optim][clip]") {
  Rng rng(9);
  const Twin twin = make_twin(DType::f32, rng);
  set_grads(twin, rng, 1.0, kShapes.size());
  const double first = clip_grad_norm(twin.device, 1e9);
  const double second = clip_grad_norm(twin.device, 1e9);
  REQUIRE(first == second);  // same bits, run to run

  Tensor poisoned = twin.host[5].tensor.grad().clone();
  poisoned.data<float>()[20000] = std::numeric_limits<float>::quiet_NaN();
  twin.device[5].tensor.set_grad(poisoned.to(Device::cuda));
  const Tensor untouched = twin.device[0].tensor.grad().clone();
  REQUIRE(std::isnan(clip_grad_norm(twin.device, 1e-3)));
  require_identical(twin.device[0].tensor.grad(), untouched);

  poisoned.data<float>()[20000] = std::numeric_limits<float>::infinity();
  twin.device[5].tensor.set_grad(poisoned.to(Device::cuda));
  REQUIRE(std::isinf(clip_grad_norm(twin.device, 1e-3)));
  require_identical(twin.device[0].tensor.grad(), untouched);
}
