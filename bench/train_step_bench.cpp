// bench_train: training throughput of relpos's own TransformerLM on random byte
// windows of the bundled corpus (the model of bench/train_torch.py, which is its
// PyTorch peer), or, with --gemm, a raw GEMM rate of the model's shapes (OpenBLAS sgemm or
// relpos's own matmul in fp32 or bf16).
// Prints one JSON line; bench/train_throughput.py runs both and compares them.
//
// The run is configured through the config loader (the same keys and parsing as
// `relpos train`), so --scheme and --attention accept whatever the loader accepts,
// and --set adds any other key (e.g. --set train.precision=bf16).
#include <cblas.h>
#include <sys/resource.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "autograd/allocator.h"
#include "autograd/blas_kernel.h"
#include "autograd/error.h"
#include "autograd/ops/loss.h"
#include "autograd/ops/matmul.h"
#include "autograd/precision.h"
#include "autograd/random.h"
#include "autograd/tape.h"
#include "autograd/threads.h"
#include "bench/parse_arguments.h"
#include "bench/timing.h"
#include "layers/transformer.h"
#include "optim/clip.h"
#include "train/config/config.h"
#include "train/trainer.h"

using namespace relpos;

namespace {

constexpr std::int64_t kTokensPerStep = 8192;

struct Options {
  std::string scheme = "none";
  std::string attention;  // empty: ModelConfig's default
  std::int64_t len = 512;
  std::int64_t batch = 0;  // 0: kTokensPerStep / len
  int steps = 10;
  int warmup = 2;
  int threads = 2;
  int gemm_reps = 7;
  std::vector<std::string> settings;  // extra KEY=VALUE config overrides, applied last
};

// The benchmark model (d 256, 4 layers, 4 heads, d_ff 1024, pre-LN layernorm,
// tied embeddings, no dropout) and AdamW(1e-3, (0.9, 0.99), wd 0.1), clip 1.0, at a
// constant learning rate, as config overrides.
std::vector<std::string> config_overrides(const Options& o, std::int64_t batch) {
  std::vector<std::string> v = {"model.vocab=256",
                                "model.d_model=256",
                                "model.n_layers=4",
                                "model.n_heads=4",
                                "model.d_ff=1024",
                                "model.dropout=0",
                                "model.norm=layernorm",
                                "model.tie_embeddings=true",
                                "model.causal=true",
                                "model.position.scheme=" + o.scheme,
                                "model.position.max_len=" + std::to_string(o.len),
                                "model.position.max_relative=16",
                                "model.position.num_buckets=32",
                                "model.position.max_distance=128",
                                "data.source=corpus",
                                "data.seq_len=" + std::to_string(o.len),
                                "data.batch_size=" + std::to_string(batch),
                                "optim.name=adamw",
                                "optim.lr=0.001",
                                "optim.beta1=0.9",
                                "optim.beta2=0.99",
                                "optim.eps=1e-8",
                                "optim.weight_decay=0.1",
                                "optim.grad_clip=1.0",
                                "schedule.name=constant",
                                "schedule.warmup_steps=0",
                                "schedule.min_lr=0",
                                "train.steps=" + std::to_string(o.warmup + o.steps),
                                "train.threads=" + std::to_string(o.threads),
                                "train.seed=0"};
  if (!o.attention.empty()) v.push_back("model.attention=" + o.attention);
  v.insert(v.end(), o.settings.begin(), o.settings.end());
  return v;
}

// The name of an attention path as the config schema spells it.
std::string attention_name(AttentionPath path) {
  for (const ConfigKeyInfo& key : config_keys())
    if (key.path == "model.attention") return key.choices.at(static_cast<std::size_t>(path));
  fail("config schema: no key 'model.attention'");
}

// Parameters outside the position scheme: the model's own weights.
std::int64_t count_without_position(const TransformerLM& model) {
  std::int64_t n = 0;
  for (const NamedParameter& p : model.parameters())
    if (p.name.rfind("position.", 0) != 0) n += p.tensor.numel();
  return n;
}

// FLOPs per token of the position schemes' own products, forward and backward
// (bench/README.md): Transformer-XL's (q + v)·(W_r R)ᵀ over the causal distances,
// 3·L·d_model a layer (one product where the content has two: half their 6·L·d_model), and its
// projection W_r R of the L distances, made once a step (forward and W_r's gradient:
// 4·L·d_model² a step, over batch·L tokens); Shaw's q·Bᵀ and bins·A, 6·(2k+1)·d_model each. The
// other schemes add no product.
double position_flops_per_token(const ModelConfig& c, std::int64_t len, std::int64_t batch) {
  const double d = static_cast<double>(c.d_model), l = static_cast<double>(len);
  double flops = 0.0;
  for (std::int64_t layer = 0; layer < c.n_layers; ++layer) {
    const PositionConfig& p = layer_position(c, layer);
    if (p.scheme == "xl") flops += 3.0 * l * d + 4.0 * d * d / static_cast<double>(batch);
    if (p.scheme != "shaw") continue;
    const double bins = static_cast<double>(2 * p.get<std::int64_t>("max_relative") + 1);
    flops += 6.0 * bins * d *
             ((p.get<bool>("shaw_keys") ? 1.0 : 0.0) + (p.get<bool>("shaw_values") ? 1.0 : 0.0));
  }
  return flops;
}

// Model FLOPs per token (bench/README.md): 6 N + 6 n_layers L d_model + the position
// scheme's products (`position_flops`: position_flops_per_token), where N is
// count_without_position. With tied embeddings the token table is counted once, as the LM
// head's matmul.
double model_flops_per_token(const TransformerLM& model, std::int64_t len, double position_flops) {
  const ModelConfig& c = model.config();
  return 6.0 * static_cast<double>(count_without_position(model)) +
         6.0 * static_cast<double>(c.n_layers * len * c.d_model) + position_flops;
}

double peak_rss_mib() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_maxrss) / 1024.0;  // ru_maxrss is in KiB on Linux
}

