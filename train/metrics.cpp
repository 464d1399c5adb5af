#include "train/metrics.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iostream>
#include <iterator>

#include "autograd/error.h"

namespace relpos {

MetricsLog::MetricsLog(const std::filesystem::path& dir, std::int64_t step)
    : path_(dir / "metrics.jsonl") {
  fd_ = ::open(path_.c_str(), O_RDWR | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0644);
  require(fd_ >= 0, "cannot open {} for writing: {}", path_.string(), std::strerror(errno));
  try {
    truncate_after(step, false);
  } catch (...) {
    ::close(fd_);  // a constructor that throws runs no destructor
    throw;
  }
}

MetricsLog::~MetricsLog() {
  if (fd_ >= 0) ::close(fd_);
}

void MetricsLog::write(const nlohmann::json& record) {
  const std::string line = record.dump() + "\n";
  const off_t before = ::lseek(fd_, 0, SEEK_END);
  ssize_t written = ::write(fd_, line.data(), line.size());
  while (written < 0 && errno == EINTR) written = ::write(fd_, line.data(), line.size());
  if (written == static_cast<ssize_t>(line.size())) return;
  const int error = written < 0 ? errno : ENOSPC;  // a short write: the disk filled up
  // Cut the partial line off again; should that fail too, the next resume cuts it.
  const bool cut = before >= 0 && ::ftruncate(fd_, before) == 0;
  fail("cannot write {}: {}{}", path_.string(), std::strerror(error),
       cut ? "" : " (its last line is incomplete)");
}

namespace {
// Whether a complete metrics line survives truncate_after(step, keep_events_at_step).
bool kept(const std::string& line, std::int64_t step, bool keep_events_at_step) {
  const nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
  if (!j.is_object() || !j.contains("step") || !j["step"].is_number_integer()) return false;
  const auto at = j["step"].get<std::int64_t>();
  return at < step || (at == step && (keep_events_at_step || !j.contains("event")));
}
}  // namespace

void MetricsLog::truncate_after(std::int64_t step, bool keep_events_at_step) {
  std::ifstream in(path_, std::ios::binary);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::size_t keep = 0;
  for (std::size_t end; (end = text.find('\n', keep)) != std::string::npos; keep = end + 1)
    if (!kept(text.substr(keep, end - keep), step, keep_events_at_step)) break;
  if (keep == text.size()) return;
  if (::ftruncate(fd_, static_cast<off_t>(keep)) != 0)
    fail("cannot truncate {} to resume at step {}: {}", path_.string(), step, std::strerror(errno));
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
  const std::string stats =
      fmt::format("step {}/{}  loss {:.4f}  lr {:.2e}  {:.0f} tok/s  ETA {}", step, total_steps_,
                  loss, lr, tokens_per_second, format_duration(eta));
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
