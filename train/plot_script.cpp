#include "train/plot_script.h"

#include <fmt/format.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <iostream>

namespace relpos {
namespace {

constexpr int kNoMatplotlib = 3;  // tools/plot.py's exit status when it cannot import matplotlib

std::string from_env(const char* name, const char* fallback) {
  const char* value = std::getenv(name);
  return value != nullptr && *value != '\0' ? value : fallback;
}

// The word as the shell reads it: unchanged when it holds only safe characters.
std::string shell_quoted(const std::string& word) {
  if (!word.empty() && word.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                                              "0123456789_./=+,:@%-") == std::string::npos)
    return word;
  std::string quoted = "'";
  for (const char c : word) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

std::string python_path() { return from_env("RELPOS_PYTHON", "/usr/bin/python3"); }
std::string script_path() { return from_env("RELPOS_PLOT_SCRIPT", RELPOS_DEFAULT_PLOT_SCRIPT); }

}  // namespace

std::vector<InputFile> plot_script_inputs() {
  return {{python_path(), "the python interpreter"}, {script_path(), "the plot script"}};
}

bool run_plot_script(const std::vector<std::string>& args, std::ostream& out) {
  const std::string python = python_path();
  const std::string script = script_path();
  std::string command = fmt::format("{} {}", shell_quoted(python), shell_quoted(script));
  for (const std::string& arg : args) command += fmt::format(" {}", shell_quoted(arg));

  std::string why;
  if (::access(python.c_str(), X_OK) != 0) {
    why = fmt::format("no python at {}", python);
  } else if (!std::filesystem::is_regular_file(script)) {
    why = fmt::format("no plot script at {}", script);
  } else {
    std::cout << std::flush;
    const int status = std::system(command.c_str());
    const int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    if (code == 0) return true;
    why =
        code == kNoMatplotlib
            ? fmt::format("matplotlib is not installed for {} (Debian: python3-matplotlib)", python)
            : fmt::format("{} failed (exit status {})", script, code);
  }
  out << fmt::format("relpos: figures not drawn: {}; to draw them later, run:\n  {}\n", why,
                     command);
  return false;
}

}  // namespace relpos
