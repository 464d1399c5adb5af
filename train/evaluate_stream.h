#pragma once
// Segment-recurrent evaluation (Transformer-XL): the validation text cut into one
// contiguous stream per row and read segment by segment, each layer attending to up
// to mem_len hidden states of the segments before. The loss against both the segment
// length and the memory length; memory 0 is plain windows.
#include <cstdint>
#include <span>
#include <vector>

#include "data/token_sequence.h"
#include "data/tokenizer.h"
#include "layers/transformer.h"

namespace relpos {

struct StreamEvalPoint {
  std::int64_t length = 0;    // segment length L
  std::int64_t mem_len = 0;   // memory M
  std::int64_t knn_size = 0;  // the kNN memory's size S; 0 without a kNN layer
  double loss = 0.0;          // mean cross-entropy, nats per scored token
  double perplexity = 0.0;
  double bits_per_byte = 0.0;
  std::int64_t tokens = 0;  // scored tokens
};

// In inference mode, for every (length, mem_len): `rows` streams of `tokens`
// (stream_segment in data/sampler.h), their first `segments` segments in order (all
// of them when fewer), every token of them scored. For one length, every mem_len
// scores the same tokens. A UsageError when a stream cannot hold one segment.
// A model with a kNN layer (model.knn_memory) also carries a kNN memory along each
// stream, for every size in `knn_sizes` (empty: the model's model.knn_memory.size;
// 0: a memory that holds nothing, so the layer keeps its local attention). Bits per
// byte count the bytes `tokenizer` says the scored tokens stand for.
std::vector<StreamEvalPoint> evaluate_streams(TransformerLM& model, const TokenSequence& tokens,
                                              const std::vector<std::int64_t>& lengths,
                                              const std::vector<std::int64_t>& mem_lens,
                                              std::int64_t rows, std::int64_t segments,
                                              const std::vector<std::int64_t>& knn_sizes = {},
                                              const Tokenizer& tokenizer = ByteTokenizer());

}  // namespace relpos
