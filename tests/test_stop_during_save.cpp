// A second stop signal ends the process at once; when it lands while a file is being
// replaced (a checkpoint save), the .tmp being written is removed first, never left
// behind at checkpoint size.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <string>
#include <thread>

#include "tests/test_files.h"
#include "train/stop_signal.h"
#include "train/store/atomic_file.h"

namespace fs = std::filesystem;

TEST_CASE("stop: a second signal during a save leaves no .tmp behind", "[stop]") {
  const relpos::testing::TempDir dir("stop_during_save");
  const fs::path target = dir.path() / "big.bin", tmp = dir.path() / "big.bin.tmp";
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {  // saves 64 MiB over and over, after a first (pending) stop request
    const relpos::StopSignals signals;
    ::raise(SIGTERM);
    const std::string bytes(std::size_t{64} << 20, 'x');
    for (;;) relpos::replace_file(target, bytes);
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (!fs::exists(tmp)) {  // a write is under way
    REQUIRE(std::chrono::steady_clock::now() < deadline);
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  ::kill(child, SIGTERM);
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);
  REQUIRE(WIFEXITED(status));
  REQUIRE(WEXITSTATUS(status) == 128 + SIGTERM);
  REQUIRE_FALSE(fs::exists(tmp));  // before: a 64 MiB .tmp stayed
}
