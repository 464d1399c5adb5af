// bench_residual_norm: a pre-norm block's residual add and LayerNorm, composed (add, then
// layer_norm: the tape accumulates the sum's two gradients with an add of its own) against
// the fused op (add_layer_norm: one pass forward, one pass backward), on the benchmark
// model's shape (8192 tokens x d_model 256), f32. Both outputs are read, as in a block: the
// graph's root is sum + normed, whose backward passes the seed to both. The two variants
// alternate repetition by repetition; times are process CPU seconds (milliseconds per
// call), median and fastest of the repetitions. Set OMP_NUM_THREADS to choose threads.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <vector>

#include "autograd/ops/elementwise.h"
#include "autograd/ops/norm.h"
#include "autograd/random.h"
#include "autograd/tape.h"
#include "bench/parse_arguments.h"
#include "bench/timing.h"

namespace {

using relpos::Tensor;

struct Times {
  std::vector<double> forward, backward;  // seconds per repetition
};

struct Leaves {
  Tensor x, delta, gamma, beta;
};

// One forward and backward of the variant; appends its forward and backward CPU seconds.
void run_once(const Leaves& in, const Tensor& seed, bool fused, Times& times) {
  for (const Tensor* t : {&in.x, &in.delta, &in.gamma, &in.beta}) t->zero_grad();
  const double t0 = relpos::bench::process_cpu_seconds();
  Tensor h, y;
  if (fused) {
    relpos::ResidualNorm r = relpos::add_layer_norm(in.x, in.delta, in.gamma, in.beta);
    h = r.sum;
    y = r.normed;
  } else {
    h = relpos::add(in.x, in.delta);
    y = relpos::layer_norm(h, in.gamma, in.beta);
  }
  const double t1 = relpos::bench::process_cpu_seconds();
  const Tensor root = relpos::add(h, y);  // (rows, n): both outputs read
  const double t2 = relpos::bench::process_cpu_seconds();
  relpos::backward(root, seed);
  const double t3 = relpos::bench::process_cpu_seconds();
  times.forward.push_back(t1 - t0);
  times.backward.push_back(t3 - t2);
}

double fastest(const std::vector<double>& v) {
  double best = v.front();
  for (double x : v) best = x < best ? x : best;
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Residual add + LayerNorm: composed ops against the fused op"};
  std::int64_t rows = 8192, n = 256;
  int repetitions = 30;
  app.add_option("--rows", rows, "rows (tokens)")->check(CLI::PositiveNumber);
  app.add_option("--n", n, "row length (d_model)")->check(CLI::PositiveNumber);
  app.add_option("--reps", repetitions, "repetitions of each variant")->check(CLI::PositiveNumber);
  if (const auto code = relpos::bench::parse_arguments(app, argc, argv)) return *code;

  relpos::Rng rng(5);
  auto leaf = [&](const relpos::Shape& shape) {
    return relpos::randn(shape, rng, relpos::DType::f32).set_requires_grad(true);
  };
  const Leaves in{leaf({rows, n}), leaf({rows, n}), leaf({n}), leaf({n})};
  const Tensor seed = relpos::randn({rows, n}, rng, relpos::DType::f32);
  Times composed, fused;
  run_once(in, seed, false, composed);  // warm-up: the allocator's blocks, the thread pool
  run_once(in, seed, true, fused);
  composed = {};
  fused = {};
  for (int r = 0; r < repetitions; ++r) {
    run_once(in, seed, false, composed);
    run_once(in, seed, true, fused);
  }
  using relpos::bench::median;
  std::printf(
      "Residual add + LayerNorm, (%lld, %lld) f32, %d alternating repetitions "
      "(process CPU ms per call: median / fastest)\n\n",
      static_cast<long long>(rows), static_cast<long long>(n), repetitions);
  std::printf("| variant | forward | backward | forward + backward |\n|---|---:|---:|---:|\n");
  for (const auto& [name, t] : {std::pair<const char*, const Times&>{"add, layer_norm", composed},
                                std::pair<const char*, const Times&>{"add_layer_norm", fused}}) {
    std::vector<double> total;
    for (std::size_t i = 0; i < t.forward.size(); ++i)
      total.push_back(t.forward[i] + t.backward[i]);
    std::printf("| %s | %.2f / %.2f | %.2f / %.2f | %.2f / %.2f |\n", name, 1e3 * median(t.forward),
                1e3 * fastest(t.forward), 1e3 * median(t.backward), 1e3 * fastest(t.backward),
                1e3 * median(total), 1e3 * fastest(total));
  }
  std::vector<double> ratio;
  for (std::size_t i = 0; i < fused.forward.size(); ++i)
    ratio.push_back((fused.forward[i] + fused.backward[i]) /
                    (composed.forward[i] + composed.backward[i]));
  std::printf("\nfused / composed, forward + backward, median of the per-repetition ratios: %.2f\n",
              median(ratio));
  return 0;
}
