// bench_recurrence: the cost of segment memory (train.mem_len) in a training step. For
// each memory length (0, L, 2L, 4L by default) it times whole steps (stream batch,
// forward with memory, loss, backward, clip, AdamW) of the bench_train model with XL
// positions, and measures the peak tensor bytes of a step through the allocator.
// Memory lengths alternate step by step, so a load change on the shared machine hits
// all of them alike. Prints one JSON line per memory length.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "autograd/allocator.h"
#include "autograd/ops/loss.h"
#include "autograd/tape.h"
#include "bench/parse_arguments.h"
#include "bench/timing.h"
#include "optim/clip.h"
#include "train/config/config.h"
#include "train/trainer.h"

using namespace relpos;

namespace {

struct Options {
  std::string scheme = "xl";
  std::int64_t len = 256;
  std::int64_t batch = 8;
  std::vector<std::int64_t> multiples{0, 1, 2, 4};  // memory lengths, in units of len
  int steps = 8;
  int warmup = 2;
  int threads = 2;
};

// The bench_train model (d 256, 4 layers, 4 heads, d_ff 1024) on corpus streams.
RunState build(const Options& o, std::int64_t mem_len) {
  return build_run(load_config(
      {},
      {"model.d_model=256", "model.n_layers=4", "model.n_heads=4", "model.d_ff=1024",
       "model.dropout=0", "model.position.scheme=" + o.scheme, "data.source=corpus",
       "data.seq_len=" + std::to_string(o.len), "data.batch_size=" + std::to_string(o.batch),
       "optim.name=adamw", "schedule.name=constant", "schedule.warmup_steps=0", "schedule.min_lr=0",
       "train.mem_len=" + std::to_string(std::max<std::int64_t>(mem_len, 0)),
       "train.threads=" + std::to_string(o.threads), "train.seed=0"}));
}

struct Timed {
  std::vector<double> seconds;
  std::vector<double> cpu_seconds;  // process CPU time: with one thread, the load hardly moves it
  std::size_t peak_bytes = 0;       // the largest step's peak above what it started with
};

// One training step with memory; records its seconds, CPU seconds and peak bytes.
void step(RunState& run, Timed& timed) {
  Allocator& allocator = allocator_for(Device::cpu);
  const double start = bench::now_seconds(), cpu_start = bench::process_cpu_seconds();
  allocator.reset_peak();
  const std::size_t before = allocator.stats().current_bytes;
  run.optimizer->zero_grad();
  const Batch b = run.data->next_train();
  const Tensor logits = forward_segment(*run.model, b.inputs, run.memory, run.config.train.mem_len);
  backward(cross_entropy(logits, b.targets, kIgnoreTarget));
  clip_grad_norm(run.optimizer->parameters(), run.config.optim.grad_clip);
  run.optimizer->step(run.config.optim.lr);
  timed.peak_bytes = std::max(timed.peak_bytes, allocator.stats().peak_bytes - before);
  timed.seconds.push_back(bench::now_seconds() - start);
  timed.cpu_seconds.push_back(bench::process_cpu_seconds() - cpu_start);
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  CLI::App app("bench_recurrence: training-step time and peak tensor bytes against mem_len");
  app.add_option("--scheme", o.scheme, "position scheme (a relative one)");
  app.add_option("--len", o.len, "segment length L");
  app.add_option("--batch", o.batch, "rows per batch");
  app.add_option("--mem", o.multiples, "memory lengths in units of L, e.g. 0,1,2,4")
      ->delimiter(',');
  app.add_option("--steps", o.steps, "timed steps per memory length");
  app.add_option("--warmup", o.warmup, "untimed steps first (they also fill the memory)");
  app.add_option("--threads", o.threads, "CPU threads");
  if (const auto code = bench::parse_arguments(app, argc, argv)) return *code;
  try {
    std::vector<RunState> runs;
    std::vector<Timed> timed(o.multiples.size());
    for (std::int64_t m : o.multiples) {
      runs.push_back(build(o, m * o.len));
      runs.back().model->set_training(true);
    }
    for (int s = 0; s < o.warmup + o.steps; ++s)
      for (std::size_t i = 0; i < runs.size(); ++i) {
        Timed scratch;
        step(runs[i], s < o.warmup ? scratch : timed[i]);
      }
    const double base = bench::median(timed.front().seconds);
    const double cpu_base = bench::median(timed.front().cpu_seconds);
    for (std::size_t i = 0; i < runs.size(); ++i) {
      const double median = bench::median(timed[i].seconds);
      const double cpu = bench::median(timed[i].cpu_seconds);
      const nlohmann::json line = {
          {"scheme", o.scheme},
          {"len", o.len},
          {"batch", o.batch},
          {"mem_len", o.multiples[i] * o.len},
          {"threads", o.threads},
          {"steps", o.steps},
          {"median_step_s", median},
          {"best_step_s", *std::min_element(timed[i].seconds.begin(), timed[i].seconds.end())},
          {"step_ratio_to_first", median / base},
          {"median_cpu_step_s", cpu},
          {"cpu_ratio_to_first", cpu / cpu_base},
          {"peak_tensor_bytes", timed[i].peak_bytes}};
      std::printf("%s\n", line.dump().c_str());
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_recurrence: %s\n", e.what());
    return 2;
  }
  return 0;
}
