#include "train/store/atomic_file.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <system_error>

#include "autograd/error.h"

namespace relpos {
namespace {

namespace fs = std::filesystem;

std::string errno_message(int error) { return std::generic_category().message(error); }

std::string create_failure(const fs::path& path, int error) {
  const fs::path dir = path.parent_path().empty() ? fs::path(".") : path.parent_path();
  std::error_code ignored;
  if (error == ENOENT && !fs::is_directory(dir, ignored))
    return fmt::format("directory {} does not exist", dir.string());
  return fmt::format("cannot create {}: {}", path.string(), errno_message(error));
}

// open(2) + fsync(2) + close(2) of a directory, so that a rename in it is durable.
void fsync_directory(const fs::path& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) fail("cannot open directory {} to fsync it: {}", dir.string(), errno_message(errno));
  const int rc = ::fsync(fd);
  const int error = errno;
  ::close(fd);
  if (rc != 0) fail("fsync of directory {} failed: {}", dir.string(), errno_message(error));
}

// The path of the .tmp file being written, for remove_temporary_in_flight(); it is
// set before the file is created and cleared before its rename (or removal).
char g_in_flight[4096];
volatile std::sig_atomic_t g_has_in_flight = 0;

void set_in_flight(const fs::path& path) {
  const std::string& name = path.native();
  if (name.size() >= sizeof(g_in_flight)) return;  // such a name cannot be created anyway
  g_has_in_flight = 0;
  std::memcpy(g_in_flight, name.c_str(), name.size() + 1);
  g_has_in_flight = 1;
}

// A new file opened for writing. Unless commit() renamed it onto its target,
// the destructor removes it again. A file of that name left by a killed process
// is removed first; a symlink there is removed, never followed (O_EXCL|O_NOFOLLOW).
class TemporaryFile {
 public:
  explicit TemporaryFile(fs::path path) : path_(std::move(path)) {
    set_in_flight(path_);
    ::unlink(path_.c_str());
    fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd_ < 0) {
      g_has_in_flight = 0;
      fail("{}", create_failure(path_, errno));
    }
  }
  ~TemporaryFile() {
    g_has_in_flight = 0;
    if (fd_ >= 0) ::close(fd_);
    if (committed_) return;
    std::error_code ignored;
    fs::remove(path_, ignored);
  }
  TemporaryFile(const TemporaryFile&) = delete;
  TemporaryFile& operator=(const TemporaryFile&) = delete;

  void write_all(std::span<const char> bytes) {
    for (std::size_t done = 0; done < bytes.size();) {
      const ssize_t n = ::write(fd_, bytes.data() + done, bytes.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) fail("cannot write {}: {}", path_.string(), errno_message(errno));
      done += static_cast<std::size_t>(n);
    }
  }

  // fsync, close, then rename onto `target`.
  void commit(const fs::path& target) {
    if (::fsync(fd_) != 0) fail("fsync of {} failed: {}", path_.string(), errno_message(errno));
    const int rc = ::close(fd_);
    fd_ = -1;
    if (rc != 0) fail("cannot close {}: {}", path_.string(), errno_message(errno));
    g_has_in_flight = 0;
    if (std::rename(path_.c_str(), target.c_str()) != 0)
      fail("cannot rename {} onto {}: {}", path_.string(), target.string(), errno_message(errno));
    committed_ = true;
  }

 private:
  fs::path path_;
  int fd_ = -1;
  bool committed_ = false;
};

}  // namespace

void remove_temporary_in_flight() noexcept {
  if (g_has_in_flight != 0) ::unlink(g_in_flight);
}

void replace_file(const fs::path& path, std::span<const char> bytes) {
  TemporaryFile tmp(path.string() + ".tmp");
  tmp.write_all(bytes);
  tmp.commit(path);
  fsync_directory(path.has_parent_path() ? path.parent_path() : fs::path("."));
}

void write_file_atomic(const fs::path& path, const std::string& text) {
  try {
    replace_file(path, text);
  } catch (const UsageError& error) {
    fail("cannot write {}: {}", path.string(), error.what());
  }
}

}  // namespace relpos
