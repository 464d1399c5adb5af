#include "train/trainer.h"

#include <cmath>
#include <limits>
#include <fmt/format.h>

#include "autograd/allocator.h"
#include "autograd/error.h"
#include "autograd/ops/elementwise.h"
#include "autograd/ops/loss.h"
#include "autograd/tape.h"
#include "autograd/threads.h"
#include "optim/adam.h"
#include "optim/clip.h"
#include "optim/sgd.h"
#include "train/evaluate.h"
#include "train/atomic_file.h"
#include "train/device_placement.h"
#include "train/memory_estimate.h"
#include "train/metrics.h"

namespace relpos {
namespace {

constexpr const char* kSamplerKey = "data_sampler";

std::unique_ptr<Optimizer> make_optimizer(const OptimConfig& o,
                                          std::vector<NamedParameter> parameters) {
  if (o.name == "sgd") return std::make_unique<Sgd>(std::move(parameters),
                                                    SgdOptions{o.momentum, o.nesterov, o.weight_decay});
  const AdamOptions adam{o.beta1, o.beta2, o.eps, o.weight_decay};
  if (o.name == "adam") return std::make_unique<Adam>(std::move(parameters), adam);
  require(o.name == "adamw", "optim.name: unknown optimizer '{}' (expected sgd, adam or adamw)",
          o.name);
  return std::make_unique<AdamW>(std::move(parameters), adam);
}

void prepare_out_dir(const std::filesystem::path& dir) {
  std::error_code error;
  std::filesystem::create_directories(dir / "checkpoints", error);
  require(!error, "train.out_dir '{}': cannot create it: {}", dir.string(), error.message());
  // Probe that the directory is writable before training starts.
  const auto probe = dir / ".write_test";
  write_file_atomic(probe, "");
  std::filesystem::remove(probe);
}

std::map<std::string, Tensor> parameter_map(const TransformerLM& model) {
  std::map<std::string, Tensor> out;
  for (const NamedParameter& p : model.parameters()) out[p.name] = p.tensor;
  return out;
}

void load_parameters(const TransformerLM& model, const Checkpoint& ckpt,
                     const std::filesystem::path& source) {
  const auto params = parameter_map(model);
  check_params_match(params, ckpt.params, source.string());
  NoGradGuard no_grad;
  for (auto& [name, tensor] : params) {
    Tensor target = tensor;
    target.copy_(ckpt.params.at(name));
  }
}

}  // namespace

RunState build_run(const RunConfig& config) {
  validate(config);
  require_fits_in_memory(config);  // before the model or the data is allocated
  const Device device = train_device(config.train.device);
  if (config.train.threads > 0) set_num_threads(static_cast<int>(config.train.threads));
  RunState run;
  run.config = config;
  run.device = device;
  Rng init(mix64(config.train.seed, 1));
  // Initialised on the CPU (the same values on every device), then moved.
  run.model = std::make_unique<TransformerLM>(config.model, init);
  move_parameters(run.model->parameters(), device);
  // Refused here, before any step, when the device lacks the optimizer's kernel.
  run.optimizer = make_optimizer(config.optim, run.model->parameters());
  DataConfig data = config.data;
  data.seed = mix64(config.train.seed, 2);
  data.masked_tokens = !config.model.causal;  // a bidirectional model sees the next token
  run.data = make_source(data);
  return run;
}

void restore_run(RunState& run, const Checkpoint& ckpt, const std::filesystem::path& source) {
  // The architecture must not change on resume; everything else (steps, lr, ...) may.
  const RunConfig saved = config_from_yaml(ckpt.config_yaml, source.string() + " (saved config)");
  const std::string saved_model = to_yaml(RunConfig{saved.model, {}, {}, {}, {}, {}});
  const std::string current_model = to_yaml(RunConfig{run.config.model, {}, {}, {}, {}, {}});
  require(saved_model == current_model,
          "checkpoint {}: its model section differs from the config (a resume cannot change the "
          "architecture); compare with `relpos inspect {}`",
          source.string(), source.string());
  load_parameters(*run.model, ckpt, source);
  run.optimizer->load_state(ckpt.optim);
  auto sampler = ckpt.rng_states.find(kSamplerKey);
  require(sampler != ckpt.rng_states.end(), "checkpoint {}: no '{}' state", source.string(),
          kSamplerKey);
  run.data->set_sampler_state(SamplerState::from_words(sampler->second));
  run.step = ckpt.step;
  run.tokens_seen = ckpt.tokens_seen;
}

RunState load_run_for_inference(const std::filesystem::path& path, const std::string& data_source) {
  const Checkpoint ckpt = load_checkpoint(path);
  RunConfig config = config_from_yaml(ckpt.config_yaml, path.string() + " (saved config)");
  if (!data_source.empty()) config.data.source = data_source;
  config.train.device = "cpu";  // a checkpoint from a GPU run is usable on any machine
  RunState run = build_run(config);
  load_parameters(*run.model, ckpt, path);
  run.step = ckpt.step;
  run.tokens_seen = ckpt.tokens_seen;
  return run;
}

Checkpoint snapshot(const RunState& run) {
  Checkpoint c;
  for (const NamedParameter& p : run.model->parameters()) c.params[p.name] = p.tensor.clone();
  c.optim = run.optimizer->state();
  c.step = run.step;
  c.tokens_seen = run.tokens_seen;
  c.config_yaml = to_yaml(run.config);
  c.rng_states[kSamplerKey] = run.data->sampler_state().to_words();
  return c;
}

std::filesystem::path resolve_checkpoint(const std::filesystem::path& path) {
  require(std::filesystem::exists(path), "--resume: '{}' does not exist", path.string());
  if (!std::filesystem::is_directory(path)) return path;
  for (const auto& dir : {path / "checkpoints", path}) {
    if (!std::filesystem::is_directory(dir)) continue;
    if (auto latest = latest_checkpoint(dir)) return *latest;
  }
  fail("--resume: no checkpoint (ckpt_<step>.h5) found in '{}'", path.string());
}

TrainSummary train(RunState& run) {
  const RunConfig& c = run.config;
  const std::filesystem::path out(c.train.out_dir);
  prepare_out_dir(out);
  write_file_atomic(out / "config.yaml", to_yaml(c));
  MetricsLog metrics(out);
  const LrSchedule schedule = make_schedule(
      c.schedule.name, {c.optim.lr, c.schedule.min_lr, c.schedule.warmup_steps, c.train.steps});
  TransformerLM& model = *run.model;
  model.set_training(true);
  const std::vector<std::int64_t> train_length{c.data.seq_len};
  const auto start = std::chrono::steady_clock::now();
  Progress progress(run.step, c.train.steps);
  TrainSummary summary;
  summary.parameters = model.parameter_count();
  allocator_for(run.device).reset_peak();
  progress.message(fmt::format("relpos: {} parameters on {}, {}, {} steps from step {}, out_dir {}",
                               summary.parameters, name_of(run.device), run.data->describe(),
                               c.train.steps, run.step, out.string()));

  auto save = [&] {
    save_checkpoint(checkpoint_path(out / "checkpoints", run.step), snapshot(run));
    keep_last_checkpoints(out / "checkpoints", static_cast<int>(c.train.keep_checkpoints));
  };
  auto run_eval = [&] {
    const EvalPoint p = evaluate(model, *run.data, train_length, c.train.eval_batches).front();
    metrics.write({{"step", run.step}, {"val_loss", p.loss}, {"val_bpb", p.bits_per_byte},
                   {"val_ppl", p.perplexity}});
    progress.message(fmt::format("step {}: val loss {:.4f} ({:.3f} bits/byte)", run.step, p.loss,
                                 p.bits_per_byte));
    summary.final_val_loss = p.loss;
  };

  auto window_start = std::chrono::steady_clock::now();
  std::int64_t window_tokens = 0;
  const std::int64_t tokens_at_start = run.tokens_seen;
  const std::int64_t step_at_start = run.step;
  double loss_value = std::numeric_limits<double>::quiet_NaN();  // none trained yet
  while (run.step < c.train.steps) {
    const double lr = schedule(run.step);
    run.optimizer->zero_grad();
    model.set_dropout_seed(mix64(c.train.seed, static_cast<std::uint64_t>(run.step) + 3));
    loss_value = 0.0;
    for (std::int64_t micro = 0; micro < c.optim.grad_accum; ++micro) {
      const Batch batch = run.data->next_train();
      const Tensor logits = model.forward(batch.inputs.to(run.device));  // (B, L, V)
      Tensor loss = cross_entropy(logits, batch.targets.to(run.device), kIgnoreTarget);
      if (c.optim.grad_accum > 1) loss = loss * (1.0 / static_cast<double>(c.optim.grad_accum));
      loss_value += loss.item();
      backward(loss);
      window_tokens += batch.inputs.numel();
      run.tokens_seen += batch.inputs.numel();
    }
    const double grad_norm = c.optim.grad_clip > 0
                                 ? clip_grad_norm(run.optimizer->parameters(), c.optim.grad_clip)
                                 : 0.0;
    if (!std::isfinite(loss_value) || !std::isfinite(grad_norm))
      fail("training diverged at step {}: loss {} (gradient norm {}); lower optim.lr or raise "
           "optim.grad_clip. The last good checkpoint in {} is intact",
           run.step, loss_value, grad_norm, (out / "checkpoints").string());
    run.optimizer->step(lr);
    ++run.step;

    if (run.step % c.train.log_every == 0 || run.step == c.train.steps) {
      const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() -
                                                           window_start).count();
      const double tps = static_cast<double>(window_tokens) / std::max(seconds, 1e-9);
      metrics.write({{"step", run.step}, {"loss", loss_value}, {"lr", lr},
                     {"grad_norm", grad_norm}, {"tokens_per_s", tps},
                     {"tokens", run.tokens_seen}});
      progress.update(run.step, loss_value, lr, tps);
      window_start = std::chrono::steady_clock::now();
      window_tokens = 0;
    }
    if (run.step % c.train.eval_every == 0 || run.step == c.train.steps) run_eval();
    if (run.step % c.train.checkpoint_every == 0 || run.step == c.train.steps) save();
  }
  progress.finish();
  // Resumed at or past the last step: nothing trained, but the summary still
  // reports the model's validation loss.
  if (run.step == step_at_start) run_eval();
  summary.steps = run.step;
  summary.final_train_loss = loss_value;
  summary.wall_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  summary.tokens_per_second =
      static_cast<double>(run.tokens_seen - tokens_at_start) / std::max(summary.wall_seconds, 1e-9);
  summary.peak_rss_bytes = peak_rss_bytes();
  summary.peak_tensor_bytes = allocator_for(run.device).stats().peak_bytes;
  return summary;
}

}  // namespace relpos
