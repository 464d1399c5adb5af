// Ops end to end on the GPU: a small causal attention block with every op
// family (embedding, norms, matmul on transposed views, masked softmax, gelu,
// dropout, concat, max, cross-entropy) run forward and backward on both
// devices from the same f32 parameters; loss and every gradient must agree.
#include <catch2/catch.hpp>

#include <cmath>
#include <map>
#include <string>

#include "autograd/ops/dropout.h"
#include "autograd/ops/elementwise.h"
#include "autograd/ops/embedding.h"
#include "autograd/ops/loss.h"
#include "autograd/ops/mask.h"
#include "autograd/ops/matmul.h"
#include "autograd/ops/norm.h"
#include "autograd/ops/reduce.h"
#include "autograd/ops/shape.h"
#include "autograd/ops/softmax.h"
#include "autograd/tape.h"
#include "cuda_test_helpers.h"

using namespace relpos;
using namespace relpos::cuda_testing;

namespace {

constexpr std::int64_t kBatch = 2, kLen = 16, kVocab = 40, kDim = 32;

using Params = std::map<std::string, Tensor>;

Params make_params(Rng& rng) {
  Params p;
  p["table"] = randn({kVocab, kDim}, rng, DType::f32, 0.5);
  p["gamma"] = rand_uniform({kDim}, rng, 0.5, 1.5);
  p["beta"] = randn({kDim}, rng, DType::f32, 0.1);
  p["wq"] = randn({kDim, kDim}, rng, DType::f32, 0.2);
  p["wk"] = randn({kDim, kDim}, rng, DType::f32, 0.2);
  p["rms_gamma"] = rand_uniform({2 * kDim}, rng, 0.5, 1.5);
  p["out"] = randn({2 * kDim, kVocab}, rng, DType::f32, 0.2);
  return p;
}

Params on_device(const Params& host, Device device) {
  Params p;
  for (const auto& [name, t] : host) {
    p[name] = t.to(device).detach();  // a fresh leaf, also on the CPU
    p[name].set_requires_grad(true);
  }
  return p;
}

// Forward and backward; returns the loss.
Tensor run_block(Params& p, const Tensor& tokens, const Tensor& targets, Device device) {
  Tensor x = embedding(p["table"], tokens);                            // (B, L, D)
  Tensor h = layer_norm(x, p["gamma"], p["beta"]);                     // (B, L, D)
  Tensor q = matmul(h, p["wq"]);                                       // (B, L, D)
  Tensor k = matmul(h, p["wk"]);                                       // (B, L, D)
  Tensor scores = matmul(q, transpose(k, -1, -2)) * (1.0 / std::sqrt(double(kDim)));  // (B, L, L)
  Tensor masked = masked_fill(scores, causal_mask(kLen, kLen, device), -INFINITY);
  Tensor attn = softmax(masked);                                       // (B, L, L)
  Tensor ctx = matmul(attn, h);                                        // (B, L, D)
  Tensor mixed = concat({gelu(ctx), dropout(tanh(ctx), 0.25, 7, 0, true)}, -1);  // (B, L, 2D)
  Tensor logits = matmul(rms_norm(mixed, p["rms_gamma"]), p["out"]);  // (B, L, V)
  Tensor peak = mean(max(log_softmax(logits), -1));                   // ()
  Tensor loss = cross_entropy(logits, targets) - peak * 0.1;
  backward(loss);
  return loss;
}

double max_abs(const Tensor& t) {
  double m = 0.0;
  for (double v : t.to_vector()) m = std::max(m, std::abs(v));
  return m;
}

}  // namespace

TEST_CASE("a causal attention block gives the same loss and gradients on GPU and CPU",
          "[cuda]") {
  Rng rng(71);
  const Params init = make_params(rng);
  Tensor tokens = integer_pair({kBatch, kLen}, rng, 0, kVocab - 1, DType::i64).host;
  std::vector<double> t =
      integer_pair({kBatch, kLen}, rng, 0, kVocab - 1, DType::f64).host.to_vector();
  t[3] = t[20] = -100;  // ignored positions
  Tensor targets = Tensor::from_data(t, {kBatch, kLen}, DType::i64);

  Params cpu_params = on_device(init, Device::cpu);
  Params gpu_params = on_device(init, Device::cuda);
  Tensor cpu_loss = run_block(cpu_params, tokens, targets, Device::cpu);
  Tensor gpu_loss = run_block(gpu_params, tokens.to(Device::cuda), targets.to(Device::cuda),
                              Device::cuda);
  REQUIRE(gpu_loss.device() == Device::cuda);
  // A chain of f32 kernels: each within 1e-5, together within 1e-4.
  require_match(gpu_loss, cpu_loss, 1.0, 1e-4);
  for (const auto& [name, param] : cpu_params) {
    INFO("gradient of " << name);
    const Tensor expected = param.grad();
    REQUIRE(expected.defined());
    REQUIRE(gpu_params[name].grad().device() == Device::cuda);
    // Relative to the tensor's largest gradient entry.
    require_match(gpu_params[name].grad(), expected, max_abs(expected), 1e-4);
  }
}
