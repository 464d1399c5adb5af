// bench_mlp: one training step of a two-layer MLP through the engine:
//   y = gelu_tanh(x·W1 + b1)·W2 + b2,  loss = mean((y - t)²),
// backward, then plain SGD (p -= lr·grad) under NoGradGuard. The same model in
// PyTorch is bench/mlp_torch.py; bench/run_engine_bench.sh runs both.
// Prints the median steps/s of --reps timed runs of --steps steps each.
#include <CLI/CLI.hpp>
#include <cmath>
#include <cstdio>
#include <vector>

#include "autograd/blas_kernel.h"
#include "autograd/ops/elementwise.h"
#include "autograd/ops/matmul.h"
#include "autograd/ops/reduce.h"
#include "autograd/random.h"
#include "autograd/tape.h"
#include "autograd/threads.h"
#include "bench/parse_arguments.h"
#include "bench/timing.h"

namespace {

using relpos::Tensor;

struct Mlp {
  Tensor w1, b1, w2, b2;  // (D, H), (H), (H, D), (D)

  Mlp(std::int64_t d, std::int64_t h, relpos::Rng& rng)
      : w1(relpos::randn({d, h}, rng, relpos::DType::f32, 1.0 / std::sqrt(double(d)))),
        b1(Tensor::zeros({h})),
        w2(relpos::randn({h, d}, rng, relpos::DType::f32, 1.0 / std::sqrt(double(h)))),
        b2(Tensor::zeros({d})) {
    for (Tensor* p : parameters()) p->set_requires_grad(true);
  }

  std::vector<Tensor*> parameters() { return {&w1, &b1, &w2, &b2}; }
};

// One SGD step; returns the loss.
double train_step(Mlp& mlp, const Tensor& x, const Tensor& target, double lr) {
  for (Tensor* p : mlp.parameters()) p->zero_grad();
  Tensor h = relpos::gelu(relpos::add(relpos::matmul(x, mlp.w1), mlp.b1));  // (B, H)
  Tensor y = relpos::add(relpos::matmul(h, mlp.w2), mlp.b2);                // (B, D)
  Tensor diff = relpos::sub(y, target);
  Tensor loss = relpos::mean(relpos::mul(diff, diff));  // scalar
  relpos::backward(loss);
  relpos::NoGradGuard no_grad;
  for (Tensor* p : mlp.parameters()) p->copy_(relpos::sub(*p, relpos::mul_scalar(p->grad(), lr)));
  return loss.item();
}

}  // namespace

int main(int argc, char** argv) {
  relpos::use_best_blas_kernel(argv);
  CLI::App app{"Two-layer MLP training step (relpos engine)"};
  std::int64_t batch = 256, dim = 512, hidden = 1024;
  int warmup = 5, steps = 20, repetitions = 5;
  app.add_option("--batch", batch)->check(CLI::PositiveNumber);
  app.add_option("--dim", dim, "input and output width")->check(CLI::PositiveNumber);
  app.add_option("--hidden", hidden)->check(CLI::PositiveNumber);
  app.add_option("--warmup", warmup, "untimed steps first")->check(CLI::NonNegativeNumber);
  app.add_option("--steps", steps, "steps per timed run")->check(CLI::PositiveNumber);
  app.add_option("--reps", repetitions, "timed runs (median reported)")->check(CLI::PositiveNumber);
  if (const auto code = relpos::bench::parse_arguments(app, argc, argv)) return *code;

  relpos::Rng rng(7);
  Mlp mlp(dim, hidden, rng);
  const Tensor x = relpos::randn({batch, dim}, rng);       // (B, D)
  const Tensor target = relpos::randn({batch, dim}, rng);  // (B, D)
  const double lr = 1e-3;

  double loss = 0.0;
  for (int i = 0; i < warmup; ++i) loss = train_step(mlp, x, target, lr);
  std::vector<double> steps_per_s;
  for (int r = 0; r < repetitions; ++r) {
    const double start = relpos::bench::now_seconds();
    for (int i = 0; i < steps; ++i) loss = train_step(mlp, x, target, lr);
    steps_per_s.push_back(steps / (relpos::bench::now_seconds() - start));
  }
  std::printf("relpos MLP step: batch %lld, %lld->%lld->%lld, %d threads, final loss %.4f\n",
              static_cast<long long>(batch), static_cast<long long>(dim),
              static_cast<long long>(hidden), static_cast<long long>(dim), relpos::num_threads(),
              loss);
  std::printf("steps/s %.3f\n", relpos::bench::median(steps_per_s));
  return 0;
}
