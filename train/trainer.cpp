#include "train/trainer.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <csignal>
#include <iostream>
#include <limits>

#include "autograd/allocator.h"
#include "autograd/error.h"
#include "autograd/ops/elementwise.h"
#include "autograd/ops/loss.h"
#include "autograd/ops/shape.h"
#include "autograd/tape.h"
#include "autograd/threads.h"
#include "optim/adam.h"
#include "optim/clip.h"
#include "optim/schedule.h"
#include "optim/sgd.h"
#include "train/config/config_schema.h"
#include "train/config/config_value.h"
#include "train/config/memory_estimate.h"
#include "train/device_placement.h"
#include "train/distributed/data_parallel.h"
#include "train/distributed/distributed.h"
#include "train/divergence.h"
#include "train/dynamic_chunk.h"
#include "train/evaluate.h"
#include "train/knn_state.h"
#include "train/metrics.h"
#include "train/run_summary.h"
#include "train/stop_signal.h"
#include "train/store/atomic_file.h"
#include "train/store/input_output.h"
#include "train/store/run_start.h"
#include "train/train_precision.h"

namespace relpos {
namespace {

constexpr const char* kSamplerKey = "data_sampler";
constexpr const char* kLrHalvingsKey = "lr_halvings";  // a /state word; absent when 0
// 0.5^1023 is still a normal double; a larger count is no rollback history.
constexpr std::uint64_t kMaxLrHalvings = 1023;

std::unique_ptr<Optimizer> make_optimizer(const OptimConfig& o,
                                          std::vector<NamedParameter> parameters) {
  if (o.name == "sgd")
    return std::make_unique<Sgd>(std::move(parameters),
                                 SgdOptions{o.momentum, o.nesterov, o.weight_decay});
  const AdamOptions adam{o.beta1, o.beta2, o.eps, o.weight_decay};
  if (o.name == "adam") return std::make_unique<Adam>(std::move(parameters), adam);
  require(o.name == "adamw", "optim.name: unknown optimizer '{}' (expected sgd, adam or adamw)",
          o.name);
  return std::make_unique<AdamW>(std::move(parameters), adam);
}

std::map<std::string, Tensor> parameter_map(const TransformerLM& model) {
  std::map<std::string, Tensor> out;
  for (const NamedParameter& p : model.parameters()) out[p.name] = p.tensor;
  return out;
}

// A resume may change anything but the model's shape and parameters.
bool is_architecture_key(const std::string& path) {
  return path.starts_with("model.") && path != "model.dropout" && path != "model.attention";
}

// The settings in which the run's config differs from a checkpoint's saved one; a
// UsageError when one of them is architecture.
std::vector<ConfigChange> changes_since(const RunState& run, const std::string& saved_yaml,
                                        const std::filesystem::path& source) {
  const RunConfig saved = config_from_yaml(saved_yaml, source.string() + " (saved config)");
  std::vector<ConfigChange> changes;
  for (const ConfigKey& key : config_schema()) {
    const std::string before = config_value_text(key, saved);
    const std::string after = config_value_text(key, run.config);
    if (before == after) continue;
    require(!is_architecture_key(key.path),
            "checkpoint {}: a resume cannot change the architecture, but {} was {} and is now {}; "
            "compare with `relpos inspect {}`",
            source.string(), key.path, before, after, source.string());
    changes.push_back({key.path, before, after});
  }
  return changes;
}

std::map<std::string, Shape> parameter_shapes(const TransformerLM& model) {
  std::map<std::string, Shape> out;
  for (const NamedParameter& p : model.parameters()) out[p.name] = p.tensor.shape();
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
  validate_recurrence(config);
  validate_knn_data(config);
  require_fits_in_memory(config);  // before the model or the data is allocated
  const Precision precision = train_precision(config.train.precision, config.train.device);
  const Device device = train_device(config.train.device);
  if (config.train.threads > 0) set_num_threads(static_cast<int>(config.train.threads));
  RunState run;
  run.config = config;
  run.device = device;
  run.precision = precision;
  Rng init(mix64(config.train.seed, 1));
  // Initialised on the CPU (the same values on every device), then moved.
  run.model = std::make_unique<TransformerLM>(config.model, init);
  move_parameters(run.model->parameters(), device);
  // Refused here, before any step, when the device lacks the optimizer's kernel.
  run.optimizer = make_optimizer(config.optim, run.model->parameters());
  DataConfig data = config.data;
  data.seed = mix64(config.train.seed, 2);
  data.masked_tokens = !config.model.causal;  // a bidirectional model sees the next token
  // Each row continues its text: segment memory and the kNN memory hold earlier text.
  data.stream_order = config.train.mem_len > 0 || config.model.knn_memory.enabled();
  run.data = make_source(data);
  run.knn_memory = KnnMemory(config.model.knn_memory.size);
  return run;
}

namespace {

// The segment memory saved in a checkpoint, checked against the run's shape and
// trimmed to its train.mem_len; none when the run has no memory.
std::vector<Tensor> memory_from(const RunState& run, const Checkpoint& ckpt,
                                const std::filesystem::path& source) {
  const RunConfig& c = run.config;
  std::vector<Tensor> memory;
  if (c.train.mem_len == 0 || ckpt.memory.empty()) return memory;
  require(static_cast<std::int64_t>(ckpt.memory.size()) == c.model.n_layers,
          "checkpoint {}: /memory holds {} layers, the model has {}", source.string(),
          ckpt.memory.size(), c.model.n_layers);
  for (std::int64_t l = 0; l < c.model.n_layers; ++l) {
    const auto found = ckpt.memory.find(std::to_string(l));
    require(found != ckpt.memory.end(), "checkpoint {}: no /memory/{}", source.string(), l);
    const Tensor& m = found->second;
    require(m.dim() == 3 && m.size(0) == c.data.batch_size && m.size(2) == c.model.d_model,
            "checkpoint {}: /memory/{} is {}, expected (data.batch_size={}, M, model.d_model={})",
            source.string(), l, m.describe(), c.data.batch_size, c.model.d_model);
    const std::int64_t keep = std::min(m.size(1), c.train.mem_len);
    memory.push_back(slice(m, 1, m.size(1) - keep, m.size(1)).contiguous().to(run.device));
  }
  return memory;
}

// Parameters, optimizer state (unless the run changed optim.name: then it starts
// fresh), data stream, segment memory and counters of a checkpoint.
void load_training_state(RunState& run, const Checkpoint& ckpt, const std::filesystem::path& source,
                         bool optimizer_state = true) {
  load_parameters(*run.model, ckpt, source);
  try {
    if (optimizer_state) run.optimizer->load_state(ckpt.optim);
  } catch (const UsageError& e) {
    fail("checkpoint {}: {}", source.string(), e.what());
  }
  auto sampler = ckpt.rng_states.find(kSamplerKey);
  require(sampler != ckpt.rng_states.end(), "checkpoint {}: no '{}' state", source.string(),
          kSamplerKey);
  try {
    run.data->set_sampler_state(SamplerState::from_words(sampler->second));
  } catch (const UsageError& e) {
    fail("checkpoint {}: {}", source.string(), e.what());
  }
  run.memory = memory_from(run, ckpt, source);
  restore_knn_memory(run.knn_memory, ckpt, run.config, run.device, source);
  const auto halvings = ckpt.rng_states.find(kLrHalvingsKey);
  require(halvings == ckpt.rng_states.end() ||
              (halvings->second.size() == 1 && halvings->second[0] >= 1 &&
               halvings->second[0] <= kMaxLrHalvings),
          "checkpoint {}: '{}' must hold one word in [1, {}] (written only when > 0)",
          source.string(), kLrHalvingsKey, kMaxLrHalvings);
  run.lr_halvings =
      halvings == ckpt.rng_states.end() ? 0 : static_cast<std::int64_t>(halvings->second[0]);
  run.step = ckpt.step;
  run.tokens_seen = ckpt.tokens_seen;
}

}  // namespace

void restore_run(RunState& run, const Checkpoint& ckpt, const std::filesystem::path& source) {
  run.config_changes = changes_since(run, ckpt.config_yaml, source);
  const bool new_optimizer =
      std::any_of(run.config_changes.begin(), run.config_changes.end(),
                  [](const ConfigChange& change) { return change.key == "optim.name"; });
  if (new_optimizer && is_root())
    std::cerr << fmt::format(
        "relpos: optim.name changed ({}): the optimizer starts with fresh state\n",
        run.config.optim.name);
  load_training_state(run, ckpt, source, !new_optimizer);
  run.resumed_from = source;
}

Checkpoint load_checkpoint_for(const RunState& run, const std::filesystem::path& path) {
  return load_checkpoint(
      path, [&](const std::string& config_yaml, const std::map<std::string, Shape>& shapes) {
        changes_since(run, config_yaml, path);  // refuses an architecture change
        check_shapes_match(parameter_shapes(*run.model), shapes, path.string());
      });
}

RunState load_run_for_inference(const std::filesystem::path& path, const std::string& data_source) {
  RunState run;
  // The model is built from the saved config, and the file's declared shapes are
  // checked against it, before any of the file's tensors is allocated.
  const auto build_saved_run = [&](const std::string& config_yaml,
                                   const std::map<std::string, Shape>& shapes) {
    RunConfig config = config_from_yaml(config_yaml, path.string() + " (saved config)");
    if (!data_source.empty()) config.data.source = data_source;
    config.train.device = "cpu";      // a checkpoint from a GPU run is usable on any machine
    config.train.precision = "fp32";  // and from a bf16 run on any CPU
    config.train.mem_len = 0;         // no training stream is read; eval --mem-len asks for memory
    run = build_run(config);
    check_shapes_match(parameter_shapes(*run.model), shapes, path.string());
  };
  const Checkpoint ckpt = load_checkpoint(path, build_saved_run);
  require_finite_parameters(ckpt.params, path.string());
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
  for (std::size_t l = 0; l < run.memory.size(); ++l)
    c.memory[std::to_string(l)] = run.memory[l].clone();
  save_knn_memory(run.knn_memory, c);
  if (run.lr_halvings > 0)
    c.rng_states[kLrHalvingsKey] = {static_cast<std::uint64_t>(run.lr_halvings)};
  return c;
}

std::filesystem::path resolve_checkpoint(const std::filesystem::path& path) {
  require(std::filesystem::exists(path), "--resume: '{}' does not exist", path.string());
  if (!std::filesystem::is_directory(path)) return path;
  for (const auto& dir : {path / "checkpoints", path}) {
    if (!std::filesystem::is_directory(dir)) continue;
    if (!latest_checkpoint(dir)) continue;
    const auto skipped = [](const std::string& line) { std::cerr << "relpos: " << line << "\n"; };
    if (auto verified = latest_verified_checkpoint(dir, skipped)) return *verified;
    fail("--resume: no checkpoint in '{}' verifies against its digest", dir.string());
  }
  fail("--resume: no checkpoint (ckpt_<step>.h5) found in '{}'", path.string());
}

namespace {

// The global L2 norm of the gradients, which are clipped to max_norm when max_norm > 0.
double gradient_norm(const std::vector<NamedParameter>& parameters, double max_norm) {
  // With a bound no norm reaches, clip_grad_norm only measures.
  return clip_grad_norm(parameters, max_norm > 0 ? max_norm : std::numeric_limits<double>::max());
}

// The config_change event for metrics.jsonl (none when nothing changed), after one line
// on stderr.
std::vector<nlohmann::json> record_config_changes(const RunState& run) {
  if (run.config_changes.empty()) return {};
  nlohmann::json changes = nlohmann::json::object();
  std::string listed;
  for (const ConfigChange& change : run.config_changes) {
    changes[change.key] = nlohmann::json::array({change.before, change.after});
    listed += fmt::format("{}{} {} -> {}", listed.empty() ? "" : ", ", change.key, change.before,
                          change.after);
  }
  std::cerr << fmt::format(
      "relpos: resuming at step {} with changed settings: {} (recorded in metrics.jsonl and "
      "config.{}.yaml)\n",
      run.step, listed, run.step);
  return {{{"event", "config_change"}, {"step", run.step}, {"changes", changes}}};
}

std::string last_good_text(const std::optional<std::filesystem::path>& last_good,
                           const std::filesystem::path& checkpoints) {
  return last_good ? fmt::format("The last good checkpoint is {}", last_good->string())
                   : fmt::format("No good checkpoint of this run exists yet (in {})",
                                 checkpoints.string());
}

}  // namespace

TrainSummary train(RunState& run, RunStart start) {
  const RunConfig& c = run.config;
  // Under mpirun, rank 0 alone owns the folder, writes its files and prints; every rank
  // trains on its rows of each batch (docs/distributed.md).
  const int world = world_size();
  const bool root = is_root();
  if (c.data.batch_size % world != 0)
    fail_everywhere(
        "data.batch_size: {} is not a multiple of the {} MPI ranks (each rank trains on "
        "batch_size / ranks rows of every batch)",
        c.data.batch_size, world);
  if (world > 1 && c.train.mem_len > 0)
    fail_everywhere(
        "train.mem_len={}: segment-recurrent training runs in one process, not under mpirun "
        "({} ranks); set train.mem_len: 0 or run without mpirun",
        c.train.mem_len, world);
  if (world > 1 && c.model.knn_memory.enabled())
    fail_everywhere(
        "model.knn_memory.layer={}: training with a kNN memory runs in one process, not under "
        "mpirun ({} ranks); set model.knn_memory.layer: -1 or run without mpirun",
        c.model.knn_memory.layer, world);
  std::optional<RunFolder> folder;
  std::optional<RunStartWrites> run_files;  // rank 0's metrics.jsonl, config files, summary
  run_collectively([&] {
    if (!root) return;
    // A resume continues the run in out_dir, unless --overwrite asks to move that run
    // aside for a checkpoint from elsewhere.
    const bool resume =
        !run.resumed_from.empty() &&
        (start != RunStart::overwrite || inside_folder(run.resumed_from, c.train.out_dir));
    folder.emplace(c.train.out_dir, resume ? RunStart::resume : start, run.resumed_from);
    const std::filesystem::path dir = folder->path();
    if (!folder->moved_aside().empty())
      std::cerr << fmt::format("relpos: moved the earlier contents of {} to {}\n", dir.string(),
                               folder->moved_aside().string());
    // A resume changes nothing in the folder before its first checkpoint is saved.
    run_files.emplace(dir, run.step, to_yaml(c), record_config_changes(run), resume);
  });
  const std::filesystem::path out =
      folder ? folder->path() : std::filesystem::path(c.train.out_dir);
  const std::filesystem::path checkpoints = out / "checkpoints";
  auto write_metrics = [&](const nlohmann::json& record) {
    if (run_files) run_files->write(record);
  };
  const LrSchedule schedule = make_schedule(
      c.schedule.name, {c.optim.lr, c.schedule.min_lr, c.schedule.warmup_steps, c.train.steps});
  TransformerLM& model = *run.model;
  model.set_training(true);
  const std::vector<std::int64_t> train_length{c.data.seq_len};
  const auto start_time = std::chrono::steady_clock::now();
  Progress progress(run.step, c.train.steps);
  TrainSummary summary;
  summary.parameters = model.parameter_count();
  allocator_for(run.device).reset_peak();
  auto say = [&](const std::string& line) {
    if (root) progress.message(line);
  };
  say(fmt::format(
      "relpos: {} parameters on {}, {}, {} steps from step {}, out_dir {}{}", summary.parameters,
      name_of(run.device), run.data->describe(), c.train.steps, run.step, out.string(),
      world > 1 ? fmt::format(", {} MPI ranks of {} rows", world, c.data.batch_size / world) : ""));
  summary.world_size = world;
  std::optional<GradientAllReduce> all_reduce;
  if (world > 1) all_reduce.emplace(run.model->parameters(), c.train.deterministic_reduce);
  double all_reduce_seconds = 0.0;  // summed over the steps of this process

  const StopSignals signals;
  const std::int64_t step_at_start = run.step;
  std::optional<std::filesystem::path> last_good;  // a checkpoint known to be finite
  if (!run.resumed_from.empty()) last_good = run.resumed_from;

  // Saves run.step unless a parameter or optimizer state is not finite; returns its name then.
  auto save = [&]() -> std::optional<std::string> {
    const Checkpoint state = snapshot(run);
    std::optional<std::string> bad = first_non_finite(state.params);
    if (!bad) bad = first_non_finite(state.optim);
    if (bad) return bad;
    const std::filesystem::path path = checkpoint_path(checkpoints, run.step);
    if (root) {
      run_files->save_checkpoint([&] { save_checkpoint(path, state); },
                                 [&](const std::string& line) { progress.message(line); });
      keep_last_checkpoints(checkpoints, static_cast<int>(c.train.keep_checkpoints));
    }
    barrier();  // every rank may read it back (a rollback) once it is complete
    last_good = path;
    return std::nullopt;
  };
  auto run_eval = [&](bool record) {
    const PrecisionScope precision(run.precision);
    const std::vector<EvalPoint> points =
        evaluate(model, *run.data, train_length, c.train.eval_batches,
                 [&] { return signals.requested() != 0; });
    if (points.empty()) {  // a stop request: the step's checkpoint is saved next
      say(fmt::format("relpos: the evaluation at step {} was cut short by {}", run.step,
                      signal_name(signals.requested())));
      return;
    }
    const EvalPoint& p = points.front();
    const bool has_answers = !std::isnan(p.accuracy);  // a task (train/answer_accuracy.h)
    if (record) {
      nlohmann::json record = {{"step", run.step},
                               {"val_loss", p.loss},
                               {"val_bpb", p.bits_per_byte},
                               {"val_ppl", p.perplexity}};
      if (has_answers) {
        record["val_accuracy"] = p.accuracy;
        record["val_exact_match"] = p.exact_match;
      }
      write_metrics(record);
    }
    say(fmt::format(
        "step {}: val loss {:.4f} ({:.3f} bits/byte){}", run.step, p.loss, p.bits_per_byte,
        has_answers
            ? fmt::format(", accuracy {:.4f}, exact match {:.4f}", p.accuracy, p.exact_match)
            : ""));
    summary.final_val_loss = p.loss;
  };
  // Stops the run, or (train.on_divergence=rollback) reloads the last good checkpoint with
  // half the learning rate. `step` counts from 1, as metrics and checkpoints do.
  auto diverged = [&](std::int64_t step, const std::string& what) {
    const bool rollback = c.train.on_divergence == "rollback";
    // Every rank reaches this alike: the loss, the norm and the parameters are global.
    if (!rollback || !last_good || run.lr_halvings >= c.train.max_rollbacks)
      fail_everywhere(
          "training diverged at step {}: {}{}; lower optim.lr or raise optim.grad_clip{}. {}", step,
          what,
          rollback ? fmt::format(" (after {} rollbacks, train.max_rollbacks={})", run.lr_halvings,
                                 c.train.max_rollbacks)
                   : "",
          rollback ? "" : ", or set train.on_divergence=rollback",
          last_good_text(last_good, checkpoints));
    const std::int64_t halvings = run.lr_halvings + 1;
    load_training_state(run, load_checkpoint(*last_good), *last_good);
    run.lr_halvings = halvings;
    const double scale = std::ldexp(1.0, -static_cast<int>(halvings));
    if (run_files) run_files->truncate_after(run.step, true);
    write_metrics({{"event", "rollback"},
                   {"step", run.step},
                   {"diverged_at", step},
                   {"reason", what},
                   {"lr_scale", scale},
                   {"rollback", halvings},
                   {"max_rollbacks", c.train.max_rollbacks}});
    say(fmt::format(
        "relpos: training diverged at step {} ({}); rolled back to {} (step {}) with the learning "
        "rate scaled by {} (rollback {} of {})",
        step, what, last_good->string(), run.step, scale, halvings, c.train.max_rollbacks));
  };
  auto summarize = [&](double loss, std::int64_t tokens_at_start) {
    summary.steps = run.step;
    summary.final_train_loss = loss;
    summary.wall_seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start_time).count();
    summary.tokens_per_second = static_cast<double>(run.tokens_seen - tokens_at_start) /
                                std::max(summary.wall_seconds, 1e-9);
    summary.peak_rss_bytes = peak_rss_bytes();
    summary.peak_tensor_bytes = allocator_for(run.device).stats().peak_bytes;
    const std::int64_t steps_run = run.step - step_at_start;
    summary.all_reduce_seconds_per_step =
        steps_run > 0 ? all_reduce_seconds / static_cast<double>(steps_run) : 0.0;
    if (root) write_summary(out, summary);
  };

