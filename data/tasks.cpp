#include "data/tasks.h"

#include <algorithm>
#include <array>
#include <numeric>
#include <vector>

#include "autograd/error.h"

namespace relpos {
namespace {

constexpr std::array<std::string_view, 4> kTaskNames = {"copy", "reverse", "offset_lookup",
                                                        "associative_recall"};

// One row under construction: seq_len + 1 tokens, where tokens[p] is the
// target of input position p − 1 when scored[p] is set (next-token tasks).
struct Sequence {
  std::vector<std::int64_t> tokens;
  std::vector<bool> scored;

  explicit Sequence(std::int64_t seq_len)
      : tokens(seq_len + 1, kFiller), scored(seq_len + 1, false) {}

  void write(Batch& batch, std::int64_t row) const {
    const std::int64_t seq_len = batch.inputs.size(1);
    std::int64_t* inputs = batch.inputs.data<std::int64_t>() + row * seq_len;
    std::int64_t* targets = batch.targets.data<std::int64_t>() + row * seq_len;
    for (std::int64_t t = 0; t < seq_len; ++t) {
      inputs[t] = tokens[t];
      targets[t] = scored[t + 1] ? tokens[t + 1] : kIgnoreTarget;
    }
  }
};

std::int64_t uniform_in(Rng& rng, std::int64_t low, std::int64_t high) {  // [low, high]
  return low + static_cast<std::int64_t>(rng.below(static_cast<std::uint64_t>(high - low + 1)));
}

std::int64_t random_symbol(Rng& rng, std::int64_t num_symbols) {
  return kTaskAlphabet[uniform_in(rng, 0, num_symbols - 1)];
}

// copy / reverse: x (n symbols), '|', x or reversed x, then filler; the answer is scored.
Sequence copy_sequence(std::int64_t seq_len, std::int64_t n, bool reversed,
                       std::int64_t num_symbols, Rng& rng) {
  Sequence s(seq_len);
  for (std::int64_t i = 0; i < n; ++i) s.tokens[i] = random_symbol(rng, num_symbols);
  s.tokens[n] = kSeparator;
  for (std::int64_t i = 0; i < n; ++i) {
    const std::int64_t answer = n + 1 + i;
    s.tokens[answer] = s.tokens[reversed ? n - 1 - i : i];
    s.scored[answer] = true;
  }
  return s;
}

// associative_recall: filler, P pairs "k v" with distinct keys, filler, '?',
// then P queries "k v" with keys drawn from the pairs; the queried values are scored.
Sequence recall_sequence(std::int64_t seq_len, std::int64_t pairs, std::int64_t num_symbols,
                         Rng& rng) {
  Sequence s(seq_len);
  std::vector<std::int64_t> keys(num_symbols);
  std::iota(keys.begin(), keys.end(), 0);
  for (std::int64_t i = 0; i < pairs; ++i)  // partial Fisher-Yates: the first `pairs` keys
    std::swap(keys[i], keys[uniform_in(rng, i, num_symbols - 1)]);
  std::vector<std::int64_t> values(pairs);
  for (auto& value : values) value = random_symbol(rng, num_symbols);

  const std::int64_t gap = seq_len - 4 * pairs;
  std::int64_t p = uniform_in(rng, 0, gap);  // filler before the pairs
  for (std::int64_t i = 0; i < pairs; ++i) {
    s.tokens[p++] = kTaskAlphabet[keys[i]];
    s.tokens[p++] = values[i];
  }
  p = seq_len - 2 * pairs;  // the rest of the gap is filler
  s.tokens[p++] = kQueryMark;
  for (std::int64_t q = 0; q < pairs; ++q) {
    const std::int64_t pick = uniform_in(rng, 0, pairs - 1);
    s.tokens[p++] = kTaskAlphabet[keys[pick]];
    s.tokens[p] = values[pick];
    s.scored[p++] = true;
  }
  return s;
}

// offset_lookup: random symbols; the target at position t is the input at t − offset.
void write_offset_row(Batch& batch, std::int64_t row, std::int64_t offset, std::int64_t num_symbols,
                      Rng& rng) {
  const std::int64_t seq_len = batch.inputs.size(1);
  std::int64_t* inputs = batch.inputs.data<std::int64_t>() + row * seq_len;
  std::int64_t* targets = batch.targets.data<std::int64_t>() + row * seq_len;
  for (std::int64_t t = 0; t < seq_len; ++t) {
    inputs[t] = random_symbol(rng, num_symbols);
    targets[t] = t >= offset ? inputs[t - offset] : kIgnoreTarget;
  }
}

}  // namespace

std::optional<TaskKind> task_from_name(std::string_view name) {
  for (std::size_t i = 0; i < kTaskNames.size(); ++i)
    if (kTaskNames[i] == name) return static_cast<TaskKind>(i);
  return std::nullopt;
}

std::string_view name_of(TaskKind kind) { return kTaskNames[static_cast<std::size_t>(kind)]; }

TaskGenerator::TaskGenerator(TaskKind kind, TaskParams params, std::int64_t train_seq_len)
    : kind_(kind), params_(params), train_seq_len_(train_seq_len) {
  validate(train_seq_len);
}

void TaskGenerator::validate_items() const {
  const std::string_view task = name_of(kind_);
  require(params_.min_items >= 1, "task {}: parameter min_items must be >= 1, got {}", task,
          params_.min_items);
  require(
      params_.max_items == 0 || params_.max_items >= params_.min_items,
      "task {}: parameter max_items must be 0 (floor(seq_len / 2)) or >= min_items = {}, got {}",
      task, params_.min_items, params_.max_items);
  require(longest_trained() <= train_seq_len_ / 2 && params_.min_items <= longest_trained(),
          "task {}: parameters min_items {} and max_items {} need 2 × the longest string <= the "
          "training seq_len {} (a string, '|' and its answer)",
          task, params_.min_items, params_.max_items, train_seq_len_);
}

void TaskGenerator::require_default_items() const {
  require(
      params_.min_items == TaskParams{}.min_items && params_.max_items == TaskParams{}.max_items,
      "task {}: parameters min_items and max_items apply to copy and reverse only, got {} and {}",
      name_of(kind_), params_.min_items, params_.max_items);
}

void TaskGenerator::validate(std::int64_t seq_len) const {
  const std::string_view task = name_of(kind_);
  const auto max_symbols = static_cast<std::int64_t>(kTaskAlphabet.size());
  require(params_.num_symbols >= 2 && params_.num_symbols <= max_symbols,
          "task {}: parameter num_symbols must be in [2, {}], got {}", task, max_symbols,
          params_.num_symbols);
  switch (kind_) {
    case TaskKind::copy:
    case TaskKind::reverse:
      require(seq_len >= 2, "task {}: seq_len must be >= 2 (a string, '|' and its answer), got {}",
              task, seq_len);
      validate_items();
      break;
    case TaskKind::offset_lookup:
      require_default_items();
      require(params_.offset >= 1 && params_.offset < seq_len,
              "task {}: parameter offset must be in [1, seq_len - 1] = [1, {}], got {}", task,
              seq_len - 1, params_.offset);
      break;
    case TaskKind::associative_recall:
      require_default_items();
      require(params_.num_pairs >= 1 && params_.num_pairs <= params_.num_symbols,
              "task {}: parameter num_pairs must be in [1, num_symbols] = [1, {}] (keys are "
              "distinct), got {}",
              task, params_.num_symbols, params_.num_pairs);
      require(4 * params_.num_pairs <= seq_len,
              "task {}: parameter num_pairs {} needs seq_len >= 4 × num_pairs = {}, got seq_len {}",
              task, params_.num_pairs, 4 * params_.num_pairs, seq_len);
      break;
  }
}

std::int64_t TaskGenerator::longest_trained() const {
  return params_.max_items > 0 ? params_.max_items : train_seq_len_ / 2;
}

Batch TaskGenerator::batch(std::int64_t seq_len, std::int64_t rows, Rng& rng) const {
  validate(seq_len);
  require(rows >= 1, "task {}: rows must be >= 1, got {}", name_of(kind_), rows);
  // copy / reverse string lengths: the training range cut to what fits, or only unseen
  // ones beyond the training length.
  const bool beyond = seq_len > train_seq_len_;
  const std::int64_t longest = beyond ? seq_len / 2 : std::min(longest_trained(), seq_len / 2);
  const std::int64_t shortest =
      std::min(beyond ? longest_trained() + 1 : params_.min_items, longest);
  Batch batch = empty_batch(rows, seq_len);
  for (std::int64_t row = 0; row < rows; ++row) {
    switch (kind_) {
      case TaskKind::copy:
      case TaskKind::reverse:
        copy_sequence(seq_len, uniform_in(rng, shortest, longest), kind_ == TaskKind::reverse,
                      params_.num_symbols, rng)
            .write(batch, row);
        break;
      case TaskKind::offset_lookup:
        write_offset_row(batch, row, params_.offset, params_.num_symbols, rng);
        break;
      case TaskKind::associative_recall:
        recall_sequence(seq_len, params_.num_pairs, params_.num_symbols, rng).write(batch, row);
        break;
    }
  }
  return batch;
}

}  // namespace relpos
