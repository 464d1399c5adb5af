#pragma once
// Synthetic tasks where position matters, generated on the fly from a seeded Rng.
// Every sequence is drawn from the symbol alphabet (the first num_symbols
// characters of kTaskAlphabet) plus a few marker characters; tokens are the
// characters' byte values, so batches decode to readable text. Only the answer
// positions carry targets; the rest are kIgnoreTarget. docs/data.md gives the
// exact formats.
#include <cstdint>
#include <optional>
#include <string_view>

#include "autograd/random.h"
#include "data/batch.h"

namespace relpos {

enum class TaskKind { copy, reverse, offset_lookup, associative_recall };

// "copy", "reverse", "offset_lookup", "associative_recall"; nullopt for other names.
std::optional<TaskKind> task_from_name(std::string_view name);
std::string_view name_of(TaskKind kind);

inline constexpr std::string_view kTaskAlphabet =
    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
inline constexpr char kSeparator = '|';  // copy, reverse: between the string and its answer
inline constexpr char kQueryMark = '?';  // associative_recall: starts the queries
inline constexpr char kFiller = '.';     // padding that is never scored

struct TaskParams {
  std::int64_t num_symbols = 16;  // alphabet size, 2..62 (every task)
  std::int64_t offset = 8;        // offset_lookup: how many positions back the target lies
  std::int64_t num_pairs = 8;     // associative_recall: key-value pairs, and as many queries
  // copy, reverse: the training range of string lengths n (items before '|'); max_items 0
  // means floor(L/2), the longest that fits. Evaluation beyond the training length draws
  // n from (max_items, floor(Le/2)] only.
  std::int64_t min_items = 1;
  std::int64_t max_items = 0;
};

class TaskGenerator {
 public:
  // Validates the parameters at the training length (UsageError naming the parameter).
  TaskGenerator(TaskKind kind, TaskParams params, std::int64_t train_seq_len);

  // `rows` sequences of seq_len positions. seq_len may differ from the training
  // length; the parameters are validated against it as well. For copy and
  // reverse, a seq_len up to the training length draws string lengths from the
  // training range (cut to what fits), and a longer one only string lengths
  // longer than any seen in training. Rows are right-padded with kFiller, which is
  // never scored.
  Batch batch(std::int64_t seq_len, std::int64_t rows, Rng& rng) const;

  TaskKind kind() const { return kind_; }

 private:
  void validate(std::int64_t seq_len) const;
  void validate_items() const;           // copy, reverse: min_items and max_items
  void require_default_items() const;    // the other tasks leave them unset
  std::int64_t longest_trained() const;  // copy, reverse: the largest n of the training range

  TaskKind kind_;
  TaskParams params_;
  std::int64_t train_seq_len_;
};

}  // namespace relpos
