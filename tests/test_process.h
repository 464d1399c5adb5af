#pragma once
// Running the relpos binary as a child process the test can signal: spawn it
// with stdout and stderr going to files, send it signals, wait for its end.
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

namespace relpos::testing {

// Starts `RELPOS_CLI args...` in `dir` with stdout to dir/out and stderr to dir/err.
inline pid_t spawn_relpos(const std::vector<std::string>& args, const std::filesystem::path& dir) {
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid > 0) return pid;
  const int out = ::open((dir / "out").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  const int err = ::open((dir / "err").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (out < 0 || err < 0 || ::dup2(out, 1) < 0 || ::dup2(err, 2) < 0 || ::chdir(dir.c_str()) != 0)
    ::_exit(127);
  std::vector<char*> argv{const_cast<char*>(RELPOS_CLI)};
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  ::execv(RELPOS_CLI, argv.data());
  ::_exit(127);
}

// The exit code of a child that exited, or -(signal) for one a signal killed.
inline int wait_for(pid_t pid) {
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -WTERMSIG(status);
}

// Waits (up to 60 s) until `file` holds at least `lines` newlines.
inline void wait_for_lines(const std::filesystem::path& file, std::size_t lines) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  for (;;) {
    std::ifstream in(file);
    std::size_t count = 0;
    for (std::string line; std::getline(in, line);) ++count;
    if (count >= lines) return;
    REQUIRE(std::chrono::steady_clock::now() < deadline);
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

}  // namespace relpos::testing