// What the kernel has done for this process so far: minor page faults and system CPU
// seconds, all threads.
struct KernelUse {
  long minor_faults = 0;
  double system_s = 0.0;
};

KernelUse kernel_use() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return {usage.ru_minflt, static_cast<double>(usage.ru_stime.tv_sec) +
                               1e-6 * static_cast<double>(usage.ru_stime.tv_usec)};
}

nlohmann::json run_training(const Options& o) {
  const std::int64_t batch =
      o.batch > 0 ? o.batch : std::max<std::int64_t>(1, kTokensPerStep / o.len);
  RunState run = build_run(load_config({}, config_overrides(o, batch)));
  TransformerLM& model = *run.model;
  Optimizer& optimizer = *run.optimizer;
  model.set_training(true);
  const double lr = run.config.optim.lr, clip = run.config.optim.grad_clip;

  std::vector<double> step_seconds, step_cpu_seconds, losses;
  std::vector<long> step_faults;
  KernelUse timed_start;
  for (int step = 0; step < o.warmup + o.steps; ++step) {
    const KernelUse kernel_start = kernel_use();
    if (step == o.warmup) timed_start = kernel_start;
    const double start = bench::now_seconds(), cpu_start = bench::process_cpu_seconds();
    optimizer.zero_grad();
    const Batch b = run.data->next_train();
    const PrecisionScope precision(run.precision);  // train.precision, as relpos train runs it
    const Tensor logits = model.forward(b.inputs);  // (B, L, 256)
    const Tensor loss = cross_entropy(logits, b.targets, kIgnoreTarget);
    losses.push_back(loss.item());
    backward(loss);
    clip_grad_norm(optimizer.parameters(), clip);
    optimizer.step(lr);
    if (step >= o.warmup) {
      step_seconds.push_back(bench::now_seconds() - start);
      step_cpu_seconds.push_back(bench::process_cpu_seconds() - cpu_start);
      step_faults.push_back(kernel_use().minor_faults - kernel_start.minor_faults);
    }
  }
  const KernelUse timed_end = kernel_use();
  const double median_step = bench::median(step_seconds);
  const double tokens_per_s = static_cast<double>(batch * o.len) / median_step;
  const double position_flops = position_flops_per_token(model.config(), o.len, batch);
  const double flops_per_token = model_flops_per_token(model, o.len, position_flops);
  const double fastest_cpu = *std::min_element(step_cpu_seconds.begin(), step_cpu_seconds.end());
  return {{"framework", "relpos"},
          {"blas_kernel", blas_kernel_name()},
          {"scheme", o.scheme},
          {"attention", attention_name(run.config.model.attention_path)},
          {"len", o.len},
          {"batch", batch},
          {"threads", num_threads()},
          {"steps", o.steps},
          {"warmup", o.warmup},
          {"parameters", model.parameter_count()},
          {"model_parameters", count_without_position(model)},
          {"flops_per_token", flops_per_token},
          {"position_flops_per_token", position_flops},
          {"median_step_s", median_step},
          // Process CPU seconds of a step (all threads): with one thread, the step's time
          // without the waits for a core on a shared machine.
          {"median_step_cpu_s", bench::median(step_cpu_seconds)},
          // The fastest step's: on a shared machine the slower ones also measure the neighbours.
          {"fastest_step_cpu_s", fastest_cpu},
          {"tokens_per_s", tokens_per_s},
          {"model_gflops", flops_per_token * tokens_per_s / 1e9},
          {"settings", o.settings},
          // Each timed step's minor page faults, and the timed steps' system CPU seconds
          // per step: the first step faults in the step's memory, later ones next to none
          // (bench/results/step-faults.md).
          {"step_minor_faults", step_faults},
          {"system_cpu_s_per_step", (timed_end.system_s - timed_start.system_s) / o.steps},
          {"peak_rss_mib", peak_rss_mib()},
          {"peak_tensor_mib",
           static_cast<double>(allocator_for(run.device).stats().peak_bytes) / (1024.0 * 1024.0)},
          {"first_loss", losses.front()},
          {"final_loss", losses.back()}};
}

