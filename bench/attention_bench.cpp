// One attention layer, forward + backward, for every position scheme against no
// positions, in the same run: B=8, H=4, d_model=256 (head_dim 64), causal.
// Usage: bench_attention [L ...] [--reps N] [--path flash|fused|composed] [--schemes t5,shaw]
//        (rope-<kind>, e.g. rope-yarn: RoPE with that rope_scaling, 4x from 64;
//        <scheme>@<W>, e.g. rope@128: with a causal sliding window of W, model.attention_window;
//        <scheme>+<kind>, e.g. none+log_length: with model.attention_temperature.kind=<kind>,
//        log_length's train_len 64) [--cpu-time] [--bf16]
// --bf16 times every scheme in fp32 and in bf16 (autograd/precision.h) in the same rounds,
// both the attention alone (scaled_attention on q, k, v of (8, 4, L, 64) with the
// scheme's rotation and terms) and the whole layer, and reports the minimum of the reps.
#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "autograd/allocator.h"
#include "autograd/blas_kernel.h"
#include "autograd/precision.h"
#include "autograd/tape.h"
#include "bench/timing.h"
#include "layers/attention.h"
#include "layers/scaled_attention.h"

using namespace relpos;

namespace {

constexpr const char* kUsage =
    "usage: bench_attention [L ...] [--reps N] [--path flash|fused|composed] "
    "[--schemes t5,shaw,...] [--cpu-time] [--bf16]\n";

struct Layer {
  std::unique_ptr<PositionScheme> scheme;
  std::unique_ptr<MultiHeadAttention> attention;
  std::int64_t window = 0;  // causal sliding window; 0: none
};

// `name` is a scheme, or rope-<kind>: RoPE with model.position.rope_scaling.kind=<kind>,
// extending 4x from original_len 64 (e.g. rope-yarn, rope-dynamic_ntk); a suffix @<W>
// adds a causal sliding window of W positions (e.g. rope@128), a suffix +<kind> an attention
// temperature (e.g. none+learned, none+log_length@128).
std::int64_t window_of(const std::string& name) {
  const auto at = name.find('@');
  return at == std::string::npos ? 0 : std::atoll(name.c_str() + at + 1);
}

Layer make_layer(const std::string& full_name, AttentionPath path) {
  Rng rng(7);
  const ModelDims dims{256, 4, 1, true};
  PositionConfig config;
  const auto at = full_name.find('@'), plus = full_name.find('+');
  const std::string name = full_name.substr(0, std::min(at, plus));
  AttentionTemperatureConfig temperature;
  if (plus != std::string::npos) {
    temperature.kind = full_name.substr(plus + 1, at == std::string::npos ? at : at - plus - 1);
    temperature.train_len = 64;
    validate_attention_temperature(temperature, dims.causal);
  }
  const auto dash = name.find('-');
  config.scheme = name.substr(0, dash);
  if (dash != std::string::npos) {
    config.set("rope_scaling.kind", name.substr(dash + 1));
    config.set("rope_scaling.factor", 4.0);
    config.set("rope_scaling.original_len", std::int64_t{64});
  }
  config.set("max_relative", std::int64_t{16});
  Layer layer;
  layer.scheme = make_position_scheme(config, dims, rng);
  layer.window = window_of(full_name);
  layer.attention = std::make_unique<MultiHeadAttention>(dims, 0, *layer.scheme, path, rng, nullptr,
                                                         0, layer.window, temperature);
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

double now(bool cpu_time) { return cpu_time ? bench::process_cpu_seconds() : bench::now_seconds(); }

// The attention alone: q, k, v (B, H, L, D) through the layer's scheme and path.
double attention_seconds(const Layer& layer, AttentionPath path, const std::vector<Tensor>& qkv,
                         const Tensor& grad, Precision precision, bool cpu_time) {
  const std::int64_t len = qkv[0].size(2);
  const double start = now(cpu_time);
  Tensor out;
  {
    PrecisionScope scope(precision);
    const PositionScheme& s = *layer.scheme;
    AttentionChunk band;
    band.window = layer.window;
    out = scaled_attention(s.rotate(qkv[0], 0), s.rotate(qkv[1], 0), qkv[2], s.terms(0, len, len),
                           true, path, band);
  }
  backward(out, grad);
  return now(cpu_time) - start;
}

double layer_seconds(const Layer& layer, const Tensor& x, const Tensor& grad, Precision precision,
                     bool cpu_time) {
  PrecisionScope scope(precision);
  return step_seconds(layer, x, grad, cpu_time);
}

// fp32 against bf16, each scheme's four timings taken in the same round.
void compare_bf16(const std::vector<std::int64_t>& lengths, const std::vector<std::string>& schemes,
                  AttentionPath path, int reps, bool cpu_time) {
  fmt::print(
      "one attention layer fwd+bwd, B=8 H=4 d=256 (head_dim 64), causal, {} path, minimum of "
      "{}\n\n",
      name_of(path), reps);
  fmt::print(
      "| scheme | L | attention fp32 ms | attention bf16 ms | speed-up | layer fp32 ms | "
      "layer bf16 ms | speed-up |\n|---|---:|---:|---:|---:|---:|---:|---:|\n");
  const Precision precisions[] = {Precision::fp32, Precision::bf16};
  for (std::int64_t len : lengths) {
    Rng rng(3);
    Tensor x = randn({8, len, 256}, rng);
    x.set_requires_grad(true);
    const Tensor grad = randn({8, len, 256}, rng);
    std::vector<Tensor> qkv;
    for (int i = 0; i < 3; ++i) {
      qkv.push_back(randn({8, 4, len, 64}, rng));
      qkv.back().set_requires_grad(true);
    }
    const Tensor head_grad = randn({8, 4, len, 64}, rng);
    std::map<std::string, Layer> layers;
    for (const auto& s : schemes) layers.emplace(s, make_layer(s, path));
    std::map<std::string, std::vector<double>> attention[2], layer[2];
    for (int round = -1; round < reps; ++round)  // round -1 warms up
      for (const auto& s : schemes)
        for (int p = 0; p < 2; ++p) {
          const double a =
              attention_seconds(layers.at(s), path, qkv, head_grad, precisions[p], cpu_time);
          const double l = layer_seconds(layers.at(s), x, grad, precisions[p], cpu_time);
          for (Tensor& t : qkv) t.zero_grad();
          x.zero_grad();
          if (round < 0) continue;
          attention[p][s].push_back(a);
          layer[p][s].push_back(l);
        }
    auto min_ms = [](const std::vector<double>& v) {
      return *std::min_element(v.begin(), v.end()) * 1e3;
    };
    for (const auto& s : schemes) {
      const double a32 = min_ms(attention[0][s]), a16 = min_ms(attention[1][s]);
      const double l32 = min_ms(layer[0][s]), l16 = min_ms(layer[1][s]);
      fmt::print("| {} | {} | {:.1f} | {:.1f} | {:.2f}x | {:.1f} | {:.1f} | {:.2f}x |\n", s, len,
                 a32, a16, a32 / a16, l32, l16, l32 / l16);
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  relpos::use_best_blas_kernel(argv);
  std::vector<std::int64_t> lengths;
  int reps = 5;
  AttentionPath path = AttentionPath::flash;
  std::vector<std::string> schemes = {"none", "t5", "alibi", "rope", "shaw", "xl"};
  bool cpu_time = false, bf16 = false;
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
    } else if (std::strcmp(argv[i], "--bf16") == 0) {
      bf16 = true;
    } else if (std::strcmp(argv[i], "--schemes") == 0 && i + 1 < argc) {
      schemes = {"none"};  // the baseline of the ratios
      std::stringstream list(argv[++i]);
      for (std::string s; std::getline(list, s, ',');)
        if (s != "none") schemes.push_back(s);
    } else if (std::strcmp(argv[i], "--help") == 0 || std::strcmp(argv[i], "-h") == 0) {
      fmt::print("{}", kUsage);
      return 0;
    } else {
      char* end = nullptr;
      const long long len = std::strtoll(argv[i], &end, 10);
      if (end == argv[i] || *end != '\0' || len < 1) {
        fmt::print(stderr, "bench_attention: '{}' is neither an option nor a length >= 1\n{}",
                   argv[i], kUsage);
        return 2;
      }
      lengths.push_back(len);
    }
  }
  if (lengths.empty()) lengths = {128, 512, 2048};
  if (bf16) {
    compare_bf16(lengths, schemes, path, reps, cpu_time);
    return 0;
  }
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
