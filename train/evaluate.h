#pragma once
// Validation loss of a model at one or more sequence lengths (the length-
// extrapolation curve). Losses are nats per scored token; bits per byte divide the
// summed loss by the bytes of text the scored tokens stand for (data.tokenizer), so
// they compare across tokenizers; for byte-level data bits per byte = loss / ln 2.
#include <functional>
#include <limits>
#include <vector>

#include "data/data_source.h"
#include "layers/transformer.h"

namespace relpos {

struct EvalPoint {
  std::int64_t length = 0;
  double loss = 0.0;        // mean cross-entropy, nats per scored token
  double perplexity = 0.0;  // exp(loss)
  double bits_per_byte = 0.0;
  std::int64_t tokens = 0;  // scored tokens
  std::int64_t bytes = 0;   // the bytes of text they stand for (= tokens for bytes)
  // On synthetic tasks: next-token accuracy on the answer tokens (the ones that depend
  // on position) and the fraction of sequences whose answer tokens are all right. NaN
  // where the data has no answer tokens (a corpus). Under the masked-token objective the
  // scored positions are the masked ones (train/answer_accuracy.h counts scored positions).
  double accuracy = std::numeric_limits<double>::quiet_NaN();
  double exact_match = std::numeric_limits<double>::quiet_NaN();
};

// Evaluates in inference mode (no dropout, no tape) on up to `batches` batches per length.
// `stop`, when given, is asked before each batch in a single process (under mpirun the
// ranks must stay in step, and it is not asked): once it says true, the evaluation ends
// at once and returns no points (a stop request is not kept waiting for a long one).
std::vector<EvalPoint> evaluate(TransformerLM& model, const DataSource& data,
                                const std::vector<std::int64_t>& lengths, std::int64_t batches,
                                const std::function<bool()>& stop = {});

}  // namespace relpos
