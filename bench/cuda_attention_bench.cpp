// One attention layer forward + backward on the GPU for every position scheme:
// B=4, H=8 (B*H = 32), head_dim 64 (d_model 512), causal, fused path, f32.
// Its PyTorch peer is bench/cuda_attention_torch.py; bench/run_cuda_bench.sh runs both.
// Usage: bench_cuda_attention [L ...] [--reps N] [--tf32]
// Prints one JSON line per (scheme, L) on stdout, then a markdown table on stderr.
#include <fmt/format.h>

#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "autograd/allocator.h"
#include "autograd/cuda/cuda_backend.h"
#include "autograd/random.h"
#include "autograd/tape.h"
#include "bench/timing.h"
#include "layers/attention.h"
#include "train/device_placement.h"

using namespace relpos;

namespace {

constexpr std::int64_t kBatch = 4, kHeads = 8, kModel = 512;

struct Layer {
  std::unique_ptr<PositionScheme> scheme;
  std::unique_ptr<MultiHeadAttention> attention;
};

Layer make_layer(const std::string& name) {
  Rng rng(7);
  const ModelDims dims{kModel, kHeads, 1, true};
  PositionConfig config;
  config.scheme = name;
  config.set("max_relative", std::int64_t{16});
  Layer layer;
  layer.scheme = make_position_scheme(config, dims, rng);
  layer.attention =
      std::make_unique<MultiHeadAttention>(dims, 0, *layer.scheme, AttentionPath::fused, rng);
  move_parameters(layer.scheme->parameters(), Device::cuda);
  move_parameters(layer.attention->parameters(), Device::cuda);
  return layer;
}

// Seconds of one forward + backward, the queue drained before and after.
double step_seconds(const Layer& layer, const Tensor& x, const Tensor& grad) {
  cuda_backend().synchronize();
  const double start = bench::now_seconds();
  const Tensor out = layer.attention->forward(x, 0);  // (B, L, d)
  backward(out, grad);
  cuda_backend().synchronize();
  return bench::now_seconds() - start;
}

void zero_grads(const Layer& layer, const Tensor& x) {
  x.zero_grad();
  for (const NamedParameter& p : layer.scheme->parameters()) p.tensor.zero_grad();
  for (const NamedParameter& p : layer.attention->parameters()) p.tensor.zero_grad();
}

nlohmann::json measure(const std::string& scheme, std::int64_t len, int reps) {
  const Layer layer = make_layer(scheme);
  Rng rng(3);
  Tensor x = randn({kBatch, len, kModel}, rng).to(Device::cuda);
  x.set_requires_grad(true);
  const Tensor grad = randn({kBatch, len, kModel}, rng).to(Device::cuda);
  step_seconds(layer, x, grad);  // warm-up: fills the allocator's cache
  zero_grads(layer, x);
  Allocator& memory = allocator_for(Device::cuda);
  memory.reset_peak();
  const std::size_t base = memory.stats().current_bytes;
  std::vector<double> seconds;
  for (int r = 0; r < reps; ++r) {
    seconds.push_back(step_seconds(layer, x, grad));
    zero_grads(layer, x);
  }
  return {{"framework", "relpos"},
          {"scheme", scheme},
          {"len", len},
          {"ms", bench::median(seconds) * 1e3},
          {"peak_mib", static_cast<double>(memory.stats().peak_bytes - base) / 1048576.0}};
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::int64_t> lengths;
  int reps = 5;
  bool tf32 = false;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--reps") == 0 && i + 1 < argc) {
      reps = std::atoi(argv[++i]);
    } else if (std::strcmp(argv[i], "--tf32") == 0) {
      tf32 = true;
    } else {
      lengths.push_back(std::atoll(argv[i]));
    }
  }
  if (lengths.empty()) lengths = {512, 2048, 8192};
  try {
    cuda_backend().set_allow_tf32(tf32);  // the first use: throws without a usable device
  } catch (const std::exception& e) {
    fmt::print(stderr, "bench_cuda_attention: error: {}\n", e.what());
    return 1;
  }
  const std::vector<std::string> schemes = {"none", "t5", "alibi", "rope", "shaw", "xl"};
  fmt::print(stderr,
             "one attention layer fwd+bwd on the GPU, B={} H={} head_dim={}, causal, "
             "fused, f32{}, median of {}\n\n| scheme | L | ms | peak MiB |\n|---|---:|---:|---:|\n",
             kBatch, kHeads, kModel / kHeads, tf32 ? " (TF32 GEMMs)" : "", reps);
  for (std::int64_t len : lengths)
    for (const std::string& scheme : schemes) {
      nlohmann::json row;
      try {
        row = measure(scheme, len, reps);
        fmt::print(stderr, "| {} | {} | {:.2f} | {:.0f} |\n", scheme, len, row["ms"].get<double>(),
                   row["peak_mib"].get<double>());
      } catch (const std::exception& e) {  // e.g. out of memory at L = 8192
        Tape::current().clear();           // drop what the failed step recorded
        row = {{"framework", "relpos"}, {"scheme", scheme}, {"len", len}, {"error", e.what()}};
        fmt::print(stderr, "| {} | {} | failed: {} | |\n", scheme, len, e.what());
      }
      fmt::print("{}\n", row.dump());
      std::fflush(stdout);
      cuda_backend().release_cached_memory();
    }
  return 0;
}
