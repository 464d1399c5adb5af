#pragma once
// The results of one ablation run (a variant trained with one seed): its facts, its
// extrapolation curve, and <run folder>/ablation.json, the cache that a rerun of the
// sweep reuses when the evaluation settings match.
#include <cstdint>
#include <filesystem>
#include <limits>
#include <optional>
#include <string>
#include <vector>

namespace relpos {

// The final model's metrics at one evaluation length; NaN (with a note saying why)
// where the scheme cannot run at that length. accuracy and exact_match are
// EvalPoint's (train/evaluate.h): NaN where the data has no answer tokens.
struct LengthLoss {
  std::int64_t length = 0;
  double loss = 0.0;  // nats per scored token
  std::string note;
  double accuracy = std::numeric_limits<double>::quiet_NaN();
  double exact_match = std::numeric_limits<double>::quiet_NaN();
};

// The final model's loss on the validation text read as streams, segment by segment at
// the training length (train/evaluate_stream.h), with a segment memory of mem_len
// hidden states per layer and, for a model with a kNN layer, a kNN memory of knn_size
// (key, value) pairs (0 for a model without one). NaN, with a note, where it cannot run.
struct MemoryLoss {
  std::int64_t mem_len = 0;
  std::int64_t knn_size = 0;
  double loss = 0.0;  // nats per scored token
  std::string note;
};

// The in-context copy check (train/copy_check.h) at one distance, the sequences read as
// one window, or (segments) as segments of the training length with the memory point
// (mem_len, knn_size). The losses are NaN, with a note, where it cannot run.
struct CopyGain {
  std::int64_t distance = 0;
  bool segments = false;
  std::int64_t mem_len = 0;
  std::int64_t knn_size = 0;
  double loss_repeat = std::numeric_limits<double>::quiet_NaN();   // nats per scored token
  double loss_control = std::numeric_limits<double>::quiet_NaN();  // the first span replaced
  std::string note;
  double gain() const { return loss_control - loss_repeat; }
};

// Its column name: "copy_gain_256", or "copy_gain_256_mem_64" read as segments.
std::string copy_label(const CopyGain& point);

// The column name of a memory point: "mem_64", or "mem_0_knn_1024" with a kNN memory.
std::string memory_label(std::int64_t mem_len, std::int64_t knn_size);

// One run: a variant trained with one seed.
struct VariantResult {
  std::string name;         // the variant's
  std::uint64_t seed = 0;   // train.seed of the run
  std::string scheme;       // model.position.scheme
  std::string data_source;  // data.source
  std::int64_t train_length = 0;
  std::int64_t steps = 0;
  std::int64_t parameters = 0;
  double final_val_loss = 0.0;     // the trainer's last validation loss, nats per scored token
  double tokens_per_second = 0.0;  // NaN when not measured (see notes)
  double wall_seconds = 0.0;       // NaN when not measured
  std::size_t peak_rss_bytes = 0;
  std::size_t peak_tensor_bytes = 0;
  std::int64_t eval_batches = 0;          // batches per length; 0: the whole validation split
  std::int64_t eval_sequences = 0;        // with eval_batches 0: task sequences per length
  std::vector<LengthLoss> extrapolation;  // ascending lengths, the training length included
  std::vector<MemoryLoss> memory;         // by mem_len, then knn_size; empty without memory
  std::int64_t copy_span = 0;             // the copy check's span; 0: no copy check
  std::int64_t copy_sequences = 0;        // its sequences per distance
  std::vector<CopyGain> copy;             // by reading, then distance
  std::vector<std::string> notes;
};

// The "val_loss" of the run's last evaluation line in <dir>/metrics.jsonl (a resumed
// run's repeats replace the earlier ones); unreadable lines (e.g. one cut off by a kill)
// are skipped. NaN when none.
double last_val_loss(const std::filesystem::path& dir);

// ablation.json, written atomically; read back as nullopt when missing or unreadable
// (then it is recomputed).
void write_result(const std::filesystem::path& file, const VariantResult& result);
std::optional<VariantResult> read_result(const std::filesystem::path& file);

// Whether `result` was evaluated as `planned` says: at the same lengths (extrapolation)
// with as many batches (0: the whole split, and as many task sequences), at the same memory
// points, and with the same copy check (span, sequences, distances and readings).
bool evaluated_with(const VariantResult& result, const VariantResult& planned);

}  // namespace relpos
