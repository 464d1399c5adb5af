#pragma once
// Running a shell command (the relpos binary, a Python script) with its output captured.
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "tests/test_files.h"

namespace relpos::testing {

struct CommandResult {
  int exit_code = -1;
  std::string out, err;
};

// Runs `command` through the shell with its stdout and stderr in dir/out and dir/err.
inline CommandResult run_command(const std::filesystem::path& dir, const std::string& command) {
  const std::string full =
      command + " > " + (dir / "out").string() + " 2> " + (dir / "err").string();
  const int status = std::system(full.c_str());
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, slurp(dir / "out"), slurp(dir / "err")};
}

}  // namespace relpos::testing
