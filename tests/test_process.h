#pragma once
// Running the relpos binary as a child process the test can signal: spawn it
// with stdout and stderr going to files, send it signals, wait for its end; or
// run it to its end within a time limit and check its one-line error.
#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace relpos::testing {

// The words of a command line that holds no quotes and no spaces inside an argument (as
// the tests' temporary paths hold none): words("eval ckpt.h5 --batches 1").
inline std::vector<std::string> words(const std::string& line) {
  std::istringstream in(line);
  return {std::istream_iterator<std::string>(in), {}};
}

// A resource limit the child sets before it runs relpos, as `ulimit -v` (RLIMIT_AS) or
// `ulimit -d` (RLIMIT_DATA) does; none when resource is negative.
struct ChildLimit {
  int resource = -1;
  rlim_t bytes = 0;
};

// Starts `RELPOS_CLI args...` in `dir` with stdout to dir/out and stderr to dir/err,
// `env` ("NAME=value" each) added to its environment and `limit` set.
inline pid_t spawn_relpos(const std::vector<std::string>& args, const std::filesystem::path& dir,
                          const std::vector<std::string>& env = {}, ChildLimit limit = {}) {
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid > 0) return pid;
  const struct rlimit value = {limit.bytes, limit.bytes};
  if (limit.resource >= 0 && ::setrlimit(limit.resource, &value) != 0) ::_exit(126);
  for (const std::string& assignment : env) ::putenv(const_cast<char*>(assignment.c_str()));
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

// Waits up to `seconds` for the child; one still running then is killed (SIGKILL)
// and reported as -9, so that a hang fails the test instead of stopping the suite.
inline int wait_at_most(pid_t pid, int seconds) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  int status = 0;
  while (::waitpid(pid, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() > deadline) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      return -SIGKILL;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : -WTERMSIG(status);
}

struct RelposResult {
  int exit_code;  // -(signal) for a child a signal ended, -9 for one that ran out of time
  std::string out, err;
};

inline std::string read_back(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// Runs `relpos args...` in `dir` (no shell: any path is one argument) to its end, at
// most `seconds`, with `env` added to its environment and `limit` set; its stdout and
// stderr are dir/out and dir/err.
inline RelposResult relpos_in(const std::filesystem::path& dir,
                              const std::vector<std::string>& args, int seconds = 120,
                              const std::vector<std::string>& env = {}, ChildLimit limit = {}) {
  const int code = wait_at_most(spawn_relpos(args, dir, env, limit), seconds);
  return {code, read_back(dir / "out"), read_back(dir / "err")};
}

// Exit code 2 and one line on stderr, "relpos: error: ...", holding every needle.
inline void require_one_line_error(const RelposResult& r, const std::vector<std::string>& needles) {
  INFO("stderr: " << r.err << "\nstdout: " << r.out);
  REQUIRE(r.exit_code == 2);
  REQUIRE(std::count(r.err.begin(), r.err.end(), '\n') == 1);
  REQUIRE(r.err.rfind("relpos: error: ", 0) == 0);
  for (const std::string& n : needles) REQUIRE(r.err.find(n) != std::string::npos);
}

}  // namespace relpos::testing