// The raw GEMM rate on the forward shapes of one block at kTokensPerStep tokens: the four
// d×d projections, fc1 and fc2. `kind` is "sgemm" (cblas_sgemm of OpenBLAS), "fp32" or
// "bf16" (relpos's own matmul op, through whatever library the CPU backend picks for that
// precision; bf16 includes rounding the f32 operands). Each shape's rate is from the median
// of `reps` calls; the combined rate is their FLOPs over their median times, weighted by how
// often a block runs each shape. The same from the fastest call of each shape
// ("best_gflops") shows how much the machine's load took.
nlohmann::json run_gemm(const Options& o, const std::string& kind) {
  set_num_threads(o.threads);
  struct Shape {
    std::int64_t m, k, n, count;
  };
  const std::vector<Shape> shapes = {{kTokensPerStep, 256, 256, 4},
                                     {kTokensPerStep, 256, 1024, 1},
                                     {kTokensPerStep, 1024, 256, 1}};
  const NoGradGuard no_grad;
  const PrecisionScope precision(kind == "bf16" ? Precision::bf16 : Precision::fp32);
  Rng rng(11);
  nlohmann::json rows = nlohmann::json::array();
  double total_flops = 0.0, total_seconds = 0.0, best_seconds = 0.0;
  for (const Shape& s : shapes) {
    const Tensor a = randn({s.m, s.k}, rng), b = randn({s.k, s.n}, rng);
    Tensor c = Tensor::zeros({s.m, s.n});
    auto gemm = [&] {
      if (kind != "sgemm") {
        c = matmul(a, b);
        return;
      }
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(s.m),
                  static_cast<int>(s.n), static_cast<int>(s.k), 1.0f, a.data<float>(),
                  static_cast<int>(s.k), b.data<float>(), static_cast<int>(s.n), 0.0f,
                  c.data<float>(), static_cast<int>(s.n));
    };
    gemm();  // warm-up
    std::vector<double> seconds;
    for (int r = 0; r < o.gemm_reps; ++r) seconds.push_back(bench::seconds_per_call(gemm, 1));
    const double t = bench::median(seconds);
    const double best = *std::min_element(seconds.begin(), seconds.end());
    const double flops = 2.0 * static_cast<double>(s.m * s.k * s.n);
    rows.push_back({{"m", s.m},
                    {"k", s.k},
                    {"n", s.n},
                    {"gflops", flops / t / 1e9},
                    {"best_gflops", flops / best / 1e9}});
    total_flops += static_cast<double>(s.count) * flops;
    total_seconds += static_cast<double>(s.count) * t;
    best_seconds += static_cast<double>(s.count) * best;
  }
  return {{"framework", kind == "sgemm" ? "sgemm" : "relpos-gemm"},
          {"kind", kind},
          {"blas_kernel", blas_kernel_name()},
          {"threads", num_threads()},
          {"reps", o.gemm_reps},
          {"shapes", rows},
          {"gflops", total_flops / total_seconds / 1e9},
          {"best_gflops", total_flops / best_seconds / 1e9}};
}

}  // namespace

int main(int argc, char** argv) {
  // The kernels `relpos train` runs (autograd/blas_kernel.h): without this, Debian's
  // OpenBLAS ran its SSE3 Prescott sgemm on the AMX Xeon.
  relpos::use_best_blas_kernel(argv);
  CLI::App app{"Training throughput of relpos's TransformerLM (JSON line on stdout)"};
  Options o;
  std::string gemm;
  app.add_option("--scheme", o.scheme, "model.position.scheme");
  app.add_option("--len", o.len, "window length L")->check(CLI::Range(2, 1 << 20));
  app.add_option("--batch", o.batch, "sequences per step; default 8192 / L")
      ->check(CLI::PositiveNumber);
  app.add_option("--steps", o.steps, "timed steps (median reported)")->check(CLI::PositiveNumber);
  app.add_option("--warmup", o.warmup, "untimed steps first")->check(CLI::NonNegativeNumber);
  app.add_option("--threads", o.threads)->check(CLI::PositiveNumber);
  app.add_option("--attention", o.attention, "model.attention; default: ModelConfig's");
  app.add_option("--set", o.settings,
                 "KEY=VALUE config override after the benchmark's own (e.g. train.precision=bf16)");
  app.add_option("--gemm", gemm,
                 "measure a raw GEMM rate instead of training: sgemm (OpenBLAS), fp32 or bf16 "
                 "(relpos's matmul op)")
      ->check(CLI::IsMember({"sgemm", "fp32", "bf16"}));
  app.add_option("--gemm-reps", o.gemm_reps, "calls per shape")->check(CLI::PositiveNumber);
  if (const auto code = bench::parse_arguments(app, argc, argv)) return *code;
  try {
    std::printf("%s\n", (gemm.empty() ? run_training(o) : run_gemm(o, gemm)).dump().c_str());
  } catch (const UsageError& e) {
    std::fprintf(stderr, "bench_train: %s\n", e.what());
    return 2;
  }
  return 0;
}
