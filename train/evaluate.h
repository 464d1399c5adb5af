#pragma once
// Validation loss of a model at one or more sequence lengths (the length-
// extrapolation curve). Losses are nats per scored token; bits per byte divide the
// summed loss by the bytes of text the scored tokens stand for (data.tokenizer), so
// they compare across tokenizers; for byte-level data bits per byte = loss / ln 2.
#include <functional>
#include <limits>
#include <string>
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
  std::int64_t sequences = 0;  // windows (a corpus) or task sequences evaluated
  // With EvalAmount::by_position: index p holds the mean loss (nats) of the tokens scored
  // at position p of their window, and how many there were; empty otherwise.
  std::vector<double> loss_by_position;
  std::vector<std::int64_t> tokens_by_position;
};

// How much validation data an evaluation reads at each length.
struct EvalAmount {
  // > 0: that many batches (DataSource::eval_batches); 0: the whole validation split of
  // a corpus, or for a task the batches that hold at least `sequences` sequences.
  std::int64_t batches = 0;
  std::int64_t sequences = 256;
  // Corpus only: a window every `stride` tokens, each token scored once (0: the length,
  // non-overlapping windows); see sequential_windows in data/sampler.h.
  std::int64_t stride = 0;
  bool by_position = false;  // fill EvalPoint::loss_by_position
};

// Told, about every 10 s and when a length is done, how far an evaluation is.
struct EvalProgress {
  std::int64_t length = 0;
  std::int64_t batches_done = 0, batches = 0;
  double seconds = 0.0;  // since this length began
};

// Evaluates in inference mode (no dropout, no tape) on `amount` of validation data per
// length. `stop`, when given, is asked before each batch in a single process (under mpirun
// the ranks must stay in step, and it is not asked): once it says true, the evaluation ends
// at once and returns no points (a stop request is not kept waiting for a long one).
std::vector<EvalPoint> evaluate(TransformerLM& model, const DataSource& data,
                                const std::vector<std::int64_t>& lengths, const EvalAmount& amount,
                                const std::function<bool()>& stop = {},
                                const std::function<void(const EvalProgress&)>& progress = {});

// "eval at 1024: 40/105 batches, 12s" (done: "eval at 1024: 105 batches, 31s").
std::string progress_text(const EvalProgress& p);

}  // namespace relpos
