// bench_overhead: the fixed cost of one recorded op on a tiny tensor (shape {4}).
// A chain of alternating add/mul ops y = (y + c) * c ... is recorded, then
// backward(y, 1); times are divided by the number of ops. The same chain under
// NoGradGuard gives the cost of the op without autograd. Two operand kinds:
// `c` a constant, and `c` a leaf that requires grad (adds leaf accumulation).
// Times are process CPU time (the work is single-threaded: tensors this small
// never start a parallel region), so that a busy shared machine inflates them less.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <vector>

#include "autograd/ops/elementwise.h"
#include "autograd/tape.h"
#include "bench/parse_arguments.h"
#include "bench/timing.h"

namespace {

using relpos::Tensor;

Tensor chain(const Tensor& x, const Tensor& c, int ops) {
  Tensor y = x;
  for (int i = 0; i < ops; ++i) y = i % 2 == 0 ? relpos::add(y, c) : relpos::mul(y, c);
  return y;
}

struct ChainTimes {
  double forward_us, backward_us, no_grad_us;  // per op
};

ChainTimes time_chain(bool operand_requires_grad, int ops, int repetitions) {
  Tensor x = Tensor::full({4}, 0.5).set_requires_grad(true);
  Tensor c = Tensor::full({4}, 1.0).set_requires_grad(operand_requires_grad);
  Tensor seed = Tensor::ones({4});
  std::vector<double> forward, backward, no_grad;
  for (int r = 0; r < repetitions; ++r) {
    x.zero_grad();
    c.zero_grad();
    double t0 = relpos::bench::process_cpu_seconds();
    Tensor y = chain(x, c, ops);
    double t1 = relpos::bench::process_cpu_seconds();
    relpos::backward(y, seed);
    double t2 = relpos::bench::process_cpu_seconds();
    forward.push_back(t1 - t0);
    backward.push_back(t2 - t1);
    {
      relpos::NoGradGuard guard;
      t0 = relpos::bench::process_cpu_seconds();
      Tensor z = chain(x, c, ops);
      no_grad.push_back(relpos::bench::process_cpu_seconds() - t0);
    }
  }
  const double to_us = 1e6 / ops;
  return {relpos::bench::median(forward) * to_us, relpos::bench::median(backward) * to_us,
          relpos::bench::median(no_grad) * to_us};
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Per-op autograd overhead on {4}-element tensors"};
  int ops = 1000, repetitions = 200;
  app.add_option("--ops", ops, "ops in the chain")->check(CLI::PositiveNumber);
  app.add_option("--reps", repetitions, "chains timed (median reported)")
      ->check(CLI::PositiveNumber);
  if (const auto code = relpos::bench::parse_arguments(app, argc, argv)) return *code;

  std::printf(
      "Per-op overhead, chain of %d add/mul ops on f32[4], median of %d chains (CPU µs/op)\n\n",
      ops, repetitions);
  std::printf("| second operand | recorded fwd | its backward | fwd+bwd | no-grad fwd |\n");
  std::printf("|---|---:|---:|---:|---:|\n");
  for (bool requires_grad : {false, true}) {
    const ChainTimes t = time_chain(requires_grad, ops, repetitions);
    std::printf("| %s | %.2f | %.2f | %.2f | %.2f |\n",
                requires_grad ? "leaf, requires grad" : "constant", t.forward_us, t.backward_us,
                t.forward_us + t.backward_us, t.no_grad_us);
  }
  return 0;
}