  auto window_start = std::chrono::steady_clock::now();
  std::int64_t window_tokens = 0;
  double window_all_reduce_seconds = 0.0;
  std::int64_t window_steps = 0;
  const std::int64_t tokens_at_start = run.tokens_seen;
  double loss_value = std::numeric_limits<double>::quiet_NaN();  // none trained yet
  while (run.step < c.train.steps) {
    const double lr = schedule(run.step) * std::ldexp(1.0, -static_cast<int>(run.lr_halvings));
    run.optimizer->zero_grad();
    model.set_dropout_seed(mix64(c.train.seed, static_cast<std::uint64_t>(run.step) + 3));
    loss_value = 0.0;
    for (std::int64_t micro = 0; micro < c.optim.grad_accum; ++micro) {
      const Batch batch = run.data->next_train();  // the global batch, (B, L)
      if (c.model.attention_chunk.dynamic)
        model.set_attention_chunk_size(
            dynamic_chunk_size(c.train.seed, run.step, micro, c.model.attention_chunk.size));
      Tensor loss;
      const PrecisionScope precision(run.precision);  // the backward repeats the forward's
      if (world == 1) {
        if (batch.starts_streams) {  // the rows' texts start over: no earlier text to recall
          run.memory.clear();
          run.knn_memory.clear();
        }
        const Tensor logits =  // (B, L, V)
            forward_segment(model, batch.inputs.to(run.device), run.memory, c.train.mem_len,
                            c.model.knn_memory.enabled() ? &run.knn_memory : nullptr);
        loss = cross_entropy(logits, batch.targets.to(run.device), kIgnoreTarget);
      } else {
        // This rank's rows, (B/N, L): its summed loss over the global batch's scored
        // targets, so that the ranks' losses (and gradients) add up to the global mean.
        const Batch mine = rank_rows(batch, rank(), world);
        const Tensor logits = model.forward(mine.inputs.to(run.device));  // (B/N, L, V)
        loss = cross_entropy(logits, mine.targets.to(run.device), kIgnoreTarget, Reduction::sum) *
               (1.0 / static_cast<double>(std::max<std::int64_t>(1, scored_targets(batch))));
      }
      if (c.optim.grad_accum > 1) loss = loss * (1.0 / static_cast<double>(c.optim.grad_accum));
      loss_value += loss.item();
      backward(loss);
      window_tokens += batch.inputs.numel();
      run.tokens_seen += batch.inputs.numel();
    }
    model.set_attention_chunk_size(c.model.attention_chunk.size);  // evaluation's chunks
    int stop_signal = 0;
    if (all_reduce) {
      stop_signal = signals.requested();
      const double seconds = all_reduce->sum(run.optimizer->parameters());
      // The loss and the stop request travel together: every rank stops at the same step.
      std::array<double, 2> step_values{loss_value, stop_signal != 0 ? 1.0 : 0.0};
      all_reduce_sum(step_values, c.train.deterministic_reduce);
      loss_value = step_values[0];
      if (stop_signal == 0 && step_values[1] > 0) stop_signal = SIGTERM;
      all_reduce_seconds += seconds;
      window_all_reduce_seconds += seconds;
    }
    const double grad_norm = gradient_norm(run.optimizer->parameters(), c.optim.grad_clip);
    if (!std::isfinite(loss_value) || !std::isfinite(grad_norm)) {
      diverged(run.step + 1, fmt::format("loss {}, gradient norm {}", loss_value, grad_norm));
      continue;
    }
    run.optimizer->step(lr);
    if (const auto bad = first_non_finite(parameter_map(model))) {
      diverged(run.step + 1,
               fmt::format("the update made {} non-finite (loss {}, gradient norm {})", *bad,
                           loss_value, grad_norm));
      continue;
    }
    ++run.step;
    ++window_steps;

    if (run.step % c.train.log_every == 0 || run.step == c.train.steps) {
      const double seconds =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - window_start).count();
      const double tps = static_cast<double>(window_tokens) / std::max(seconds, 1e-9);
      nlohmann::json record = {
          {"step", run.step},       {"loss", loss_value},  {"lr", lr},
          {"grad_norm", grad_norm}, {"tokens_per_s", tps}, {"tokens", run.tokens_seen}};
      if (world > 1) {
        record["world_size"] = world;
        record["all_reduce_s_per_step"] =
            window_all_reduce_seconds / static_cast<double>(window_steps);
      }
      write_metrics(record);
      if (root) progress.update(run.step, loss_value, lr, tps);
      window_start = std::chrono::steady_clock::now();
      window_tokens = 0;
      window_all_reduce_seconds = 0.0;
      window_steps = 0;
    }
    if (run.step % c.train.eval_every == 0 || run.step == c.train.steps) run_eval(true);
    if (!all_reduce) stop_signal = signals.requested();
    if (stop_signal != 0 || run.step % c.train.checkpoint_every == 0 || run.step == c.train.steps) {
      if (const auto bad = save()) {
        diverged(run.step, fmt::format("{} is not finite, so it cannot be saved", *bad));
        continue;
      }
    }
    if (stop_signal != 0) {
      if (root) progress.finish();
      summarize(loss_value, tokens_at_start);
      throw StopRequested(
          stop_signal,
          fmt::format(
              "stopped by {} after step {} of {}: saved {} and {}; continue with --resume {}",
              signal_name(stop_signal), run.step, c.train.steps, last_good->string(),
              (out / "summary.json").string(), out.string()));
    }
  }
  if (root) progress.finish();
  if (world > 1) {
    const Checkpoint state = snapshot(run);
    std::uint64_t hash = state_hash(state.params);
    hash ^= state_hash(state.optim) * 31;
    hash = require_same_state_on_all_ranks(hash);
    say(
        fmt::format("relpos: all {} ranks hold the same parameters and optimizer state (hash "
                    "{:#018x})",
                    world, hash));
  }
  // Resumed at or past the last step: nothing trained, but the summary still reports the
  // model's validation loss (metrics.jsonl already holds it).
  if (run.step == step_at_start) run_eval(false);
  summarize(loss_value, tokens_at_start);
  return summary;
}

}  // namespace relpos
