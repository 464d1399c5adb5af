#pragma once
// The kNN memory of Memorizing Transformers (Wu et al. 2022): one attention layer
// also attends to the top-K keys retrieved from a non-differentiable memory of the
// last S (key, value) pairs of earlier segments, without any position term, and a
// learned per-head gate mixes that result with the local attention's
// (docs/knn-memory.md).
#include <cstdint>
#include <vector>

#include "layers/module.h"

namespace relpos {

// model.knn_memory.
struct KnnMemoryConfig {
  std::int64_t layer = -1;   // the block whose attention retrieves; -1: no kNN memory
  std::int64_t size = 2048;  // S: (key, value) pairs kept per batch row
  std::int64_t top_k = 32;   // K: pairs each query retrieves
  bool enabled() const { return layer >= 0; }
};

// The memory of the kNN layer: keys and values of earlier positions, oldest first,
// per batch row and head, without gradient.
class KnnMemory {
 public:
  explicit KnnMemory(std::int64_t size = 0) : size_(size) {}

  std::int64_t size() const { return size_; }
  std::int64_t length() const { return keys_.defined() ? keys_.size(2) : 0; }  // M <= size
  const Tensor& keys() const { return keys_; }                                 // (B, H, M, D)
  const Tensor& values() const { return values_; }                             // (B, H, M, D)
  // Per batch row, the first entry it may retrieve: entries before it belong to an
  // earlier document. Empty when the memory is.
  const std::vector<std::int64_t>& valid_from() const { return valid_from_; }

  // Appends a segment's keys and values (B, H, L, D), detached; keeps the last `size`.
  void append(const Tensor& keys, const Tensor& values);
  // Forgets every entry of every row.
  void clear();
  // A new document starts in batch row `row` with the next segment: the row forgets
  // its entries. (For a data source with document boundaries; the bundled ones have none.)
  void forget_row(std::int64_t row);
  // Replaces the contents, e.g. from a checkpoint; the shapes are checked.
  void restore(const Tensor& keys, const Tensor& values, std::vector<std::int64_t> valid_from);

 private:
  std::int64_t size_;
  Tensor keys_, values_;
  std::vector<std::int64_t> valid_from_;
};

// Attention of q over, for each query, the top_k memory entries by q·k / sqrt(D),
// with no position term. q (B, H, L, D); keys, values (B, H, M, D); hidden, if
// defined, u8 (B, 1, 1, M) marks entries no query may retrieve. -> (B, H, L, D).
// Every row must have at least one entry that is not hidden.
Tensor retrieve_top_k(const Tensor& q, const Tensor& keys, const Tensor& values,
                      const Tensor& hidden, std::int64_t top_k);

// The retrieval branch of the kNN layer and its gate: one parameter b (H), g = sigmoid(b).
class KnnRetrieval : public Module {
 public:
  KnnRetrieval(std::int64_t n_heads, std::int64_t top_k);

  // q (B, H, L, D): the layer's queries without position terms; local (B, H, L, D):
  // the local attention's result. -> (B, H, L, D): g·retrieved + (1 − g)·local per
  // head, where a batch row with nothing to retrieve keeps `local`.
  Tensor mix(const Tensor& q, const Tensor& local, const KnnMemory& memory) const;
  Tensor gate() const;  // g = sigmoid(b), (H)

 private:
  std::int64_t top_k_;
  Tensor gate_bias_;  // b (H), initially 0: g = 1/2
};

}  // namespace relpos
