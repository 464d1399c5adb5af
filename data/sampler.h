#pragma once
// Batches of windows cut from a token stream: random windows for training,
// drawn from a seeded, resumable stream; sequential windows for evaluation; and
// contiguous streams, one per batch row, read segment by segment (Transformer-XL).
#include <cstdint>
#include <span>
#include <vector>

#include "autograd/random.h"
#include "data/batch.h"
#include "data/token_sequence.h"

namespace relpos {

// Everything a training stream needs to continue bit-exactly after a restore.
struct SamplerState {
  Rng::State rng{};                 // the generator every training batch is drawn from
  std::uint64_t batches_drawn = 0;  // training batches drawn so far

  // As 5 words (rng[0..3], batches_drawn) for a checkpoint attribute, and back;
  // a word count other than 5, or 4 generator words all 0, is a UsageError.
  std::vector<std::uint64_t> to_words() const;
  static SamplerState from_words(std::span<const std::uint64_t> words);
  bool operator==(const SamplerState&) const = default;
};

// `batch_size` windows of seq_len + 1 consecutive tokens, each starting at a
// uniform offset in [0, size − seq_len − 1]; inputs = window[0..L),
// targets = window[1..L] (the next token at every position).
// Needs tokens.size() > seq_len (callers check with require_enough).
Batch random_windows(const TokenSequence& tokens, std::int64_t seq_len, std::int64_t batch_size,
                     Rng& rng);

// Windows in order, one every `stride` tokens (0: stride = seq_len, non-overlapping):
// window k has inputs tokens[kS, kS+L) and targets tokens[kS+1, kS+L+1). With S = L
// every target is scored; with S < L (sliding windows, Press et al. 2022, Appendix B)
// the first window scores all its targets and every later one only its last S, the
// others set to kIgnoreTarget, so each token after the first is scored exactly once,
// with at least L − S tokens of context from the second window on. Consecutive windows
// form batches of `rows`; at most `max_batches` batches, the last one possibly with
// fewer rows; a partial window is never produced. Needs 1 <= S <= L.
std::vector<Batch> sequential_windows(const TokenSequence& tokens, std::int64_t seq_len,
                                      std::int64_t rows, std::int64_t max_batches,
                                      std::int64_t stride = 0);
// The windows sequential_windows cuts from `tokens` (no batch limit): 0 when fewer than
// seq_len + 1 tokens, else (tokens − 1 − L) / S + 1.
std::int64_t sequential_window_count(std::size_t tokens, std::int64_t seq_len, std::int64_t stride);

// Segment `index` of `rows` contiguous streams: the tokens are cut into `rows`
// equal parts of P = (size − 1) / rows tokens, and row r of the batch holds
// segment (index mod S) of part r, S = P / seq_len: inputs part[sL, sL+L),
// targets one token later. Consecutive indices give each row consecutive text
// (it starts over after its last whole segment). Needs S >= 1.
// `rotation` (in [0, size)) moves every stream's start that many tokens on, reading
// the tokens as a ring (after the last token comes the first): the same streams cut
// at other places. 0 reads exactly as described above, never across the ring's end.
Batch stream_segment(const TokenSequence& tokens, std::int64_t seq_len, std::int64_t rows,
                     std::uint64_t index, std::int64_t rotation = 0);

// Segments per row of stream_segment: (size − 1) / rows / seq_len.
std::int64_t stream_segments_per_row(std::size_t tokens, std::int64_t seq_len, std::int64_t rows);

}  // namespace relpos
