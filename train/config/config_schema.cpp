#include "train/config/config_schema.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "layers/attention_temperature.h"
#include "layers/position/registry.h"

namespace relpos {
namespace {

using F = ConfigField;

std::vector<ConfigKey> model_keys() {
  return {
      // ---- model ----
      {"model.vocab",
       {},
       "vocabulary size: 256 bytes, plus the mask token (id 256) when model.causal is false; when "
       "not set: 256, or 257 for a bidirectional model, or the pieces of data.tokenizer's "
       "SentencePiece model",
       [](RunConfig& c) -> F { return &c.model.vocab; }},
      {"model.d_model",
       {},
       "model width; a multiple of model.n_heads",
       [](RunConfig& c) -> F { return &c.model.d_model; }},
      {"model.n_layers",
       {},
       "number of Transformer blocks",
       [](RunConfig& c) -> F { return &c.model.n_layers; }},
      {"model.n_heads",
       {},
       "attention heads per block",
       [](RunConfig& c) -> F { return &c.model.n_heads; }},
      {"model.d_ff",
       {},
       "hidden width of each block's MLP",
       [](RunConfig& c) -> F { return &c.model.d_ff; }},
      {"model.dropout",
       {},
       "dropout probability on the attention and MLP outputs, in [0, 1)",
       [](RunConfig& c) -> F { return &c.model.dropout; }},
      {"model.norm",
       {"layernorm", "rmsnorm"},
       "normalisation layer (pre-norm blocks)",
       [](RunConfig& c) -> F { return &c.model.norm; }},
      {"model.tie_embeddings",
       {},
       "the LM head reuses the token embedding matrix",
       [](RunConfig& c) -> F { return &c.model.tie_embeddings; }},
      {"model.causal",
       {},
       "causal (left-to-right) attention mask",
       [](RunConfig& c) -> F { return &c.model.causal; }},
      {"model.attention",
       {"flash", "fused", "composed"},
       "attention kernel: flash (tiled, no L x L; CPU), fused (L x L scores, one softmax "
       "kernel) or composed of primitive ops (slowest; the reference)",
       [](RunConfig& c) -> F { return &c.model.attention_path; }},
      {"model.attention_window",
       {},
       "causal sliding-window attention: query i sees keys i - W < j <= i. []: none; [W]: every "
       "layer; or one W per layer (0: that layer sees every earlier position)",
       [](RunConfig& c) -> F { return &c.model.attention_window; }},
      {"model.attention_temperature.kind", attention_temperature_kinds(),
       "a factor on every query (docs/position-schemes.md, \"Attention temperature\"): none; "
       "log_length: ln(n) / ln(train_len) for the query at 1-based position n; learned: exp(t_h), "
       "t a zero-initialised parameter per head and layer",
       [](RunConfig& c) -> F { return &c.model.attention_temperature.kind; }},
      {"model.attention_temperature.train_len",
       {},
       "L_train of log_length; 0 (unset): data.seq_len, stored in the resolved config so that "
       "evaluation at other lengths keeps the training length",
       [](RunConfig& c) -> F { return &c.model.attention_temperature.train_len; }},
      {"model.attention_chunk.size",
       {},
       "chunked streaming attention (docs/streaming.md), bidirectional models only: positions "
       "per chunk; each query sees its own chunk and earlier ones. 0: full attention",
       [](RunConfig& c) -> F { return &c.model.attention_chunk.size; }},
      {"model.attention_chunk.left_chunks",
       {},
       "earlier chunks each query sees, -1 for all (needs model.attention_chunk.size)",
       [](RunConfig& c) -> F { return &c.model.attention_chunk.left_chunks; }},
      {"model.attention_chunk.dynamic",
       {},
       "dynamic chunk training: each batch draws its chunk size uniformly from 1 to "
       "model.attention_chunk.size; evaluation uses model.attention_chunk.size",
       [](RunConfig& c) -> F { return &c.model.attention_chunk.dynamic; }},
      {"model.knn_memory.layer",
       {},
       "the block whose attention also retrieves from a kNN memory (docs/knn-memory.md), in "
       "[0, model.n_layers); -1: no kNN memory",
       [](RunConfig& c) -> F { return &c.model.knn_memory.layer; }},
      {"model.knn_memory.size",
       {},
       "S: (key, value) pairs of earlier segments the kNN memory keeps per batch row",
       [](RunConfig& c) -> F { return &c.model.knn_memory.size; }},
      {"model.knn_memory.top_k",
       {},
       "K: pairs each query retrieves from the kNN memory, in [1, model.knn_memory.size]",
       [](RunConfig& c) -> F { return &c.model.knn_memory.top_k; }},
  };
}

// model.position.scheme and every key of the registered schemes (layers/position/registry.h).
std::vector<ConfigKey> position_schema() {
  std::vector<ConfigKey> keys{{"model.position.scheme", position_scheme_names(),
                               "position scheme (docs/position-schemes.md)",
                               [](RunConfig& c) -> F { return &c.model.position.scheme; }}};
  for (const PositionKey& k : position_keys()) {
    const std::string name = k.key.name;
    keys.push_back({"model.position." + name, k.key.choices,
                    fmt::format("{}: {}", fmt::join(k.schemes, ", "), k.key.meaning),
                    [name](RunConfig& c) -> F {
                      return std::visit([](auto& value) -> F { return &value; },
                                        c.model.position.at(name));
                    }});
  }
  return keys;
}

std::vector<ConfigKey> run_keys() {
  return {
      // ---- data ----
      {"data.source",
       {},
       "'corpus' (the bundled KJV), 'austen' (the bundled Jane Austen novels), a task (copy, "
       "reverse, offset_lookup, associative_recall) or a text file path",
       [](RunConfig& c) -> F { return &c.data.source; }},
      {"data.tokenizer.kind",
       {"bytes", "sentencepiece"},
       "how text becomes tokens: bytes (256 ids), or a SentencePiece model (a text corpus and a "
       "causal model only; model.vocab follows it)",
       [](RunConfig& c) -> F { return &c.data.tokenizer_kind; }},
      {"data.tokenizer.model",
       {},
       "data.tokenizer.kind sentencepiece: the .model file (relpos tokenizer train writes one); "
       "copied into the run folder and into every checkpoint",
       [](RunConfig& c) -> F { return &c.data.tokenizer_model; }},
      {"data.seq_len",
       {},
       "training window length L",
       [](RunConfig& c) -> F { return &c.data.seq_len; }},
      {"data.batch_size",
       {},
       "sequences per batch B",
       [](RunConfig& c) -> F { return &c.data.batch_size; }},
      {"data.val_fraction",
       {},
       "corpus: the last fraction of the bytes held out for evaluation",
       [](RunConfig& c) -> F { return &c.data.val_fraction; }},
      {"data.stream_offsets",
       {"fixed", "redrawn"},
       "segment-recurrent training (train.mem_len > 0, the kNN memory): fixed, every pass over "
       "the corpus cuts the same streams and segments; redrawn, each pass after the first "
       "starts every stream at a new seeded offset",
       [](RunConfig& c) -> F { return &c.data.stream_offsets; }},
      {"data.mask_prob",
       {},
       "bidirectional models (model.causal: false): probability that a position is hidden and "
       "scored (masked-token objective), in (0, 1)",
       [](RunConfig& c) -> F { return &c.data.mask_prob; }},
      {"data.task.num_symbols",
       {},
       "tasks: alphabet size, 2..62",
       [](RunConfig& c) -> F { return &c.data.task.num_symbols; }},
      {"data.task.offset",
       {},
       "offset_lookup: how many positions back the target lies",
       [](RunConfig& c) -> F { return &c.data.task.offset; }},
      {"data.task.num_pairs",
       {},
       "associative_recall: key-value pairs (and as many queries)",
       [](RunConfig& c) -> F { return &c.data.task.num_pairs; }},
      {"data.task.min_items",
       {},
       "copy, reverse: shortest string in training (variable-length tasks)",
       [](RunConfig& c) -> F { return &c.data.task.min_items; }},
      {"data.task.max_items",
       {},
       "copy, reverse: longest string in training, 0 = floor(data.seq_len / 2); evaluation "
       "beyond data.seq_len draws only longer strings",
       [](RunConfig& c) -> F { return &c.data.task.max_items; }},
      // ---- optim ----
      {"optim.name",
       {"sgd", "adam", "adamw"},
       "optimizer",
       [](RunConfig& c) -> F { return &c.optim.name; }},
      {"optim.lr", {}, "peak learning rate", [](RunConfig& c) -> F { return &c.optim.lr; }},
      {"optim.beta1",
       {},
       "adam, adamw: first-moment decay",
       [](RunConfig& c) -> F { return &c.optim.beta1; }},
      {"optim.beta2",
       {},
       "adam, adamw: second-moment decay",
       [](RunConfig& c) -> F { return &c.optim.beta2; }},
      {"optim.eps",
       {},
       "adam, adamw: denominator epsilon",
       [](RunConfig& c) -> F { return &c.optim.eps; }},
      {"optim.weight_decay",
       {},
       "weight decay (adamw: decoupled; adam, sgd: added to the gradient); never on norms, biases "
       "or position tables",
       [](RunConfig& c) -> F { return &c.optim.weight_decay; }},
      {"optim.momentum", {}, "sgd: momentum", [](RunConfig& c) -> F { return &c.optim.momentum; }},
      {"optim.nesterov",
       {},
       "sgd: Nesterov momentum",
       [](RunConfig& c) -> F { return &c.optim.nesterov; }},
      {"optim.grad_clip",
       {},
       "clip the global L2 norm of the gradients to this; 0: no clipping",
       [](RunConfig& c) -> F { return &c.optim.grad_clip; }},
      {"optim.position_lr_scale",
       {},
       "the position parameters' learning rate is lr times this (docs/config.md lists them); 0 "
       "freezes them",
       [](RunConfig& c) -> F { return &c.optim.position_lr_scale; }},
      {"optim.grad_accum",
       {},
       "micro-batches per step; their gradients are averaged",
       [](RunConfig& c) -> F { return &c.optim.grad_accum; }},
      // ---- schedule ----
      {"schedule.name",
       {"constant", "warmup_cosine", "warmup_linear"},
       "learning-rate schedule",
       [](RunConfig& c) -> F { return &c.schedule.name; }},
      {"schedule.warmup_steps",
       {},
       "steps of linear warmup up to optim.lr",
       [](RunConfig& c) -> F { return &c.schedule.warmup_steps; }},
      {"schedule.min_lr",
       {},
       "final learning rate of the decaying schedules, in [0, optim.lr]",
       [](RunConfig& c) -> F { return &c.schedule.min_lr; }},
      // ---- train ----
      {"train.steps", {}, "optimizer steps", [](RunConfig& c) -> F { return &c.train.steps; }},
      {"train.log_every",
       {},
       "steps between progress lines and metrics records",
       [](RunConfig& c) -> F { return &c.train.log_every; }},
      {"train.eval_every",
       {},
       "steps between evaluations",
       [](RunConfig& c) -> F { return &c.train.eval_every; }},
      {"train.eval_batches",
       {},
       "batches per evaluation and length",
       [](RunConfig& c) -> F { return &c.train.eval_batches; }},
      {"train.checkpoint_every",
       {},
       "steps between checkpoints",
       [](RunConfig& c) -> F { return &c.train.checkpoint_every; }},
      {"train.keep_checkpoints",
       {},
       "most recent checkpoints kept; 0: keep all",
       [](RunConfig& c) -> F { return &c.train.keep_checkpoints; }},
      {"train.on_divergence",
       {"stop", "rollback"},
       "when the loss or the state turns NaN/Inf: stop, or reload the last good checkpoint and "
       "halve the learning rate",
       [](RunConfig& c) -> F { return &c.train.on_divergence; }},
      {"train.max_rollbacks",
       {},
       "most rollbacks of a run (train.on_divergence=rollback) before it stops",
       [](RunConfig& c) -> F { return &c.train.max_rollbacks; }},
      {"train.mem_len",
       {},
       "segment recurrence: hidden states of the previous segments each layer attends to "
       "(no gradient); batches become contiguous streams; 0: independent random windows",
       [](RunConfig& c) -> F { return &c.train.mem_len; }},
      {"train.seed",
       {},
       "seed of every random stream (initialisation, data, dropout)",
       [](RunConfig& c) -> F { return &c.train.seed; }},
      {"train.threads",
       {},
       "CPU threads; 0: all cores",
       [](RunConfig& c) -> F { return &c.train.threads; }},
      {"train.device",
       {"cpu", "cuda"},
       "where the model runs",
       [](RunConfig& c) -> F { return &c.train.device; }},
      {"train.precision",
       {"fp32", "bf16"},
       "precision of the matrix products: fp32, or bf16 operands with f32 accumulation (CPU "
       "with AVX-512-BF16 or AMX, oneDNN build; docs/bf16.md)",
       [](RunConfig& c) -> F { return &c.train.precision; }},
      {"train.deterministic_reduce",
       {},
       "with several MPI ranks: sum gradients in rank order on rank 0 (bit-identical run to run, "
       "slower) instead of MPI_Allreduce",
       [](RunConfig& c) -> F { return &c.train.deterministic_reduce; }},
      {"train.out_dir",
       {},
       "directory for checkpoints, metrics and plots",
       [](RunConfig& c) -> F { return &c.train.out_dir; }},
      // ---- eval ----
      {"eval.lengths",
       {},
       "evaluation lengths (length extrapolation); []: the training length only",
       [](RunConfig& c) -> F { return &c.eval.lengths; }},
  };
}

// Optimal string alignment distance: insertions, deletions, substitutions and
// transpositions of adjacent characters each cost 1.
std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::vector<std::size_t>> d(a.size() + 1, std::vector<std::size_t>(b.size() + 1));
  for (std::size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (std::size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) {
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
      }
    }
  }
  return d[a.size()][b.size()];
}

