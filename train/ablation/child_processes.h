#pragma once
// The child processes of a parallel sweep (jobs > 1): each run not yet finished is
// trained by `<executable> ablate <sweep file> --run-index <i>`, `jobs` at a time, with
// its output in <out_dir>/logs/<run>.log.
#include <cstddef>
#include <filesystem>
#include <functional>
#include <iosfwd>
#include <vector>

#include "train/ablation/sweep_file.h"

namespace relpos {

// Runs the `pending` runs in child processes and calls `finished(run)` as each one ends
// well. SIGINT or SIGTERM is passed on to the running children (which stop after their
// current step and save), no new run starts, and StopRequested is thrown once they have
// ended. A failed child lets the others finish, then throws a UsageError naming it and
// its log's last line.
void run_children(const AblationSweep& sweep, const std::vector<std::size_t>& pending,
                  const std::filesystem::path& executable,
                  const std::function<void(std::size_t)>& finished, std::ostream& log);

}  // namespace relpos
