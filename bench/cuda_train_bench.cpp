// Training throughput on the GPU (train.device=cuda): a 6-layer, d_model 512,
// 8-head, d_ff 2048 byte-level decoder LM with T5 bias (or --scheme), batch 16 x
// 512 tokens from the bundled corpus, AdamW with global-norm clipping 1.0: the
// steps of `relpos train`, timed. Its PyTorch peer is bench/cuda_train_torch.py.
// Usage: bench_cuda_train [--scheme S] [--len L] [--batch B] [--steps N] [--warmup N] [--tf32]
// Prints one JSON line on stdout.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "autograd/cuda/cuda_backend.h"
#include "autograd/ops/loss.h"
#include "autograd/tape.h"
#include "bench/timing.h"
#include "optim/clip.h"
#include "train/config/config.h"
#include "train/trainer.h"

using namespace relpos;

namespace {

struct Options {
  std::string scheme = "t5";
  std::int64_t len = 512, batch = 16;
  int steps = 20, warmup = 3;
  bool tf32 = false;
};

std::vector<std::string> config_overrides(const Options& o) {
  return {"model.d_model=512",
          "model.n_layers=6",
          "model.n_heads=8",
          "model.d_ff=2048",
          "model.dropout=0",
          "model.position.scheme=" + o.scheme,
          "model.position.max_len=" + std::to_string(o.len),
          "model.attention=fused",
          "data.source=corpus",
          "data.seq_len=" + std::to_string(o.len),
          "data.batch_size=" + std::to_string(o.batch),
          "optim.name=adamw",
          "optim.lr=3e-4",
          "optim.weight_decay=0.1",
          "optim.grad_clip=1.0",
          "schedule.name=constant",
          "schedule.warmup_steps=0",
          "schedule.min_lr=0",
          "train.steps=" + std::to_string(o.warmup + o.steps),
          "train.device=cuda"};
}

// Trains o.warmup + o.steps steps and prints the JSON line.
void run_benchmark(const Options& o) {
  cuda_backend().set_allow_tf32(o.tf32);
  RunState run = build_run(load_config({}, config_overrides(o)));
  TransformerLM& model = *run.model;
  Optimizer& optimizer = *run.optimizer;
  model.set_training(true);
  const double lr = run.config.optim.lr, clip = run.config.optim.grad_clip;
  std::vector<double> step_seconds, losses;
  for (int step = 0; step < o.warmup + o.steps; ++step) {
    const double start = bench::now_seconds();
    optimizer.zero_grad();
    const Batch batch = run.data->next_train();
    const Tensor logits = model.forward(batch.inputs.to(Device::cuda));  // (B, L, 256)
    const Tensor loss = cross_entropy(logits, batch.targets.to(Device::cuda), kIgnoreTarget);
    losses.push_back(loss.item());  // the trainer logs every step's loss
    backward(loss);
    clip_grad_norm(optimizer.parameters(), clip);
    optimizer.step(lr);
    cuda_backend().synchronize();
    if (step >= o.warmup) step_seconds.push_back(bench::now_seconds() - start);
  }
  const double median_step = bench::median(step_seconds);
  const nlohmann::json row = {{"framework", "relpos"},
                              {"scheme", o.scheme},
                              {"len", o.len},
                              {"batch", o.batch},
                              {"tf32", o.tf32},
                              {"parameters", model.parameter_count()},
                              {"steps", o.steps},
                              {"median_step_s", median_step},
                              {"tokens_per_s", static_cast<double>(o.batch * o.len) / median_step},
                              {"first_loss", losses.front()},
                              {"final_loss", losses.back()}};
  std::printf("%s\n", row.dump().c_str());
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const bool has_value = i + 1 < argc;
    if (std::strcmp(argv[i], "--scheme") == 0 && has_value) {
      o.scheme = argv[++i];
    } else if (std::strcmp(argv[i], "--len") == 0 && has_value) {
      o.len = std::atoll(argv[++i]);
    } else if (std::strcmp(argv[i], "--batch") == 0 && has_value) {
      o.batch = std::atoll(argv[++i]);
    } else if (std::strcmp(argv[i], "--steps") == 0 && has_value) {
      o.steps = std::atoi(argv[++i]);
    } else if (std::strcmp(argv[i], "--warmup") == 0 && has_value) {
      o.warmup = std::atoi(argv[++i]);
    } else if (std::strcmp(argv[i], "--tf32") == 0) {
      o.tf32 = true;
    } else {
      std::fprintf(stderr, "bench_cuda_train: unknown argument '%s'\n", argv[i]);
      return 2;
    }
  }
  try {
    run_benchmark(o);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_cuda_train: error: %s\n", e.what());
    return 1;
  }
  return 0;
}
