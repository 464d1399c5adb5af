#include "train/store/run_folder.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <string>
#include <system_error>

#include "autograd/error.h"
#include "train/store/atomic_file.h"

namespace relpos {
namespace fs = std::filesystem;
namespace {

constexpr const char* kLockFile = ".lock";

std::string errno_text(int error) { return std::generic_category().message(error); }

// The pid written into the lock file by its holder, or "unknown".
std::string lock_holder(int fd) {
  char text[32] = {};
  const ssize_t n = ::pread(fd, text, sizeof(text) - 1, 0);
  const std::string pid = n > 0 ? std::string(text, static_cast<std::size_t>(n)) : "";
  return pid.empty() || pid.find_first_not_of("0123456789") != std::string::npos ? "unknown" : pid;
}

// True when `dir` holds anything besides the lock file and an empty checkpoints folder.
bool holds_a_run(const fs::path& dir) {
  for (const auto& entry : fs::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    if (name == kLockFile) continue;
    if (name == "checkpoints" && entry.is_directory() && !entry.is_symlink() &&
        fs::is_empty(entry.path()))
      continue;
    return true;
  }
  return false;
}

// Moves every entry of `dir` but the lock file into a new sibling <name>.old-<n>.
fs::path move_contents_aside(const fs::path& dir) {
  const fs::path parent = dir.parent_path();  // empty: the current folder
  fs::path target;
  std::error_code error;
  for (int n = 1;; ++n) {
    target = parent / (dir.filename().string() + ".old-" + std::to_string(n));
    if (fs::create_directory(target, error)) break;
    require(!error, "train.out_dir '{}': cannot create {} to move the old run into: {}",
            dir.string(), target.string(), error.message());
  }
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.path().filename() == kLockFile) continue;
    fs::rename(entry.path(), target / entry.path().filename(), error);
    require(!error, "train.out_dir '{}': cannot move {} into {}: {}", dir.string(),
            entry.path().string(), target.string(), error.message());
  }
  return target;
}

void probe_writable(const fs::path& dir) {
  const fs::path probe = dir / ".write_test";
  write_file_atomic(probe, "");
  fs::remove(probe);
}

}  // namespace

RunFolder::RunFolder(const fs::path& out_dir, RunStart start) : dir_(out_dir) {
  std::error_code error;
  fs::create_directories(dir_, error);
  require(!error, "train.out_dir '{}': cannot create it: {}", dir_.string(), error.message());
  const fs::path lock = dir_ / kLockFile;
  lock_fd_ = ::open(lock.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  require(lock_fd_ >= 0, "train.out_dir '{}': cannot open its lock file {}: {}", dir_.string(),
          lock.string(), errno_text(errno));
  if (::flock(lock_fd_, LOCK_EX | LOCK_NB) != 0) {
    const int flock_error = errno;
    const std::string holder = lock_holder(lock_fd_);
    ::close(lock_fd_);
    lock_fd_ = -1;
    if (flock_error == EWOULDBLOCK)
      fail(
          "train.out_dir '{}' is in use by another relpos run (pid {}); wait for it to end or "
          "choose another train.out_dir",
          dir_.string(), holder);
    fail("train.out_dir '{}': cannot lock {}: {}", dir_.string(), lock.string(),
         errno_text(flock_error));
  }
  try {
    claim(start);
  } catch (...) {
    ::close(lock_fd_);  // a constructor that throws runs no destructor
    throw;
  }
}

void RunFolder::claim(RunStart start) {
  std::error_code error;
  const std::string pid = std::to_string(::getpid());
  if (::ftruncate(lock_fd_, 0) != 0 ||
      ::pwrite(lock_fd_, pid.data(), pid.size(), 0) != static_cast<ssize_t>(pid.size()))
    fail("train.out_dir '{}': cannot write {}: {}", dir_.string(), (dir_ / kLockFile).string(),
         errno_text(errno));
  if (start == RunStart::fresh && holds_a_run(dir_))
    fail(
        "train.out_dir '{}' already holds a run; pass --resume to continue it or --overwrite to "
        "move it aside and start over",
        dir_.string());
  if (start == RunStart::overwrite && holds_a_run(dir_)) moved_aside_ = move_contents_aside(dir_);
  fs::create_directories(dir_ / "checkpoints", error);
  require(!error, "train.out_dir '{}': cannot create {}: {}", dir_.string(),
          (dir_ / "checkpoints").string(), error.message());
  probe_writable(dir_);
  probe_writable(dir_ / "checkpoints");
}

RunFolder::~RunFolder() {
  if (lock_fd_ >= 0) ::close(lock_fd_);  // releases the flock
}

}  // namespace relpos
