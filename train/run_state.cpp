#include "train/run_state.h"

#include <fmt/format.h>

#include <algorithm>
#include <iostream>

#include "autograd/error.h"
#include "autograd/ops/shape.h"
#include "autograd/tape.h"
#include "autograd/threads.h"
#include "optim/adam.h"
#include "optim/sgd.h"
#include "train/config/config_schema.h"
#include "train/config/config_value.h"
#include "train/config/memory_estimate.h"
#include "train/config/run_tokenizer.h"
#include "train/device_placement.h"
#include "train/distributed/distributed.h"
#include "train/knn_state.h"
#include "train/store/checkpoint_folder.h"
#include "train/train_precision.h"

namespace relpos {

std::vector<ConfigChange> config_changes(const RunConfig& before, const RunConfig& after) {
  std::vector<ConfigChange> changes;
  const auto& was_layers = before.model.layer_positions;
  const auto& is_layers = after.model.layer_positions;
  const bool per_layer = !was_layers.empty() || !is_layers.empty();
  for (const ConfigKey& key : config_schema()) {
    if (per_layer && key.path.starts_with("model.position.")) continue;  // compared below
    std::string was = config_value_text(key, before), is = config_value_text(key, after);
    if (was != is) changes.push_back({key.path, std::move(was), std::move(is)});
  }
  if (!per_layer) return changes;
  // Per-layer schemes (model.position as a list): layer by layer, key by key.
  if (was_layers.size() != is_layers.size()) {
    changes.push_back(
        {"model.position", position_label(before.model), position_label(after.model)});
    return changes;
  }
  RunConfig was_entry = before, is_entry = after;
  for (std::size_t l = 0; l < was_layers.size(); ++l) {
    was_entry.model.position = was_layers[l];
    is_entry.model.position = is_layers[l];
    for (const ConfigKey& key : config_schema()) {
      if (!key.path.starts_with("model.position.")) continue;
      std::string was = config_value_text(key, was_entry), is = config_value_text(key, is_entry);
      if (was != is)
        changes.push_back({fmt::format("model.position[{}].{}", l, key.path.substr(15)),
                           std::move(was), std::move(is)});
    }
  }
  return changes;
}

std::map<std::string, Tensor> parameter_map(const TransformerLM& model) {
  std::map<std::string, Tensor> out;
  for (const NamedParameter& p : model.parameters()) out[p.name] = p.tensor;
  return out;
}

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

// A resume may change anything but the model's shape and parameters; RoPE's context
// extension (model.position.rope_scaling.*, or model.position[l].rope_scaling.* of a
// per-layer list) changes how positions are read, not the model.
bool is_architecture_key(const std::string& path) {
  const bool rope_scaling =
      path.starts_with("model.position") && path.find(".rope_scaling.") != std::string::npos;
  return path.starts_with("model.") && path != "model.dropout" && path != "model.attention" &&
         !rope_scaling;
}

// The settings in which `now` differs from `saved`, the config of checkpoint `source`; a
// UsageError naming `what` (e.g. "a resume") when one of them is architecture.
std::vector<ConfigChange> changes_from(const RunConfig& saved, const RunConfig& now,
                                       const std::filesystem::path& source,
                                       const std::string& what) {
  std::vector<ConfigChange> changes = config_changes(saved, now);
  for (const ConfigChange& change : changes)
    require(!is_architecture_key(change.key),
            "checkpoint {}: {} cannot change the architecture, but {} was {} and is now {}; "
            "compare with `relpos inspect {}`",
            source.string(), what, change.key, change.before, change.after, source.string());
  return changes;
}

// The settings in which the run's config differs from a checkpoint's saved one.
std::vector<ConfigChange> changes_since(const RunState& run, const std::string& saved_yaml,
                                        const std::filesystem::path& source,
                                        const std::string& what = "a resume") {
  const RunConfig saved = config_from_yaml(saved_yaml, source.string() + " (saved config)");
  return changes_from(saved, run.config, source, what);
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

RunState build_run(const RunConfig& config, const std::string& tokenizer_model,
                   const std::string& tokenizer_origin) {
  validate(config);
  validate_recurrence(config);
  validate_knn_data(config);
  require_fits_in_memory(config);  // before the model or the data is allocated
  const bool from_file = config.data.tokenizer_kind != "bytes" && tokenizer_model.empty();
  const std::string model_bytes =
      from_file ? read_tokenizer_model(config.data.tokenizer_model) : tokenizer_model;
  const std::shared_ptr<const Tokenizer> tokenizer = make_run_tokenizer(
      config, model_bytes,
      from_file ? "data.tokenizer.model '" + config.data.tokenizer_model + "'" : tokenizer_origin);
  const Precision precision = train_precision(config.train.precision, config.train.device);
  const Device device = train_device(config.train.device);
  if (config.train.threads > 0) set_num_threads(static_cast<int>(config.train.threads));
  RunState run;
  run.config = config;
  run.tokenizer_model = tokenizer ? model_bytes : "";
  run.device = device;
  run.precision = precision;
  Rng init(mix64(config.train.seed, 1));
  // Initialised on the CPU (the same values on every device), then moved.
  run.model = std::make_unique<TransformerLM>(config.model, init);
  require(config.train.mem_len == 0 || !run.model->positions_depend_on_length(),
          "train.mem_len={}: model.position.rope_scaling.kind=dynamic_ntk rotates every "
          "position by the sequence length, so earlier segments' hidden states cannot be "
          "reused; set train.mem_len: 0 or another rope_scaling.kind",
          config.train.mem_len);
  move_parameters(run.model->parameters(), device);
  // Refused here, before any step, when the device lacks the optimizer's kernel.
  std::vector<NamedParameter> parameters = run.model->parameters();
  for (NamedParameter& p : parameters)
    if (is_position_parameter(p.name)) p.lr_scale = config.optim.position_lr_scale;
  run.optimizer = make_optimizer(config.optim, std::move(parameters));
  DataConfig data = config.data;
  data.tokenizer = tokenizer;
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

}  // namespace

void restore_training_state(RunState& run, const Checkpoint& ckpt,
                            const std::filesystem::path& source, bool optimizer_state) {
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

void restore_run(RunState& run, const Checkpoint& ckpt, const std::filesystem::path& source) {
  run.config_changes = changes_since(run, ckpt.config_yaml, source);
  require(ckpt.tokenizer_model == run.tokenizer_model,
          "checkpoint {}: its tokenizer model differs from data.tokenizer.model '{}' (a resume "
          "cannot change the tokenizer; the run folder holds the run's copy, tokenizer.model)",
          source.string(), run.config.data.tokenizer_model);
  const bool new_optimizer =
      std::any_of(run.config_changes.begin(), run.config_changes.end(),
                  [](const ConfigChange& change) { return change.key == "optim.name"; });
  if (new_optimizer && is_root())
    std::cerr << fmt::format(
        "relpos: optim.name changed ({}): the optimizer starts with fresh state\n",
        run.config.optim.name);
  restore_training_state(run, ckpt, source, !new_optimizer);
  run.resumed_from = source;
}

void initialise_from(RunState& run, const std::filesystem::path& path) {
  const Checkpoint ckpt = load_checkpoint(
      path, [&](const std::string& config_yaml, const std::map<std::string, Shape>& shapes) {
        run.config_changes = changes_since(run, config_yaml, path, "--init-from");
        check_shapes_match(parameter_shapes(*run.model), shapes, path.string());
      });
  load_parameters(*run.model, ckpt, path);
  run.initialised_from = path;
}

Checkpoint load_checkpoint_for(const RunState& run, const std::filesystem::path& path) {
  return load_checkpoint(
      path, [&](const std::string& config_yaml, const std::map<std::string, Shape>& shapes) {
        changes_since(run, config_yaml, path);  // refuses an architecture change
        check_shapes_match(parameter_shapes(*run.model), shapes, path.string());
      });
}

RunState load_run_for_inference(const std::filesystem::path& path, const std::string& data_source,
                                const std::vector<std::string>& overrides) {
  RunConfig config;
  std::vector<ConfigChange> changes;
  // The model is built from the saved config, and the file's declared shapes are
  // checked against it, before any of the file's tensors is allocated.
  const auto check_saved_model = [&](const std::string& config_yaml,
                                     const std::map<std::string, Shape>& shapes) {
    const std::string origin = path.string() + " (saved config)";
    config = config_from_yaml(config_yaml, origin, overrides);
    if (!overrides.empty())
      changes = changes_from(config_from_yaml(config_yaml, origin), config, path, "--set");
    if (!data_source.empty()) config.data.source = data_source;
    config.train.device = "cpu";      // a checkpoint from a GPU run is usable on any machine
    config.train.precision = "fp32";  // and from a bf16 run on any CPU
    config.train.mem_len = 0;         // no training stream is read; eval --mem-len asks for memory
    config.data.stream_offsets = "fixed";  // so no training stream offset either
    validate(config);
    require_fits_in_memory(config);
    Rng init(0);
    check_shapes_match(parameter_shapes(TransformerLM(config.model, init)), shapes, path.string());
  };
  const Checkpoint ckpt = load_checkpoint(path, check_saved_model);
  require_finite_parameters(ckpt.params, path.string());
  // The run, with the checkpoint's copy of its tokenizer model (if any): the original
  // data.tokenizer.model file is not needed.
  RunState run = build_run(config, ckpt.tokenizer_model, path.string() + " (/tokenizer)");
  run.config_changes = std::move(changes);
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
  c.tokenizer_model = run.tokenizer_model;
  c.rng_states[kSamplerKey] = run.data->sampler_state().to_words();
  for (std::size_t l = 0; l < run.memory.size(); ++l)
    c.memory[std::to_string(l)] = run.memory[l].clone();
  save_knn_memory(run.knn_memory, c);
  if (run.lr_halvings > 0)
    c.rng_states[kLrHalvingsKey] = {static_cast<std::uint64_t>(run.lr_halvings)};
  return c;
}

std::filesystem::path resolve_checkpoint(const std::filesystem::path& path,
                                         const std::string& option) {
  require(std::filesystem::exists(path), "{}: '{}' does not exist", option, path.string());
  if (!std::filesystem::is_directory(path)) return path;
  for (const auto& dir : {path / "checkpoints", path}) {
    if (!std::filesystem::is_directory(dir)) continue;
    if (!latest_checkpoint(dir)) continue;
    const auto skipped = [](const std::string& line) { std::cerr << "relpos: " << line << "\n"; };
    if (auto verified = latest_verified_checkpoint(dir, skipped)) return *verified;
    fail("{}: no checkpoint in '{}' verifies against its digest", option, dir.string());
  }
  fail("{}: no checkpoint (ckpt_<step>.h5) found in '{}'", option, path.string());
}

}  // namespace relpos
