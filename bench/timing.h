#pragma once
// A minimal timing harness shared by the benchmarks: wall-clock and process CPU
// seconds, medians, and a calibrated "seconds per call" that amortises the clock.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <ctime>
#include <vector>

namespace relpos::bench {

inline double now_seconds() {
  using Clock = std::chrono::steady_clock;
  return std::chrono::duration<double>(Clock::now().time_since_epoch()).count();
}

// CPU time used by this process (all threads). For single-threaded work on a
// shared machine it leaves out the time spent waiting for a core.
inline double process_cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

inline double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size();
  return n % 2 == 1 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

// Seconds of one call of fn, timed over a batch of `calls` calls.
template <class Fn>
double seconds_per_call(Fn&& fn, std::int64_t calls) {
  const double start = now_seconds();
  for (std::int64_t i = 0; i < calls; ++i) fn();
  return (now_seconds() - start) / static_cast<double>(calls);
}

// How many calls of fn fill about `target_seconds` (at least one); the calls
// made to find out double as a warm-up.
template <class Fn>
std::int64_t calls_for(Fn&& fn, double target_seconds) {
  std::int64_t calls = 1;
  for (;;) {
    const double total = seconds_per_call(fn, calls) * static_cast<double>(calls);
    if (total >= target_seconds) return std::max<std::int64_t>(1, calls);
    const double scale = total > 0 ? target_seconds / total : 16.0;
    calls = std::max(calls * 2, static_cast<std::int64_t>(static_cast<double>(calls) * scale));
  }
}

}  // namespace relpos::bench
