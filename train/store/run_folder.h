#pragma once
// Ownership of a run's out_dir: a lock held for the whole run (flock on
// <out_dir>/.lock, naming the holder's pid), and the rule that a new run never
// mixes with an old one (refused, or the old contents moved aside).
#include <filesystem>
#include <string>

#include "train/store/input_output.h"

namespace relpos {

// The entries a run writes in `out_dir` (train/store/input_output.h): its metrics,
// summary, configs, checkpoints and lock file.
OutputFolder run_output_folder(const std::filesystem::path& out_dir);

enum class RunStart {
  fresh,      // out_dir must be empty (or hold only the lock file)
  resume,     // continues from a checkpoint: out_dir may hold the run being continued, no other
  overwrite,  // a non-empty out_dir's contents move to a sibling <name>.old-<n> first
};

// Holds the lock on one out_dir while alive; the kernel releases it when the
// process ends, however it ends.
class RunFolder {
 public:
  // Creates out_dir and out_dir/checkpoints, takes the lock, applies `start`, and
  // probes that both folders are writable. Throws a one-line UsageError when
  // another process holds the lock (naming its pid), when a fresh run finds
  // out_dir in use (naming --resume and --overwrite), when out_dir holds files no
  // run writes (fresh or overwrite), when a resume from `resumed_from`, a checkpoint
  // outside out_dir, finds another run there, or when a folder is not writable.
  RunFolder(const std::filesystem::path& out_dir, RunStart start,
            const std::filesystem::path& resumed_from = {});
  ~RunFolder();
  RunFolder(const RunFolder&) = delete;
  RunFolder& operator=(const RunFolder&) = delete;

  const std::filesystem::path& path() const { return dir_; }
  // Where --overwrite moved the old contents; empty when nothing was moved.
  const std::filesystem::path& moved_aside() const { return moved_aside_; }

 private:
  void claim(RunStart start, const std::filesystem::path& resumed_from);  // with the lock held

  std::filesystem::path dir_;
  std::filesystem::path moved_aside_;
  int lock_fd_ = -1;
};

}  // namespace relpos
