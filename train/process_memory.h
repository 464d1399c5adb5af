#pragma once
// The memory limits this process runs under (ulimit -v, ulimit -d, a cgroup's
// memory.max) and what is already taken of them: a run that would pass one is refused
// with a one-line error before it starts, instead of ending in a signal or a hang
// inside a library that does not check its allocations (oneDNN, OpenBLAS).
#include <limits>
#include <string>

namespace relpos {

struct MemoryLimit {
  // Bytes the process may still take under its tightest limit; infinite when none is set.
  double headroom = std::numeric_limits<double>::infinity();
  // "the address-space limit (ulimit -v) of 1.3 GiB, of which 1.2 GiB is mapped already"
  std::string what;
};

// The tightest of RLIMIT_AS less VmSize, RLIMIT_DATA less VmData (/proc/self/status),
// and the cgroup v2 memory.max less memory.current.
MemoryLimit process_memory_limit();

// Address space the libraries' constructors take before main (OpenBLAS's buffers and
// threads, oneDNN, HDF5): measured 263 MiB of VmSize and of VmData on the 2-core Xeon
// (983,072 kB at the first constructor, 1,251,992 kB at main); this allows 288 MiB.
inline constexpr double kLibraryStartBytes = 288.0 * 1024 * 1024;

// Address space the libraries take while a run works, on top of the memory estimate:
// per thread a stack, a malloc arena and BLAS and oneDNN buffers. Measured on the
// 2-core Xeon with `relpos train` of a tiny model: 136 MiB more at train.threads=2
// than at 1, and 33 MiB over the start-up mapping at 1; this allows 64 MiB plus
// 160 MiB a thread.
double library_working_bytes(int threads);

}  // namespace relpos
