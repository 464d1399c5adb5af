#include "data/sampler.h"

#include <algorithm>

#include "autograd/error.h"

namespace relpos {
namespace {

// Writes the window starting at tokens[start] into row `row` of the batch.
void fill_row(Batch& batch, std::int64_t row, const TokenSequence& tokens, std::int64_t start) {
  const std::int64_t seq_len = batch.inputs.size(1);
  std::int64_t* inputs = batch.inputs.data<std::int64_t>() + row * seq_len;
  std::int64_t* targets = batch.targets.data<std::int64_t>() + row * seq_len;
  const auto at = static_cast<std::size_t>(start), count = static_cast<std::size_t>(seq_len);
  tokens.copy(at, count, inputs);
  tokens.copy(at + 1, count, targets);
}

// Tokens [start, start + count) of `tokens` read as a ring, into out[0 .. count).
void copy_ring(const TokenSequence& tokens, std::size_t start, std::size_t count,
               std::int64_t* out) {
  const std::size_t size = tokens.size();
  start %= size;
  while (count > 0) {
    const std::size_t run = std::min(count, size - start);
    tokens.copy(start, run, out);
    out += run;
    count -= run;
    start = 0;
  }
}

// fill_row for a window that may run past the last token into the first ones.
void fill_ring_row(Batch& batch, std::int64_t row, const TokenSequence& tokens,
                   std::int64_t start) {
  const std::int64_t seq_len = batch.inputs.size(1);
  const auto at = static_cast<std::size_t>(start), count = static_cast<std::size_t>(seq_len);
  copy_ring(tokens, at, count, batch.inputs.data<std::int64_t>() + row * seq_len);
  copy_ring(tokens, at + 1, count, batch.targets.data<std::int64_t>() + row * seq_len);
}

}  // namespace

std::vector<std::uint64_t> SamplerState::to_words() const {
  return {rng[0], rng[1], rng[2], rng[3], batches_drawn};
}

SamplerState SamplerState::from_words(std::span<const std::uint64_t> words) {
  require(words.size() == 5, "sampler state has {} words, expected 5 (4 generator words + count)",
          words.size());
  require(words[0] != 0 || words[1] != 0 || words[2] != 0 || words[3] != 0,
          "sampler state: its 4 generator words are all 0, a state the generator never leaves "
          "(every batch would be the same)");
  return {{words[0], words[1], words[2], words[3]}, words[4]};
}

Batch random_windows(const TokenSequence& tokens, std::int64_t seq_len, std::int64_t batch_size,
                     Rng& rng) {
  const auto size = static_cast<std::int64_t>(tokens.size());
  require(size > seq_len, "random_windows: {} tokens cannot hold a window of seq_len {} + 1", size,
          seq_len);
  Batch batch = empty_batch(batch_size, seq_len);
  for (std::int64_t row = 0; row < batch_size; ++row) {
    const auto start =
        static_cast<std::int64_t>(rng.below(static_cast<std::uint64_t>(size - seq_len)));
    fill_row(batch, row, tokens, start);
  }
  return batch;
}

std::vector<Batch> sequential_windows(const TokenSequence& tokens, std::int64_t seq_len,
                                      std::int64_t rows, std::int64_t max_batches,
                                      std::int64_t stride) {
  require(seq_len >= 1 && rows >= 1, "sequential_windows: seq_len {} and rows {} must be >= 1",
          seq_len, rows);
  if (stride == 0) stride = seq_len;
  require(stride >= 1 && stride <= seq_len, "sequential_windows: stride {} must be in [1, {}]",
          stride, seq_len);
  const std::int64_t windows = sequential_window_count(tokens.size(), seq_len, stride);
  const std::int64_t used = std::min(windows, rows * max_batches);
  std::vector<Batch> batches;
  for (std::int64_t first = 0; first < used; first += rows) {
    const std::int64_t count = std::min(rows, used - first);
    Batch batch = empty_batch(count, seq_len);
    std::int64_t* scored = batch.targets.data<std::int64_t>();  // (count, L)
    for (std::int64_t row = 0; row < count; ++row) {
      const std::int64_t window = first + row;
      fill_row(batch, row, tokens, window * stride);
      // Targets the window before scored already: all but its last `stride`.
      if (window > 0) std::fill_n(scored + row * seq_len, seq_len - stride, kIgnoreTarget);
    }
    batches.push_back(std::move(batch));
  }
  return batches;
}

std::int64_t sequential_window_count(std::size_t tokens, std::int64_t seq_len,
                                     std::int64_t stride) {
  if (stride == 0) stride = seq_len;
  const auto targets = std::max<std::int64_t>(0, static_cast<std::int64_t>(tokens) - 1);
  return targets < seq_len ? 0 : (targets - seq_len) / stride + 1;
}

std::int64_t stream_segments_per_row(std::size_t tokens, std::int64_t seq_len, std::int64_t rows) {
  require(seq_len >= 1 && rows >= 1, "stream segments: seq_len {} and rows {} must be >= 1",
          seq_len, rows);
  const auto part = std::max<std::int64_t>(0, static_cast<std::int64_t>(tokens) - 1) / rows;
  return part / seq_len;
}

Batch stream_segment(const TokenSequence& tokens, std::int64_t seq_len, std::int64_t rows,
                     std::uint64_t index, std::int64_t rotation) {
  const std::int64_t segments = stream_segments_per_row(tokens.size(), seq_len, rows);
  require(segments >= 1, "stream_segment: {} tokens cannot hold {} rows of seq_len {} + 1",
          tokens.size(), rows, seq_len);
  const auto size = static_cast<std::int64_t>(tokens.size());
  require(rotation >= 0 && rotation < size, "stream_segment: rotation {} outside [0, {})", rotation,
          size);
  const std::int64_t part = (size - 1) / rows;
  const auto segment = static_cast<std::int64_t>(index % static_cast<std::uint64_t>(segments));
  Batch batch = empty_batch(rows, seq_len);
  for (std::int64_t row = 0; row < rows; ++row) {
    const std::int64_t start = row * part + segment * seq_len;
    if (rotation == 0)
      fill_row(batch, row, tokens, start);
    else
      fill_ring_row(batch, row, tokens, start + rotation);
  }
  batch.starts_streams = segment == 0;
  return batch;
}

}  // namespace relpos