std::string_view last_component(std::string_view path) {
  const auto dot = path.rfind('.');
  return dot == std::string_view::npos ? path : path.substr(dot + 1);
}

// Every key path and every section path ("model", "model.position", ...).
std::vector<std::string> config_paths() {
  std::vector<std::string> paths;
  for (const ConfigKey& key : config_schema()) {
    for (auto dot = key.path.find('.'); dot != std::string::npos;
         dot = key.path.find('.', dot + 1)) {
      const std::string section = key.path.substr(0, dot);
      if (std::find(paths.begin(), paths.end(), section) == paths.end()) paths.push_back(section);
    }
    paths.push_back(key.path);
  }
  return paths;
}

}  // namespace

std::string closest_config_path(std::string_view path) {
  std::string best;
  std::size_t best_distance = std::string::npos;
  for (const std::string& candidate : config_paths()) {
    const std::size_t distance = edit_distance(path, candidate);
    if (distance < best_distance) {
      best = candidate;
      best_distance = distance;
    }
  }
  if (best_distance <= std::max<std::size_t>(2, path.size() / 4)) return best;
  for (const std::string& candidate : config_paths()) {
    if (last_component(candidate) == last_component(path)) return candidate;
  }
  return "";
}

const std::vector<ConfigKey>& config_schema() {
  static const std::vector<ConfigKey> schema = [] {
    std::vector<ConfigKey> keys = model_keys();
    for (auto* part : {position_schema, run_keys})
      for (ConfigKey& key : part()) keys.push_back(std::move(key));
    return keys;
  }();
  return schema;
}

const ConfigKey* find_config_key(std::string_view path) {
  const auto& schema = config_schema();
  const auto it = std::find_if(schema.begin(), schema.end(),
                               [&](const ConfigKey& key) { return key.path == path; });
  return it == schema.end() ? nullptr : &*it;
}

bool is_config_section(std::string_view path) {
  return std::any_of(config_schema().begin(), config_schema().end(), [&](const ConfigKey& key) {
    return key.path.size() > path.size() && key.path.starts_with(path) &&
           key.path[path.size()] == '.';
  });
}

}  // namespace relpos
