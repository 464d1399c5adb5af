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

// Whether `result` was evaluated at exactly `lengths` with `batches` batches each (0: the
// whole split, and `sequences` task sequences).
bool evaluated_with(const VariantResult& result, const std::vector<std::int64_t>& lengths,
                    std::int64_t batches, std::int64_t sequences);

}  // namespace relpos
