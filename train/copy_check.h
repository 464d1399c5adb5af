#pragma once
// The in-context copy check (docs/long-context.md, "The in-context copy check"): how much
// a model uses text it saw D tokens back. Each sequence is a span of N tokens of the
// validation text, the text that follows it up to D tokens from the span's start, and
// the span again; its control is the same sequence with the first span replaced by
// other validation text. The loss on the repeated span (after its first token) in the
// sequence against its control: the gain is what seeing the first occurrence is worth.
#include <cstdint>
#include <vector>

#include "autograd/random.h"
#include "data/batch.h"
#include "data/token_sequence.h"
#include "layers/transformer.h"

namespace relpos {

struct CopyCheckPoint {
  std::int64_t distance = 0;  // D: from each token of the first span to its repeat
  std::int64_t span = 0;      // N
  std::int64_t mem_len = 0;   // segment memory (with segments), else 0
  std::int64_t knn_size = 0;  // the kNN memory's size; 0 without one
  double loss_repeat = 0.0;   // nats per scored token on the repeated span
  double loss_control = 0.0;  // the same tokens with the first span replaced
  std::int64_t sequences = 0;
  std::int64_t tokens = 0;  // scored tokens per kind: sequences · (N − 1)
  double gain() const { return loss_control - loss_repeat; }
};

// `rows` copy sequences of distance D and span N (D >= N >= 2) and their controls, each
// (rows, D + N − 1) inputs and targets, the first span's offsets drawn from `rng`. Targets
// are kIgnoreTarget except the repeated span's tokens 1 .. N − 1 (inputs D .. D + N − 2).
struct CopyBatch {
  Batch repeat, control;
};
CopyBatch copy_batch(const TokenSequence& text, std::int64_t span, std::int64_t distance,
                     std::int64_t rows, Rng& rng);

// How a model reads each sequence: one window (segment 0), or segments of `segment`
// tokens in order with a segment memory of mem_len and, for a model with a kNN layer, a
// kNN memory of knn_size pairs (forward_segment), as segment-recurrent evaluation does.
struct CopyReading {
  std::int64_t segment = 0;
  std::int64_t mem_len = 0;
  std::int64_t knn_size = 0;
};

// The seed `relpos eval --copy-span` and a sweep's eval_copy draw the sequences from, so
// that every model is checked on the same ones.
inline constexpr std::uint64_t kCopyCheckSeed = 29;

// In inference mode, for each distance: `sequences` sequences (rounded up to whole
// batches of `rows`), drawn from `seed`: the same sequences for every model and reading.
std::vector<CopyCheckPoint> copy_check(TransformerLM& model, const TokenSequence& text,
                                       std::int64_t span,
                                       const std::vector<std::int64_t>& distances,
                                       std::int64_t sequences, std::int64_t rows,
                                       std::uint64_t seed, const CopyReading& reading = {});

}  // namespace relpos
