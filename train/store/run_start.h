#pragma once
// What a run changes in its folder when it starts, and when. The start writes
// config.yaml and config.<step>.yaml, cuts metrics.jsonl back to the starting step,
// records the config changes of a resume, and removes summary.json (written again
// at the end). A fresh run (or one whose folder's old run was moved aside) starts
// at once. A resume waits until its first new checkpoint is safely written: one
// that fails before (a bad value in the checkpoint, a divergence, a full disk)
// leaves the run it continued exactly as it was; the metrics of its first steps are
// held in memory until then. Checkpoints of the timeline a resume from an older
// checkpoint abandons (steps after the resumed one) are moved aside into
// checkpoints/abandoned-<n>/ just before that first save, never mixed with the new
// ones or rotated against them.
#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "train/metrics.h"

namespace relpos {

class RunStartWrites {
 public:
  // `records`: events written first at the start (e.g. a config_change); `deferred`:
  // a resume, which starts with its first checkpoint.
  RunStartWrites(std::filesystem::path dir, std::int64_t step, std::string config_yaml,
                 std::vector<nlohmann::json> records, bool deferred);

  // One metrics.jsonl record: written now once started, else held until the start.
  void write(const nlohmann::json& record);
  // A rollback to `step` (MetricsLog::truncate_after); held records are cut alike.
  void truncate_after(std::int64_t step, bool keep_events_at_step);
  // Runs `save`, which writes a checkpoint. Before the first save of a
  // deferred start, the abandoned timeline's checkpoints are moved aside (one line on
  // `say`), and put back if the save fails; after it, the run starts.
  void save_checkpoint(const std::function<void()>& save,
                       const std::function<void(const std::string&)>& say);

 private:
  void start();

  std::filesystem::path dir_;
  std::int64_t step_;  // the step the run started from
  std::string config_yaml_;
  std::vector<nlohmann::json> held_;
  std::optional<MetricsLog> metrics_;
};

}  // namespace relpos
