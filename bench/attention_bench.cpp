// One attention layer, forward + backward, for every position scheme against no
// positions, in the same run: B=8, H=4, d_model=256 (head_dim 64), causal.
// Usage: bench_attention [L ...] [--reps N] [--path flash|fused|composed] [--schemes t5,shaw]
//        [--cpu-time]
#include <fmt/format.h>

#include <cstring>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "autograd/allocator.h"
#include "autograd/blas_kernel.h"
#include "autograd/tape.h"
#include "bench/timing.h"
#include "layers/attention.h"

using namespace relpos;

namespace {

struct Layer {
  std::unique_ptr<PositionScheme> scheme;
  std::unique_ptr<MultiHeadAttention> attention;
};

Layer make_layer(const std::string& name, AttentionPath path) {
  Rng rng(7);
  const ModelDims dims{256, 4, 1, true};
  PositionConfig config;
  config.scheme = name;
  config.set("max_relative", std::int64_t{16});
  Layer layer;
  layer.scheme = make_position_scheme(config, dims, rng);
  layer.attention = std::make_unique<MultiHeadAttention>(dims, 0, *layer.scheme, path, rng);
  return layer;
}

// Wall seconds, or with `cpu_time` process CPU seconds: on a shared machine a
// single-threaded run's CPU time leaves out the time other processes held the core.
double step_seconds(const Layer& layer, const Tensor& x, const Tensor& grad, bool cpu_time) {
  const double start = cpu_time ? bench::process_cpu_seconds() : bench::now_seconds();
  Tensor out = layer.attention->forward(x, 0);
  backward(out, grad);
  return (cpu_time ? bench::process_cpu_seconds() : bench::now_seconds()) - start;
}

}  // namespace

int main(int argc, char** argv) {
  relpos::use_best_blas_kernel(argv);
  std::vector<std::int64_t> lengths;
  int reps = 5;
  AttentionPath path = AttentionPath::flash;
  std::vector<std::string> schemes = {"none", "t5", "alibi", "rope", "shaw", "xl"};
  bool cpu_time = false;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--reps") == 0 && i + 1 < argc) {
      reps = std::atoi(argv[++i]);
    } else if (std::strcmp(argv[i], "--path") == 0 && i + 1 < argc) {
      const std::string name = argv[++i];
      path = name == "composed" ? AttentionPath::composed
             : name == "fused"  ? AttentionPath::fused
                                : AttentionPath::flash;
    } else if (std::strcmp(argv[i], "--cpu-time") == 0) {
      cpu_time = true;
    } else if (std::strcmp(argv[i], "--schemes") == 0 && i + 1 < argc) {
      schemes = {"none"};  // the baseline of the ratios
      std::stringstream list(argv[++i]);
      for (std::string s; std::getline(list, s, ',');)
        if (s != "none") schemes.push_back(s);
    } else {
      lengths.push_back(std::atoll(argv[i]));
    }
  }
  if (lengths.empty()) lengths = {128, 512, 2048};
  fmt::print("one attention layer fwd+bwd, B=8 H=4 d=256, causal, {} path, median of {}\n\n",
             name_of(path), reps);
  fmt::print("| scheme | L | ms | vs none | peak tensor MiB |\n|---|---:|---:|---:|---:|\n");
  for (std::int64_t len : lengths) {
    Rng rng(3);
    Tensor x = randn({8, len, 256}, rng);
    x.set_requires_grad(true);
    const Tensor grad = randn({8, len, 256}, rng);
    std::map<std::string, Layer> layers;
    for (const auto& s : schemes) layers.emplace(s, make_layer(s, path));
    std::map<std::string, std::vector<double>> times;
    std::map<std::string, std::size_t> peaks;
    for (const auto& s : schemes) step_seconds(layers.at(s), x, grad, cpu_time);  // warm-up
    // Rounds alternate the schemes so that machine noise spreads evenly.
    for (int r = 0; r < reps; ++r)
      for (const auto& s : schemes) {
        allocator_for(Device::cpu).reset_peak();
        const std::size_t base = allocator_for(Device::cpu).stats().current_bytes;
        times[s].push_back(step_seconds(layers.at(s), x, grad, cpu_time));
        peaks[s] = allocator_for(Device::cpu).stats().peak_bytes - base;
        x.zero_grad();
      }
    const double none = bench::median(times["none"]);
    for (const auto& s : schemes) {
      const double t = bench::median(times[s]);
      fmt::print("| {} | {} | {:.1f} | {:.2f}x | {:.0f} |\n", s, len, t * 1e3, t / none,
                 static_cast<double>(peaks[s]) / 1048576.0);
    }
  }
  return 0;
}
