#include "data/data_source.h"

#include <fmt/format.h>

#include <algorithm>

#include "autograd/error.h"
#include "data/masking.h"

namespace relpos {
namespace {

// Independent generator streams derived from the one config seed.
constexpr std::uint64_t kTrainStream = 0x747261696e;   // "train"
constexpr std::uint64_t kEvalStream = 0x6576616c;      // "eval"
constexpr std::uint64_t kEvalMaskStream = 0x6d61736b;  // "mask"
constexpr std::uint64_t kStreamRotation = 0x726f74;    // "rot"

// The rotation of stream_segment for training batch `index` (data.stream_offsets): 0
// throughout the first pass over the streams, and with "redrawn" a seeded offset in
// [0, size) for each later pass, a function of (seed, pass) alone, so a resumed run
// continues bit-exactly.
std::int64_t stream_rotation(const DataConfig& config, std::size_t size, std::uint64_t index) {
  const auto segments =
      static_cast<std::uint64_t>(stream_segments_per_row(size, config.seq_len, config.batch_size));
  if (config.stream_offsets == "fixed" || segments == 0) return 0;  // 0: stream_segment refuses
  const std::uint64_t pass = index / segments;
  if (pass == 0) return 0;
  return static_cast<std::int64_t>(mix64(mix64(config.seed, kStreamRotation), pass) % size);
}

}  // namespace

DataSource::DataSource(const DataConfig& config)
    : config_(config), rng_(mix64(config.seed, kTrainStream)) {
  require(config.seq_len >= 1, "data seq_len must be >= 1, got {}", config.seq_len);
  require(config.batch_size >= 1, "data batch_size must be >= 1, got {}", config.batch_size);
  require(!config.masked_tokens || (config.mask_prob > 0.0 && config.mask_prob < 1.0),
          "data mask_prob must be in (0, 1), got {}", config.mask_prob);
}

Batch DataSource::next_train() {
  Batch batch = draw_train(rng_);
  if (config_.masked_tokens) mask_tokens(batch, config_.mask_prob, rng_);
  ++batches_drawn_;
  return batch;
}

std::vector<Batch> DataSource::eval_batches(std::int64_t seq_len, std::int64_t count,
                                            std::int64_t stride) const {
  require(seq_len >= 1, "eval seq_len must be >= 1, got {}", seq_len);
  require(count >= 0, "eval batch count must be >= 0, got {}", count);
  require(stride >= 0 && stride <= seq_len,
          "eval stride must be in [0, {}] (0: the length), got {}", seq_len, stride);
  require(!config_.masked_tokens || stride == 0 || stride == seq_len,
          "eval stride {} < length {}: sliding windows score the next token, but the model is "
          "bidirectional (masked-token objective)",
          stride, seq_len);
  std::vector<Batch> batches = draw_eval(seq_len, count, stride);
  if (config_.masked_tokens) {
    Rng rng(mix64(config_.seed, kEvalMaskStream));
    for (Batch& batch : batches) mask_tokens(batch, config_.mask_prob, rng);
  }
  return batches;
}

const Tokenizer& DataSource::tokenizer() const {
  static const ByteTokenizer bytes;
  return config_.tokenizer ? *config_.tokenizer : bytes;
}

std::string DataSource::describe() const {
  if (!config_.masked_tokens) return describe_source();
  return fmt::format("{}; masked-token objective (mask_prob {})", describe_source(),
                     config_.mask_prob);
}

void DataSource::set_sampler_state(const SamplerState& state) {
  rng_.set_state(state.rng);
  batches_drawn_ = state.batches_drawn;
}

std::int64_t DataSource::whole_eval_batches(std::int64_t seq_len, std::int64_t sequences,
                                            std::int64_t stride) const {
  require(sequences >= 1, "eval sequences must be >= 1, got {}", sequences);
  const std::int64_t rows = eval_rows(seq_len);
  const std::int64_t windows = eval_windows(seq_len, stride).value_or(sequences);
  return (windows + rows - 1) / rows;
}

std::int64_t DataSource::eval_rows(std::int64_t seq_len) const {
  return std::max<std::int64_t>(1, config_.batch_size * config_.seq_len / seq_len);
}

CorpusSource::CorpusSource(const DataConfig& config, const std::string& path)
    : DataSource(config), corpus_(load_corpus(path, config.val_fraction, tokenizer())) {
  require_enough(corpus_, Split::train, config.seq_len, config.batch_size);
  require_enough(corpus_, Split::validation, config.seq_len, config.batch_size);
}

Batch CorpusSource::draw_train(Rng& rng) {
  if (config().stream_order)
    return stream_segment(
        corpus_.train, config().seq_len, config().batch_size, sampler_state().batches_drawn,
        stream_rotation(config(), corpus_.train.size(), sampler_state().batches_drawn));
  return random_windows(corpus_.train, config().seq_len, config().batch_size, rng);
}

std::vector<Batch> CorpusSource::draw_eval(std::int64_t seq_len, std::int64_t count,
                                           std::int64_t stride) const {
  const std::int64_t rows = eval_rows(seq_len);
  require_enough(corpus_, Split::validation, seq_len, rows);
  return sequential_windows(corpus_.validation, seq_len, rows, count, stride);
}

std::optional<std::int64_t> CorpusSource::eval_windows(std::int64_t seq_len,
                                                       std::int64_t stride) const {
  return sequential_window_count(corpus_.validation.size(), seq_len, stride);
}

std::string CorpusSource::describe_source() const {
  return fmt::format("corpus {}: {} train + {} validation {}{}", corpus_.path, corpus_.train.size(),
                     corpus_.validation.size(), config().tokenizer ? "tokens" : "bytes",
                     config().stream_order ? ", read as contiguous streams" : "");
}

TaskSource::TaskSource(const DataConfig& config, TaskKind kind)
    : DataSource(config), generator_(kind, config.task, config.seq_len) {
  require(!config.stream_order,
          "data.source={}: a synthetic task has no contiguous text streams (train.mem_len needs "
          "a text corpus)",
          config.source);
}

Batch TaskSource::draw_train(Rng& rng) {
  return generator_.batch(config().seq_len, config().batch_size, rng);
}

std::vector<Batch> TaskSource::draw_eval(std::int64_t seq_len, std::int64_t count,
                                         std::int64_t stride) const {
  require(stride == 0 || stride == seq_len,
          "eval stride {}: data.source={} is a synthetic task of independent sequences; sliding "
          "windows need a text corpus",
          stride, config().source);
  Rng rng(mix64(config().seed, kEvalStream));
  std::vector<Batch> batches;
  for (std::int64_t i = 0; i < count; ++i)
    batches.push_back(generator_.batch(seq_len, eval_rows(seq_len), rng));
  return batches;
}

std::optional<std::int64_t> TaskSource::eval_windows(std::int64_t, std::int64_t) const {
  return std::nullopt;
}

std::string TaskSource::describe_source() const {
  const TaskParams& p = config().task;
  std::string items;
  if (p.min_items != TaskParams{}.min_items || p.max_items != TaskParams{}.max_items)
    items = fmt::format(", items {}..{}", p.min_items, p.max_items);
  return fmt::format("task {}: num_symbols {}, offset {}, num_pairs {}{}",
                     name_of(generator_.kind()), p.num_symbols, p.offset, p.num_pairs, items);
}

std::string corpus_file(const DataConfig& config) {
  if (config.source == "corpus") return bundled_corpus_path();
  if (config.source == "austen") return bundled_corpus_path("austen.txt");
  return task_from_name(config.source) ? std::string() : config.source;
}

std::unique_ptr<DataSource> make_source(const DataConfig& config) {
  if (const auto kind = task_from_name(config.source))
    return std::make_unique<TaskSource>(config, *kind);
  return std::make_unique<CorpusSource>(config, corpus_file(config));
}

}  // namespace relpos
