#include "train/store/run_start.h"

#include <fmt/format.h>

#include <system_error>

#include "autograd/error.h"
#include "train/store/atomic_file.h"
#include "train/store/checkpoint_folder.h"
#include "train/store/file_digest.h"

namespace relpos {
namespace fs = std::filesystem;
namespace {

// Moves `file` and its digest (the digest last: a checkpoint in place has its digest).
void move_checkpoint(const fs::path& file, const fs::path& to_dir) {
  std::error_code error;
  fs::rename(file, to_dir / file.filename(), error);
  require(!error, "cannot move {} into {}: {}", file.string(), to_dir.string(), error.message());
  if (fs::exists(digest_path(file), error))
    fs::rename(digest_path(file), to_dir / digest_path(file).filename(), error);
  require(!error, "cannot move {} into {}: {}", digest_path(file).string(), to_dir.string(),
          error.message());
}

// The checkpoints in `checkpoints` after `step`, moved into a new checkpoints/abandoned-<n>;
// returns that folder and the files moved (none: nothing is created).
std::pair<fs::path, std::vector<fs::path>> move_later_checkpoints(const fs::path& checkpoints,
                                                                  std::int64_t step) {
  std::vector<fs::path> later;
  for (const auto& [at, file] : list_checkpoints(checkpoints))
    if (at > step) later.push_back(file);
  if (later.empty()) return {};
  fs::path target;
  std::error_code error;
  for (int n = 1;; ++n) {
    target = checkpoints / ("abandoned-" + std::to_string(n));
    if (fs::create_directory(target, error)) break;
    require(!error, "cannot create {}: {}", target.string(), error.message());
  }
  for (const fs::path& file : later) move_checkpoint(file, target);
  return {target, later};
}

}  // namespace

RunStartWrites::RunStartWrites(fs::path dir, std::int64_t step, std::string config_yaml,
                               std::vector<nlohmann::json> records, bool deferred)
    : dir_(std::move(dir)),
      step_(step),
      config_yaml_(std::move(config_yaml)),
      held_(std::move(records)) {
  if (!deferred) start();
}

void RunStartWrites::start() {
  std::error_code ignored;
  fs::remove(dir_ / "summary.json", ignored);  // written again when this run ends
  write_file_atomic(dir_ / "config.yaml", config_yaml_);
  write_file_atomic(dir_ / fmt::format("config.{}.yaml", step_), config_yaml_);
  metrics_.emplace(dir_, step_);
  for (const nlohmann::json& record : held_) metrics_->write(record);
  held_.clear();
}

void RunStartWrites::write(const nlohmann::json& record) {
  if (metrics_)
    metrics_->write(record);
  else
    held_.push_back(record);
}

void RunStartWrites::truncate_after(std::int64_t step, bool keep_events_at_step) {
  if (metrics_) return metrics_->truncate_after(step, keep_events_at_step);
  std::erase_if(held_, [&](const nlohmann::json& record) {
    const auto at = record.at("step").get<std::int64_t>();
    return at > step || (at == step && !keep_events_at_step && record.contains("event"));
  });
}

void RunStartWrites::save_checkpoint(const std::function<void()>& save,
                                     const std::function<void(const std::string&)>& say) {
  if (metrics_) return save();
  const fs::path checkpoints = dir_ / "checkpoints";
  const auto [aside, moved] = move_later_checkpoints(checkpoints, step_);
  try {
    save();
  } catch (...) {
    for (const fs::path& file : moved) move_checkpoint(aside / file.filename(), checkpoints);
    if (!aside.empty()) fs::remove(aside);
    throw;
  }
  if (!moved.empty())
    say(fmt::format(
        "relpos: moved {} checkpoints of the abandoned timeline after step {} ({} to {}) into {}",
        moved.size(), step_, moved.front().filename().string(), moved.back().filename().string(),
        aside.string()));
  start();
}

}  // namespace relpos
