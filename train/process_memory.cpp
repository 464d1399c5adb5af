#include "train/process_memory.h"

#include <fmt/format.h>
#include <sys/resource.h>

#include <fstream>
#include <sstream>

#include "autograd/error.h"

namespace relpos {
namespace {

constexpr double kMiB = 1024.0 * 1024.0, kGiB = 1024.0 * kMiB;

std::string gib(double bytes) { return fmt::format("{:.2f} GiB", bytes / kGiB); }

// A "VmSize:" style line of /proc/self/status, in bytes (0 when absent).
double status_bytes(const std::string& key) {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);) {
    std::istringstream fields(line);
    std::string name;
    double kib = 0;
    if (fields >> name >> kib && name == key + ":") return kib * 1024;
  }
  return 0;
}

// The first line of `file` as a number of bytes, or a negative value ("max", absent).
double file_bytes(const std::string& file) {
  std::ifstream in(file);
  double bytes = -1;
  if (!(in >> bytes)) return -1;
  return bytes;
}

// The cgroup v2 folder of this process ("0::/path" in /proc/self/cgroup), or "".
std::string cgroup_folder() {
  std::ifstream cgroups("/proc/self/cgroup");
  for (std::string line; std::getline(cgroups, line);)
    if (line.rfind("0::", 0) == 0) return "/sys/fs/cgroup" + line.substr(3);
  return "";
}

void tighten(MemoryLimit& limit, double headroom, std::string what) {
  if (headroom < limit.headroom) limit = {headroom, std::move(what)};
}

}  // namespace

MemoryLimit process_memory_limit() {
  MemoryLimit limit;
  const struct {
    int resource;
    const char* name;
    const char* taken;
  } rlimits[] = {{RLIMIT_AS, "the address-space limit (ulimit -v)", "VmSize"},
                 {RLIMIT_DATA, "the data limit (ulimit -d)", "VmData"}};
  for (const auto& r : rlimits) {
    struct rlimit value {};
    if (getrlimit(r.resource, &value) != 0 || value.rlim_cur == RLIM_INFINITY) continue;
    const double bytes = static_cast<double>(value.rlim_cur), taken = status_bytes(r.taken);
    tighten(limit, bytes - taken,
            fmt::format("{} of {}, of which {} is mapped already", r.name, gib(bytes), gib(taken)));
  }
  if (const std::string folder = cgroup_folder(); !folder.empty()) {
    const double max = file_bytes(folder + "/memory.max");
    const double current = file_bytes(folder + "/memory.current");
    if (max >= 0 && current >= 0)
      tighten(limit, max - current,
              fmt::format("the cgroup memory limit (memory.max) of {}, of which {} is in use",
                          gib(max), gib(current)));
  }
  return limit;
}

double library_working_bytes(int threads) { return (64 + 160.0 * threads) * kMiB; }

}  // namespace relpos
