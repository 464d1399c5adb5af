#pragma once
// Where training and evaluation batches come from: a text corpus or a synthetic task.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "autograd/random.h"
#include "data/batch.h"
#include "data/corpus.h"
#include "data/sampler.h"
#include "data/tasks.h"

namespace relpos {

// Filled by the config loader.
struct DataConfig {
  // "corpus" (the bundled KJV), "austen" (the bundled Austen novels), a task name (see
  // tasks.h), or a path to a text file.
  std::string source = "corpus";
  std::int64_t seq_len = 256;  // training window length L
  std::int64_t batch_size = 32;
  double val_fraction = 0.05;  // corpus: the last fraction of the bytes is validation
  TaskParams task;
  double mask_prob = 0.15;  // masked-token objective: probability that a position is hidden
  std::uint64_t seed = 0;
  // data.tokenizer.kind: "bytes" or "sentencepiece", whose model is the .model file
  // data.tokenizer.model (sentencepiece_tokenizer.h).
  std::string tokenizer_kind = "bytes";
  std::string tokenizer_model;
  // Not a config key: the tokenizer a text corpus is read with, built by the trainer from
  // the keys above or from a checkpoint's copy of the model; null: bytes.
  std::shared_ptr<const Tokenizer> tokenizer;
  // Not a config key: the trainer sets it for a bidirectional model (model.causal: false).
  // Every training and evaluation batch then becomes a masked-token batch (masking.h).
  bool masked_tokens = false;
  // Not a config key: training batches are contiguous streams, one per row, read in
  // order (stream_segment in sampler.h) instead of random windows. The trainer sets
  // it for segment-recurrent training (train.mem_len > 0); a feature that keeps state
  // from one batch to the next may set it too. Only a text corpus has streams.
  bool stream_order = false;
  // data.stream_offsets, for stream_order: "fixed" (every pass over the corpus cuts the
  // same streams and segments) or "redrawn" (each pass after the first rotates every
  // stream's start by a seeded offset, stream_segment's `rotation`).
  std::string stream_offsets = "fixed";
};

class DataSource {
 public:
  explicit DataSource(const DataConfig& config);
  virtual ~DataSource() = default;
  DataSource(const DataSource&) = delete;
  DataSource& operator=(const DataSource&) = delete;

  // The next training batch, i64 (batch_size, seq_len), from the resumable stream
  // (with masked_tokens, its masks are drawn from that stream too).
  Batch next_train();
  SamplerState sampler_state() const { return {rng_.state(), batches_drawn_}; }
  void set_sampler_state(const SamplerState& state);

  // Up to `count` evaluation batches at length seq_len (the training length or
  // another one, for length extrapolation). The same call always returns the
  // same batches. Each has eval_rows(seq_len) rows, so every length uses about
  // batch_size × train seq_len tokens per batch. With masked_tokens, the masks
  // come from a generator seeded afresh at each call. `stride` (a corpus only; 0: the
  // length) starts a window every `stride` tokens, each scoring only the tokens the
  // window before did not (sequential_windows in sampler.h).
  std::vector<Batch> eval_batches(std::int64_t seq_len, std::int64_t count,
                                  std::int64_t stride = 0) const;
  // The batches that hold the whole validation split of a corpus at seq_len (with
  // `stride`); for a task, those that hold at least `sequences` sequences.
  std::int64_t whole_eval_batches(std::int64_t seq_len, std::int64_t sequences,
                                  std::int64_t stride = 0) const;
  std::int64_t eval_rows(std::int64_t seq_len) const;

  std::string describe() const;
  // The tokenizer of the text (bytes for the synthetic tasks).
  const Tokenizer& tokenizer() const;  // one line for logs
  const DataConfig& config() const { return config_; }

 protected:
  // The batches of the source itself, before any masking.
  virtual Batch draw_train(Rng& rng) = 0;
  virtual std::vector<Batch> draw_eval(std::int64_t seq_len, std::int64_t count,
                                       std::int64_t stride) const = 0;
  // Windows (a corpus) or sequences (a task) in the whole validation data at seq_len;
  // nullopt when the source makes as many as asked for (a task).
  virtual std::optional<std::int64_t> eval_windows(std::int64_t seq_len,
                                                   std::int64_t stride) const = 0;
  virtual std::string describe_source() const = 0;

 private:
  DataConfig config_;
  Rng rng_;
  std::uint64_t batches_drawn_ = 0;
};

// Random windows (or, with stream_order, contiguous streams) of a text file for
// training; sequential windows of its validation split for evaluation.
class CorpusSource final : public DataSource {
 public:
  CorpusSource(const DataConfig& config, const std::string& path);
  const Corpus& corpus() const { return corpus_; }

 protected:
  Batch draw_train(Rng& rng) override;
  std::vector<Batch> draw_eval(std::int64_t seq_len, std::int64_t count,
                               std::int64_t stride) const override;
  std::optional<std::int64_t> eval_windows(std::int64_t seq_len,
                                           std::int64_t stride) const override;
  std::string describe_source() const override;

 private:
  Corpus corpus_;
};

// Fresh task sequences for training; evaluation sequences from a fixed seed
// derived from the config seed.
class TaskSource final : public DataSource {
 public:
  TaskSource(const DataConfig& config, TaskKind kind);

 protected:
  Batch draw_train(Rng& rng) override;
  std::vector<Batch> draw_eval(std::int64_t seq_len, std::int64_t count,
                               std::int64_t stride) const override;
  std::optional<std::int64_t> eval_windows(std::int64_t seq_len,
                                           std::int64_t stride) const override;
  std::string describe_source() const override;

 private:
  TaskGenerator generator_;
};

// "corpus" → the bundled KJV; "austen" → the bundled Austen novels; a task name → that
// task; anything else → a file path.
std::unique_ptr<DataSource> make_source(const DataConfig& config);
// The corpus file make_source reads for `config`; empty for a synthetic task.
std::string corpus_file(const DataConfig& config);

}  // namespace relpos
