#include "data/input_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "autograd/error.h"

namespace relpos {
namespace {

// What a file that is not regular is, for the error line.
const char* kind_of(mode_t mode) {
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISCHR(mode) || S_ISBLK(mode)) return "a device";
  return "not a regular file";
}

// Closes the descriptor on every way out.
struct FileDescriptor {
  int fd;
  ~FileDescriptor() {
    if (fd >= 0) ::close(fd);
  }
};

}  // namespace

std::string read_regular_file(const std::string& path, std::string_view label,
                              std::uint64_t max_bytes) {
  // O_NONBLOCK: opening a FIFO for reading does not wait for a writer; it has no
  // effect on a regular file, the only kind read below.
  const FileDescriptor file{::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC)};
  require(file.fd >= 0, "{}: cannot open: {}", label, std::strerror(errno));
  struct stat status {};
  require(::fstat(file.fd, &status) == 0, "{}: cannot stat: {}", label, std::strerror(errno));
  require(!S_ISDIR(status.st_mode), "{}: cannot open: {}", label, std::strerror(EISDIR));
  require(S_ISREG(status.st_mode), "{}: cannot open: it is {}; only a regular file is read", label,
          kind_of(status.st_mode));
  const auto size = static_cast<std::uint64_t>(status.st_size);
  require(size <= max_bytes, "{}: larger than {} bytes", label, max_bytes);
  std::string bytes(static_cast<std::size_t>(size), '\0');
  for (std::size_t done = 0; done < bytes.size();) {
    const ssize_t n = ::read(file.fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    require(n >= 0, "{}: cannot read: {}", label, std::strerror(errno));
    require(n > 0, "{}: shorter than its {} bytes (changed while read)", label, size);
    done += static_cast<std::size_t>(n);
  }
  return bytes;
}

}  // namespace relpos
