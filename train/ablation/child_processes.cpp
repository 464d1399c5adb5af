#include "train/ablation/child_processes.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <map>
#include <ostream>

#include "autograd/error.h"
#include "train/stop_signal.h"

namespace relpos {
namespace fs = std::filesystem;
namespace {

fs::path log_file(const AblationSweep& sweep, std::size_t run) {
  std::string name = sweep.run_label(run);
  std::replace(name.begin(), name.end(), '/', '.');
  return sweep.out_dir / "logs" / (name + ".log");
}

// Starts `<executable> ablate <sweep> --run-index <run> --parent-pid <this process>`
// (it stops when this process ends, however it ends) with stdout and stderr appended to
// the run's log file.
pid_t start_child(const AblationSweep& sweep, std::size_t run, const fs::path& executable) {
  const fs::path log = log_file(sweep, run);
  std::error_code error;
  fs::create_directories(log.parent_path(), error);
  require(!error, "out_dir '{}': cannot create {}: {}", sweep.out_dir.string(),
          log.parent_path().string(), error.message());
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, log.c_str(),
                                   O_WRONLY | O_CREAT | O_APPEND, 0644);
  posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
  // Its own process group: a Ctrl-C reaches the sweep alone, which passes it on once.
  posix_spawnattr_t attributes;
  posix_spawnattr_init(&attributes);
  posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_setpgroup(&attributes, 0);
  const std::string index = std::to_string(run), sweep_file = sweep.file.string();
  std::vector<std::string> args = {
      executable.string(),       "ablate", sweep_file, "--run-index", index, "--parent-pid",
      std::to_string(::getpid())};
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = 0;
  const int status =
      posix_spawn(&pid, executable.c_str(), &actions, &attributes, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attributes);
  require(status == 0, "cannot start '{}': {}", executable.string(), std::strerror(status));
  return pid;
}

// The size of a child's log before it starts (the log is appended to).
std::uintmax_t log_size(const fs::path& file) {
  std::error_code missing;
  const std::uintmax_t size = fs::file_size(file, missing);
  return missing ? 0 : size;
}

// The reason a child failed, for the sweep's error: its own error line ("relpos: ...")
// written after `from`, else its last line. Another process may write to the same log
// (a run of an earlier sweep still stopping), so the last line alone can be its.
std::string failure_line(const fs::path& file, std::uintmax_t from) {
  std::ifstream in(file);
  in.seekg(static_cast<std::streamoff>(from));
  std::string line, last, error;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    last = line;
    if (line.starts_with("relpos: ")) error = line;
  }
  return error.empty() ? last : error;
}

}  // namespace

void run_children(const AblationSweep& sweep, const std::vector<std::size_t>& pending,
                  const fs::path& executable, const std::function<void(std::size_t)>& finished,
                  std::ostream& log) {
  require(!executable.empty(), "jobs {}: running runs in parallel needs the relpos executable",
          sweep.jobs);
  std::map<pid_t, std::size_t> running;
  std::map<pid_t, std::uintmax_t> log_start;  // each child's log size when it started
  std::size_t next = 0;
  std::string failure;
  const StopSignals stop;
  int forwarded = 0;
  while (next < pending.size() || !running.empty()) {
    if (stop.requested() != 0 && forwarded == 0) {
      forwarded = stop.requested();
      log << fmt::format("{}: stopping the running runs after their current step\n",
                         signal_name(forwarded))
          << std::flush;
      for (const auto& [pid, run] : running) ::kill(pid, forwarded);
    }
    while (failure.empty() && forwarded == 0 && next < pending.size() &&
           running.size() < static_cast<std::size_t>(sweep.jobs)) {
      const std::size_t run = pending[next++];
      const std::uintmax_t start = log_size(log_file(sweep, run));
      const pid_t child = start_child(sweep, run, executable);
      running[child] = run;
      log_start[child] = start;
      log << fmt::format("start {} (log: {})\n", sweep.run_label(run),
                         log_file(sweep, run).string())
          << std::flush;
    }
    if (running.empty()) break;
    int status = 0;
    const pid_t pid = ::waitpid(-1, &status, WNOHANG);
    if (pid == 0 || (pid < 0 && errno == EINTR)) {
      ::usleep(50'000);  // polled, so that a stop request is seen while the children run
      continue;
    }
    require(pid > 0, "waiting for the sweep's runs: {}", std::strerror(errno));
    const auto it = running.find(pid);
    if (it == running.end()) continue;
    const std::size_t run = it->second;
    running.erase(it);
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
      finished(run);
    } else if (forwarded != 0) {
      log << fmt::format("stopped {}\n", sweep.run_label(run)) << std::flush;
    } else if (failure.empty()) {
      const int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      failure = fmt::format("run {} failed (exit {}; {}): {}", sweep.run_label(run), code,
                            log_file(sweep, run).string(),
                            failure_line(log_file(sweep, run), log_start[pid]));
      log << failure << "\n" << std::flush;  // the others finish their current run first
    }
  }
  if (forwarded != 0)
    throw StopRequested(forwarded, fmt::format("the sweep stopped on {}; rerun it to continue",
                                               signal_name(forwarded)));
  require(failure.empty(), "{}", failure);
}

}  // namespace relpos
