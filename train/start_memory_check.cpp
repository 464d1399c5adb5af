// A check that runs before the constructors of relpos's shared libraries (an ELF
// .preinit_array entry of the executable): under an address-space or data limit
// (ulimit -v, ulimit -d) just above what the libraries map, OpenBLAS's constructor
// retries its failed buffer allocation forever and relpos hung before main; a little
// higher, oneDNN crashed with SIGSEGV on its first failed allocation. Here such a limit
// is refused with the usual one-line error, exit 2. What is mapped is read from
// /proc/self/status with plain system calls: no C++ library is initialised yet.
#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>

#include "train/process_memory.h"

namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

// The "VmSize:" or "VmData:" value of /proc/self/status in bytes, or 0 when unreadable.
double status_bytes(const char* key) {
  char text[4096];
  const int fd = ::open("/proc/self/status", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  const ssize_t n = ::read(fd, text, sizeof text - 1);
  ::close(fd);
  if (n <= 0) return 0;
  text[n] = '\0';
  const char* at = std::strstr(text, key);
  if (at == nullptr) return 0;
  double kib = 0;
  return std::sscanf(at + std::strlen(key), " %lf", &kib) == 1 ? kib * 1024 : 0;
}

void refuse_tight_limits(int, char**, char**) {
  const struct {
    int resource;
    const char* name;
    const char* taken;
  } limits[] = {{RLIMIT_AS, "the address-space limit (ulimit -v)", "VmSize:"},
                {RLIMIT_DATA, "the data limit (ulimit -d)", "VmData:"}};
  const double needed = relpos::kLibraryStartBytes + relpos::library_working_bytes(1);
  for (const auto& limit : limits) {
    struct rlimit value {};
    if (::getrlimit(limit.resource, &value) != 0 || value.rlim_cur == RLIM_INFINITY) continue;
    const double bytes = static_cast<double>(value.rlim_cur), taken = status_bytes(limit.taken);
    if (bytes >= taken + needed) continue;
    char line[512];
    const int length = std::snprintf(
        line, sizeof line,
        "relpos: error: %s of %.2f GiB is too small: the libraries map %.2f GiB and need "
        "%.2f GiB more to start and run; raise it to at least %.2f GiB\n",
        limit.name, bytes / kGiB, taken / kGiB, needed / kGiB, (taken + needed) / kGiB);
    if (length > 0) (void)!::write(2, line, static_cast<std::size_t>(length));
    ::_exit(2);
  }
}

}  // namespace

// Called by the dynamic loader before any shared library's constructor.
using PreinitFunction = void (*)(int, char**, char**);
__attribute__((section(".preinit_array"), used)) const PreinitFunction relpos_start_memory_check =
    refuse_tight_limits;
