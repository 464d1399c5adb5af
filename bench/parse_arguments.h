#pragma once
// Command-line parsing shared by the benchmark programs: --help prints and exits 0; a bad
// argument is one line on stderr and exit code 2, like relpos's own CLI.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <optional>

namespace relpos::bench {

// The exit code to return at once, or nothing when the arguments parsed.
inline std::optional<int> parse_arguments(CLI::App& app, int argc, char** argv) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == static_cast<int>(CLI::ExitCodes::Success)) return app.exit(e);
    std::fprintf(stderr, "%s: error: %s (see --help)\n", app.get_name().c_str(), e.what());
    return 2;
  }
  return std::nullopt;
}

}  // namespace relpos::bench
