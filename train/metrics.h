#pragma once
// Run output: metrics.jsonl (one JSON object per line, each written by one write
// call), a live progress bar on a TTY or plain periodic lines otherwise, and memory figures.
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

namespace relpos {

// Every record has an integer "step"; events (config changes, rollbacks) also
// have an "event" key and are written when a run (re)starts from that step.
class MetricsLog {
 public:
  // Opens <dir>/metrics.jsonl (created if missing) and truncates it back to the
  // run's starting step (truncate_after(step, false)).
  MetricsLog(const std::filesystem::path& dir, std::int64_t step);
  ~MetricsLog();
  MetricsLog(const MetricsLog&) = delete;
  MetricsLog& operator=(const MetricsLog&) = delete;
  // Appends one line with a single write(2); a failed or short write is cut off
  // again, so the file never ends in part of a record.
  void write(const nlohmann::json& record);
  // Cuts the file before its first line that is incomplete, not a JSON object with
  // an integer "step", or after `step`: a record of a later step, or (unless
  // keep_events_at_step) an event at `step`, which the restarted run writes again.
  void truncate_after(std::int64_t step, bool keep_events_at_step);

 private:
  std::filesystem::path path_;
  int fd_ = -1;
};

class Progress {
 public:
  Progress(std::int64_t first_step, std::int64_t total_steps);
  // Prints the state after `step` (1-based count of finished steps).
  void update(std::int64_t step, double loss, double lr, double tokens_per_second);
  void message(const std::string& line);  // a line that does not break the bar
  void finish();

 private:
  bool tty_;
  std::int64_t first_step_, total_steps_;
  std::chrono::steady_clock::time_point start_;
  bool bar_open_ = false;
};

// Peak resident set size of this process in bytes (VmHWM), 0 if unknown.
std::size_t peak_rss_bytes();

}  // namespace relpos
