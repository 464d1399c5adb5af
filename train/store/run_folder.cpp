#include "train/store/run_folder.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <string>
#include <system_error>

#include "autograd/error.h"
#include "train/store/atomic_file.h"
#include "train/store/input_output.h"

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

// The name without the ".tmp" that a killed run's unfinished file carries.
std::string without_tmp(std::string name) {
  if (name.ends_with(".tmp")) name.resize(name.size() - 4);
  return name;
}

// The files of a run's record: one of them (or a checkpoint) makes the folder a run's.
bool is_run_record(const std::string& name) {
  return name == "metrics.jsonl" || name == "summary.json" || name == "config.yaml" ||
         name == "ablation.json" || (name.starts_with("config.") && name.ends_with(".yaml"));
}

bool is_run_entry(const fs::directory_entry& entry) {
  const std::string name = without_tmp(entry.path().filename().string());
  if (name == "checkpoints") return entry.is_directory() && !fs::is_empty(entry.path());
  return is_run_record(name);
}

// Every entry a run creates, replaces, appends to or removes in its folder. Not
// tokenizer.model: it is written only where there is none, and a resume may read it.
bool written_by_run(const std::string& entry) {
  const std::string name = without_tmp(entry);
  return is_run_record(name) || name == "checkpoints" || name == kLockFile || name == ".write_test";
}

// What `dir` holds besides the lock file and an empty checkpoints folder.
struct FolderContents {
  bool run = false;     // files of a relpos run
  std::string foreign;  // the first entry that no run writes; empty if none
  bool empty() const { return !run && foreign.empty(); }
};

FolderContents contents_of(const fs::path& dir) {
  FolderContents found;
  for (const auto& entry : fs::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    if (name == kLockFile || name == ".write_test" || name == ".write_test.tmp") continue;
    if (name == "checkpoints" && entry.is_directory() && !entry.is_symlink() &&
        fs::is_empty(entry.path()))
      continue;
    if (is_run_entry(entry))
      found.run = true;
    else if (found.foreign.empty())
      found.foreign = name;
  }
  return found;
}

// Moves every entry of `dir` but the lock file into a new sibling <name>.old-<n> of the
// folder itself (its real path: `run/`, `.` and a symlink name the folder, not a part of it).
fs::path move_contents_aside(const fs::path& dir) {
  std::error_code error;
  const fs::path real = fs::canonical(dir, error);
  require(!error && real.has_parent_path() && real != real.root_path(),
          "train.out_dir '{}': cannot move its contents aside: {}", dir.string(),
          error ? error.message() : std::string("it is the root folder"));
  fs::path target;
  for (int n = 1;; ++n) {
    target = real.parent_path() / (real.filename().string() + ".old-" + std::to_string(n));
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

OutputFolder run_output_folder(const fs::path& out_dir) {
  return {out_dir, written_by_run, "the run in train.out_dir"};
}

RunFolder::RunFolder(const fs::path& out_dir, RunStart start, const fs::path& resumed_from)
    : dir_(out_dir) {
  std::error_code error;
  fs::create_directories(dir_, error);
  require(!error, "train.out_dir '{}': cannot create it: {}", dir_.string(), error.message());
  const fs::path lock = dir_ / kLockFile;
  // Never through a symlink (O_NOFOLLOW), never a FIFO or device (O_NONBLOCK, then
  // fstat): the pid written below would land in whatever file it names.
  lock_fd_ = ::open(lock.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0644);
  if (lock_fd_ < 0) {
    const int error = errno;
    require(error != ELOOP,
            "train.out_dir '{}': its lock file {} is a symlink; relpos opens it only as a "
            "regular file (remove it)",
            dir_.string(), lock.string());
    fail("train.out_dir '{}': cannot open its lock file {}: {}", dir_.string(), lock.string(),
         errno_text(error));
  }
  struct stat status {};
  if (::fstat(lock_fd_, &status) != 0 || !S_ISREG(status.st_mode) || status.st_nlink != 1) {
    ::close(lock_fd_);
    lock_fd_ = -1;
    fail(
        "train.out_dir '{}': its lock file {} is not a regular file of its own (a folder, FIFO, "
        "device or hard link); remove it",
        dir_.string(), lock.string());
  }
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
    claim(start, resumed_from);
  } catch (...) {
    ::close(lock_fd_);  // a constructor that throws runs no destructor
    throw;
  }
}

void RunFolder::claim(RunStart start, const fs::path& resumed_from) {
  std::error_code error;
  const std::string pid = std::to_string(::getpid());
  if (::ftruncate(lock_fd_, 0) != 0 ||
      ::pwrite(lock_fd_, pid.data(), pid.size(), 0) != static_cast<ssize_t>(pid.size()))
    fail("train.out_dir '{}': cannot write {}: {}", dir_.string(), (dir_ / kLockFile).string(),
         errno_text(errno));
  // metrics.jsonl is appended to in place: through a symlink the run would cut and
  // write whatever file it names (the other outputs are replaced by a rename).
  require(!fs::is_symlink(dir_ / "metrics.jsonl", error),
          "train.out_dir '{}': {} is a symlink; a run writes its metrics only into a file of "
          "its own",
          dir_.string(), (dir_ / "metrics.jsonl").string());
  const FolderContents found = contents_of(dir_);
  if (start != RunStart::resume && !found.foreign.empty())
    fail(
        "train.out_dir '{}' holds '{}', which no relpos run writes; choose an empty or new folder "
        "(--overwrite moves only a run's folder aside)",
        dir_.string(), found.foreign);
  if (start == RunStart::fresh && !found.empty())
    fail(
        "train.out_dir '{}' already holds a run; pass --resume to continue it or --overwrite to "
        "move it aside and start over",
        dir_.string());
  if (start == RunStart::resume && found.run && !resumed_from.empty() &&
      !inside_folder(resumed_from, dir_))
    fail(
        "--resume {}: train.out_dir '{}' holds another run; choose another train.out_dir, or add "
        "--overwrite to move that run aside",
        resumed_from.string(), dir_.string());
  if (start == RunStart::overwrite && !found.empty()) moved_aside_ = move_contents_aside(dir_);
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
