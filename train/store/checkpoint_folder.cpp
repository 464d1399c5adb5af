#include "train/store/checkpoint_folder.h"

#include <fmt/format.h>

#include <algorithm>
#include <string_view>
#include <system_error>
#include <utility>

#include "autograd/error.h"
#include "train/store/file_digest.h"

namespace relpos {

namespace fs = std::filesystem;

namespace {

// "ckpt_00001200.h5" -> 1200; nullopt for any other name.
// (A plain scan, not <regex>: GCC 12's <regex> trips a false -Wmaybe-uninitialized under
// -fsanitize=address, which -Werror turns into a build failure.)
std::optional<std::int64_t> step_of_checkpoint_name(const std::string& filename) {
  const std::string_view name = filename, prefix = "ckpt_", suffix = ".h5";
  if (!name.starts_with(prefix) || !name.ends_with(suffix)) return std::nullopt;
  const std::string_view digits =
      name.substr(prefix.size(), name.size() - prefix.size() - suffix.size());
  if (digits.size() < 8 || digits.size() > 18) return std::nullopt;
  std::int64_t step = 0;
  for (const char c : digits) {
    if (c < '0' || c > '9') return std::nullopt;
    step = step * 10 + (c - '0');  // at most 18 digits: no overflow
  }
  return step;
}

}  // namespace

std::vector<std::pair<std::int64_t, fs::path>> list_checkpoints(const fs::path& dir) {
  std::vector<std::pair<std::int64_t, fs::path>> found;
  std::error_code error;
  if (!fs::is_directory(dir, error)) return found;
  for (fs::directory_iterator it(dir, error), end; !error && it != end; it.increment(error)) {
    const std::optional<std::int64_t> step = step_of_checkpoint_name(it->path().filename());
    if (step && it->is_regular_file()) found.emplace_back(*step, it->path());
  }
  require(!error, "cannot list checkpoint directory {}: {}", dir.string(), error.message());
  std::sort(found.begin(), found.end());
  return found;
}

fs::path checkpoint_path(const fs::path& dir, std::int64_t step) {
  require(step >= 0, "checkpoint_path: step {} is negative", step);
  return dir / fmt::format("ckpt_{:08d}.h5", step);
}

std::optional<fs::path> latest_checkpoint(const fs::path& dir) {
  const auto checkpoints = list_checkpoints(dir);
  if (checkpoints.empty()) return std::nullopt;
  return checkpoints.back().second;
}

std::optional<fs::path> latest_verified_checkpoint(
    const fs::path& dir, const std::function<void(const std::string&)>& skipped) {
  const auto checkpoints = list_checkpoints(dir);
  for (auto it = checkpoints.rbegin(); it != checkpoints.rend(); ++it) {
    try {
      read_verified_file(it->second);
      return it->second;
    } catch (const UsageError& error) {
      skipped(fmt::format("skipping checkpoint {}", error.what()));
    }
  }
  return std::nullopt;
}

void keep_last_checkpoints(const fs::path& dir, int keep) {
  if (keep <= 0) return;
  const auto checkpoints = list_checkpoints(dir);
  const std::size_t excess = checkpoints.size() > static_cast<std::size_t>(keep)
                                 ? checkpoints.size() - static_cast<std::size_t>(keep)
                                 : 0;
  for (std::size_t i = 0; i < excess; ++i) {
    std::error_code error;
    fs::remove(checkpoints[i].second, error);
    require(!error, "cannot delete old checkpoint {}: {}", checkpoints[i].second.string(),
            error.message());
    remove_digest(checkpoints[i].second);
  }
}

}  // namespace relpos
