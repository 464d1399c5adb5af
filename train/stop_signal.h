#pragma once
// Graceful stop of a training run: while a StopSignals is alive, the first
// SIGINT or SIGTERM only asks the run to stop after its current step (it then
// saves, writes its summary and throws StopRequested); a second one ends the
// process at once with exit code 128 + signal.
#include <csignal>
#include <stdexcept>
#include <string>

namespace relpos {

class StopSignals {
 public:
  StopSignals();   // installs the handlers and clears any earlier request
  ~StopSignals();  // restores the handlers found at construction
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;
  // The signal that asked to stop, or 0.
  int requested() const;

 private:
  struct sigaction saved_int_ {
  }, saved_term_{};
};

// "SIGINT", "SIGTERM", or "signal <n>".
std::string signal_name(int signal);

// The run stopped on request after saving; main prints what() and exits with exit_code().
class StopRequested : public std::runtime_error {
 public:
  StopRequested(int signal, const std::string& message)
      : std::runtime_error(message), signal_(signal) {}
  int exit_code() const { return 128 + signal_; }  // 130 for SIGINT, 143 for SIGTERM

 private:
  int signal_;
};

}  // namespace relpos
