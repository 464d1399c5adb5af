#pragma once
// Graceful stop of a training run: while a StopSignals is alive, the first
// SIGINT, SIGTERM or SIGHUP (a closed terminal) only asks the run to stop after its
// current step (it then saves, writes its summary and throws StopRequested); a
// second one removes the .tmp file of a save in progress and ends the process at
// once with exit code 128 + signal.
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
  }, saved_term_{}, saved_hup_{};
};

// "SIGINT", "SIGTERM", "SIGHUP", or "signal <n>".
std::string signal_name(int signal);

// The run stopped on request after saving; main prints what() and exits with exit_code().
class StopRequested : public std::runtime_error {
 public:
  StopRequested(int signal, const std::string& message)
      : std::runtime_error(message), signal_(signal) {}
  int exit_code() const { return 128 + signal_; }  // 130 SIGINT, 143 SIGTERM, 129 SIGHUP

 private:
  int signal_;
};

}  // namespace relpos
