#include "train/metrics.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iostream>

#include <fmt/format.h>

#include "autograd/error.h"

namespace relpos {

MetricsLog::MetricsLog(const std::filesystem::path& dir) : path_(dir / "metrics.jsonl") {
  file_ = std::fopen(path_.c_str(), "a");
  require(file_ != nullptr, "cannot open {} for writing: {}", path_.string(), std::strerror(errno));
}

MetricsLog::~MetricsLog() {
  if (file_) std::fclose(file_);
}

void MetricsLog::write(const nlohmann::json& record) {
  const std::string line = record.dump() + "\n";
  if (std::fwrite(line.data(), 1, line.size(), file_) != line.size() || std::fflush(file_) != 0)
    fail("cannot write {}: {}", path_.string(), std::strerror(errno));
}

Progress::Progress(std::int64_t first_step, std::int64_t total_steps)
    : tty_(::isatty(STDOUT_FILENO) == 1),
      first_step_(first_step),
      total_steps_(total_steps),
      start_(std::chrono::steady_clock::now()) {}

namespace {
std::string format_duration(double seconds) {
  const auto s = static_cast<std::int64_t>(seconds + 0.5);
  return s >= 3600 ? fmt::format("{}h{:02}m", s / 3600, s / 60 % 60)
                   : fmt::format("{}m{:02}s", s / 60, s % 60);
}
}  // namespace

void Progress::update(std::int64_t step, double loss, double lr, double tokens_per_second) {
  const double elapsed =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  const double done = static_cast<double>(step - first_step_);
  const double eta = done > 0 ? elapsed / done * static_cast<double>(total_steps_ - step) : 0.0;
  const std::string stats = fmt::format("step {}/{}  loss {:.4f}  lr {:.2e}  {:.0f} tok/s  ETA {}",
                                        step, total_steps_, loss, lr, tokens_per_second,
                                        format_duration(eta));
  if (tty_) {
    constexpr int kWidth = 24;
    const int filled = static_cast<int>(kWidth * step / std::max<std::int64_t>(total_steps_, 1));
    std::cout << "\r[" << std::string(filled, '#') << std::string(kWidth - filled, '.') << "] "
              << stats << "\033[K" << std::flush;
    bar_open_ = true;
  } else {
    std::cout << stats << "\n" << std::flush;
  }
}

void Progress::message(const std::string& line) {
  if (bar_open_) std::cout << "\r\033[K";
  std::cout << line << "\n" << std::flush;
  bar_open_ = false;
}

void Progress::finish() {
  if (bar_open_) std::cout << "\n" << std::flush;
  bar_open_ = false;
}

std::size_t peak_rss_bytes() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line))
    if (line.rfind("VmHWM:", 0) == 0) return std::stoull(line.substr(6)) * 1024;  // kB
  return 0;
}

}  // namespace relpos
