#include "train/stop_signal.h"

#include <unistd.h>

#include "train/store/atomic_file.h"

namespace relpos {
namespace {

volatile std::sig_atomic_t g_stop_signal = 0;

extern "C" void on_stop_signal(int signal) {
  if (g_stop_signal != 0) {  // the second signal: no more waiting, and no half-written file
    remove_temporary_in_flight();
    ::_exit(128 + signal);
  }
  g_stop_signal = signal;
}

void install(int signal, struct sigaction* saved) {
  struct sigaction action {};
  action.sa_handler = on_stop_signal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;  // interrupted reads and writes carry on
  ::sigaction(signal, &action, saved);
}

}  // namespace

StopSignals::StopSignals() {
  g_stop_signal = 0;
  install(SIGINT, &saved_int_);
  install(SIGTERM, &saved_term_);
  install(SIGHUP, &saved_hup_);
}

StopSignals::~StopSignals() {
  ::sigaction(SIGINT, &saved_int_, nullptr);
  ::sigaction(SIGTERM, &saved_term_, nullptr);
  ::sigaction(SIGHUP, &saved_hup_, nullptr);
}

int StopSignals::requested() const { return g_stop_signal; }

std::string signal_name(int signal) {
  if (signal == SIGINT) return "SIGINT";
  if (signal == SIGTERM) return "SIGTERM";
  if (signal == SIGHUP) return "SIGHUP";
  return "signal " + std::to_string(signal);
}

}  // namespace relpos
