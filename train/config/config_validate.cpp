// validate(RunConfig): the checks no single key's type can express. Each
// message names the key(s) and the offending value(s).
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>

#include "autograd/error.h"
#include "data/masking.h"
#include "layers/attention_temperature.h"
#include "layers/position/registry.h"
#include "train/config/config.h"
#include "train/config/config_schema.h"
#include "train/config/config_value.h"
#include "train/config/memory_estimate.h"

namespace relpos {
namespace {

void require_at_least(std::int64_t value, std::int64_t minimum, const char* key) {
  require(value >= minimum, "{} must be >= {}, got {}", key, minimum, value);
}

void require_at_most(std::int64_t value, std::int64_t maximum, const char* key) {
  require(value <= maximum, "{} must be <= {}, got {}", key, maximum, value);
}

// Values set by code rather than parsed are checked against the schema's choices too.
void validate_choices(const RunConfig& config) {
  for (const ConfigKey& key : config_schema()) {
    if (key.choices.empty()) continue;
    const std::string value = config_value_text(key, config);
    require(std::find(key.choices.begin(), key.choices.end(), value) != key.choices.end(),
            "{} must be one of {}, got '{}'", key.path, fmt::join(key.choices, ", "), value);
  }
}

// model.attention_chunk (docs/streaming.md).
void validate_attention_chunk(const ModelConfig& m) {
  const AttentionChunkConfig& c = m.attention_chunk;
  require_at_least(c.size, 0, "model.attention_chunk.size");
  require_at_least(c.left_chunks, -1, "model.attention_chunk.left_chunks");
  if (c.size == 0) {
    require(c.left_chunks == -1,
            "model.attention_chunk.left_chunks={} needs a chunk: set "
            "model.attention_chunk.size >= 1",
            c.left_chunks);
    require(!c.dynamic,
            "model.attention_chunk.dynamic=true needs the largest chunk: set "
            "model.attention_chunk.size >= 1");
    return;
  }
  require(!m.causal,
          "model.attention_chunk.size={} is for bidirectional encoders: it needs "
          "model.causal=false (a causal model already sees no later position)",
          c.size);
}

// model.attention_window: [], [W] or one W per layer; a window is causal.
void validate_attention_window(const ModelConfig& m) {
  const auto& w = m.attention_window;
  require(w.size() <= 1 || static_cast<std::int64_t>(w.size()) == m.n_layers,
          "model.attention_window: a list of {} entries, expected [] (none), [W] (every layer) or "
          "one per layer (model.n_layers={})",
          w.size(), m.n_layers);
  for (std::size_t l = 0; l < w.size(); ++l) {
    require(w[l] >= 0 && w[l] <= (std::int64_t{1} << 24),
            "model.attention_window[{}] must be in [0, 2^24] (0: no window), got {}", l, w[l]);
    require(w[l] == 0 || m.causal,
            "model.attention_window[{}]={}: a sliding window needs model.causal=true (a "
            "bidirectional model uses model.attention_chunk instead)",
            l, w[l]);
  }
}

void validate_model(const ModelConfig& m) {
  require_at_least(m.vocab, 1, "model.vocab");
  require_at_least(m.d_model, 1, "model.d_model");
  require_at_least(m.n_layers, 1, "model.n_layers");
  require_at_most(m.n_layers, kMaxLayers, "model.n_layers");
  require_at_least(m.n_heads, 1, "model.n_heads");
  require_at_least(m.d_ff, 1, "model.d_ff");
  require(m.d_model % m.n_heads == 0, "model.d_model={} must be divisible by model.n_heads={}",
          m.d_model, m.n_heads);
  require(m.dropout >= 0.0 && m.dropout < 1.0, "model.dropout must be in [0, 1), got {}",
          m.dropout);
  require(m.causal || m.vocab >= kMaskedVocabSize,
          "model.vocab={} is too small for model.causal=false: the masked-token objective adds the "
          "mask token id {}, so model.vocab must be >= {} (left unset, model.vocab follows "
          "model.causal)",
          m.vocab, kMaskToken, kMaskedVocabSize);
  validate_attention_chunk(m);
  validate_attention_window(m);
  validate_attention_temperature(m.attention_temperature, m.causal);
}

// model.knn_memory: checked whether or not a layer is chosen (the sizes have defaults).
void validate_knn_memory(const ModelConfig& m) {
  const KnnMemoryConfig& k = m.knn_memory;
  require(k.layer >= -1 && k.layer < m.n_layers,
          "model.knn_memory.layer must be -1 (none) or in [0, model.n_layers) = [0, {}), got {}",
          m.n_layers, k.layer);
  require_at_least(k.size, 1, "model.knn_memory.size");
  require_at_least(k.top_k, 1, "model.knn_memory.top_k");
  require(k.top_k <= k.size, "model.knn_memory.top_k={} must be <= model.knn_memory.size={}",
          k.top_k, k.size);
}

// The table sizes of the chosen scheme (registry.h, size_keys).
void validate_position_sizes(const PositionConfig& p) {
  for (const auto& [key, limit] : find_position_scheme(p.scheme)->size_keys) {
    const std::string path = "model.position." + key;
    require_at_most(p.get<std::int64_t>(key), limit, path.c_str());
  }
}

// The settings of the chosen scheme only: the others are unused.
void validate_scheme(const PositionConfig& p, const RunConfig& config) {
  validate_position_sizes(p);
  const PositionSchemeEntry* entry = find_position_scheme(p.scheme);
  if (entry->validate)
    entry->validate(p, {model_dims(config.model), config.data.seq_len, config.eval.lengths});
}

// Every layer's scheme; a per-layer list (model.position as a list) has one entry per
// layer and no absolute scheme (its term is added to the embeddings, before any layer).
void validate_position(const RunConfig& config) {
  const ModelConfig& m = config.model;
  if (m.layer_positions.empty()) return validate_scheme(m.position, config);
  require(static_cast<std::int64_t>(m.layer_positions.size()) == m.n_layers,
          "model.position: a list of {} entries, expected one per layer (model.n_layers={})",
          m.layer_positions.size(), m.n_layers);
  for (std::size_t l = 0; l < m.layer_positions.size(); ++l) {
    const PositionConfig& p = m.layer_positions[l];
    require(!find_position_scheme(p.scheme)->absolute,
            "model.position[{}]: the scheme '{}' adds its term to the token embeddings, before "
            "any layer, so it cannot be chosen per layer",
            l, p.scheme);
    try {
      validate_scheme(p, config);
    } catch (const UsageError& e) {
      fail("model.position[{}]: {}", l, e.what());
    }
  }
}

void validate_data(const DataConfig& d) {
  require(!d.source.empty(), "data.source must not be empty");
  require_at_least(d.seq_len, 2, "data.seq_len");
  require_at_least(d.batch_size, 1, "data.batch_size");
  require(d.val_fraction > 0.0 && d.val_fraction < 1.0,
          "data.val_fraction must be in (0, 1), got {}", d.val_fraction);
  require(d.mask_prob > 0.0 && d.mask_prob < 1.0, "data.mask_prob must be in (0, 1), got {}",
          d.mask_prob);
}

// data.tokenizer: a SentencePiece model reads a text corpus for a causal model (the
// masked-token objective and the tasks are byte-level).
void validate_tokenizer(const RunConfig& c) {
  const DataConfig& d = c.data;
  if (d.tokenizer_kind == "bytes") {
    require(d.tokenizer_model.empty(),
            "data.tokenizer.model='{}' is set but data.tokenizer.kind is bytes (set "
            "data.tokenizer.kind: sentencepiece to use it)",
            d.tokenizer_model);
    return;
  }
  require(!d.tokenizer_model.empty(),
          "data.tokenizer.kind=sentencepiece needs data.tokenizer.model, a .model file");
  require(c.model.causal,
          "data.tokenizer.kind=sentencepiece needs model.causal=true (the masked-token "
          "objective is byte-level)");
  require(!task_from_name(d.source).has_value(),
          "data.tokenizer.kind=sentencepiece needs a text corpus, not the task '{}'", d.source);
}

// data.stream_offsets moves contiguous streams; a run of random windows has none.
void validate_stream_offsets(const RunConfig& c) {
  require(c.data.stream_offsets == "fixed" || c.train.mem_len > 0 || c.model.knn_memory.enabled(),
          "data.stream_offsets={} needs contiguous training streams (train.mem_len > 0 or a "
          "model.knn_memory layer); random windows have no stream offsets",
          c.data.stream_offsets);
}

void validate_task(const DataConfig& d, bool causal) {
  const bool item_range =
      d.task.min_items != TaskParams{}.min_items || d.task.max_items != TaskParams{}.max_items;
  require(causal || !item_range,
          "data.task.min_items={}, data.task.max_items={}: a length range needs model.causal=true "
          "(a bidirectional model would attend to the filler that pads the shorter strings)",
          d.task.min_items, d.task.max_items);
  if (const auto kind = task_from_name(d.source)) {
    try {
      TaskGenerator(*kind, d.task, d.seq_len);  // checks the parameters at the training length
    } catch (const UsageError& e) {
      fail("data.task (data.source={}, data.seq_len={}): {}", d.source, d.seq_len, e.what());
    }
  }
}

void validate_optim(const OptimConfig& o, const ScheduleConfig& s, std::int64_t steps) {
  require(o.lr > 0.0, "optim.lr must be > 0, got {}", o.lr);
  require(o.beta1 >= 0.0 && o.beta1 < 1.0, "optim.beta1 must be in [0, 1), got {}", o.beta1);
  require(o.beta2 >= 0.0 && o.beta2 < 1.0, "optim.beta2 must be in [0, 1), got {}", o.beta2);
  require(o.eps > 0.0, "optim.eps must be > 0, got {}", o.eps);
  require(o.weight_decay >= 0.0, "optim.weight_decay must be >= 0, got {}", o.weight_decay);
  require(std::isfinite(o.position_lr_scale) && o.position_lr_scale >= 0.0,
          "optim.position_lr_scale must be finite and >= 0, got {}", o.position_lr_scale);
  require(o.momentum >= 0.0 && o.momentum < 1.0, "optim.momentum must be in [0, 1), got {}",
          o.momentum);
  require(o.grad_clip >= 0.0, "optim.grad_clip must be >= 0 (0 disables clipping), got {}",
          o.grad_clip);
  require_at_least(o.grad_accum, 1, "optim.grad_accum");
  require(s.min_lr >= 0.0 && s.min_lr <= o.lr,
          "schedule.min_lr={} must be in [0, optim.lr] = [0, {}]", s.min_lr, o.lr);
  require(s.warmup_steps >= 0 && s.warmup_steps <= steps,
          "schedule.warmup_steps={} must be in [0, train.steps] = [0, {}]", s.warmup_steps, steps);
}

void validate_training(const TrainingConfig& t, const EvalConfig& e) {
  require_at_least(t.steps, 1, "train.steps");
  require_at_least(t.log_every, 1, "train.log_every");
  require_at_least(t.eval_every, 1, "train.eval_every");
  require_at_least(t.eval_batches, 1, "train.eval_batches");
  require_at_least(t.checkpoint_every, 1, "train.checkpoint_every");
  require_at_least(t.keep_checkpoints, 0, "train.keep_checkpoints");
  require_at_least(t.max_rollbacks, 0, "train.max_rollbacks");
  require_at_least(t.mem_len, 0, "train.mem_len");
  require_at_most(t.mem_len, std::int64_t{1} << 20, "train.mem_len");
  require_at_least(t.threads, 0, "train.threads");
  require_at_most(t.threads, kMaxThreads, "train.threads");
  require(!t.out_dir.empty(), "train.out_dir must not be empty");
  for (std::size_t i = 0; i < e.lengths.size(); ++i) {
    require(e.lengths[i] >= 2, "eval.lengths[{}] must be >= 2, got {}", i, e.lengths[i]);
  }
}

}  // namespace

void validate(const RunConfig& config) {
  validate_choices(config);
  validate_model(config.model);
  validate_knn_memory(config.model);
  validate_stream_offsets(config);
  if (config.model.layer_positions.empty()) validate_position_sizes(config.model.position);
  validate_data(config.data);
  validate_tokenizer(config);
  validate_training(config.train, config.eval);
  validate_optim(config.optim, config.schedule, config.train.steps);
  // Before the checks that build something from the sizes (a scheme's, a task's).
  require_bounded_sizes(config);
  validate_position(config);
  validate_task(config.data, config.model.causal);
}

void validate_recurrence(const RunConfig& c) {
  if (c.train.mem_len == 0) return;
  for (std::int64_t l = 0; l < c.model.n_layers; ++l) {
    const PositionConfig& p = layer_position(c.model, l);
    require(!find_position_scheme(p.scheme)->absolute,
            "train.mem_len={} needs a relative model.position.scheme (xl, t5, shaw, alibi, rope, "
            "kerple or none), not the absolute '{}'",
            c.train.mem_len, p.scheme);
    // Randomized positions are drawn anew each step, so they would not line up with the
    // remembered segment's.
    require(p.get<std::int64_t>("randomized_max_len") == 0,
            "train.mem_len={} cannot be used with model.position.randomized_max_len (positions "
            "drawn anew each step do not line up with the remembered segment)",
            c.train.mem_len);
  }
  require(c.model.causal, "train.mem_len={} needs model.causal: true", c.train.mem_len);
  require(!c.model.attention_temperature.reads_positions(),
          "train.mem_len={} cannot be used with model.attention_temperature.kind=log_length (it "
          "reads absolute query positions, which segment memory does not keep)",
          c.train.mem_len);
  require(!task_from_name(c.data.source),
          "train.mem_len={} needs a text corpus as data.source, not the synthetic task '{}'",
          c.train.mem_len, c.data.source);
}

void validate_knn_data(const RunConfig& c) {
  if (!c.model.knn_memory.enabled()) return;
  require(!task_from_name(c.data.source),
          "model.knn_memory.layer={} needs a text corpus as data.source (read as contiguous "
          "streams), not the synthetic task '{}'",
          c.model.knn_memory.layer, c.data.source);
}

}  // namespace relpos
