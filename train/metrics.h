#pragma once
// Run output: metrics.jsonl (one JSON object per line, flushed as written), a
// live progress bar on a TTY or plain periodic lines otherwise, and memory figures.
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

namespace relpos {

class MetricsLog {
 public:
  // Appends to <dir>/metrics.jsonl (created if missing).
  explicit MetricsLog(const std::filesystem::path& dir);
  ~MetricsLog();
  MetricsLog(const MetricsLog&) = delete;
  MetricsLog& operator=(const MetricsLog&) = delete;
  void write(const nlohmann::json& record);

 private:
  std::filesystem::path path_;
  std::FILE* file_ = nullptr;
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
