// Under a memory limit (ulimit -v or ulimit -d, set in the child) every command ends in
// exit 0 or the one-line error naming the limit, exit 2; never in a signal or a hang.
// Before: an address-space limit of 1.3 GB ended `relpos train` in SIGSEGV inside
// oneDNN, 1.2 GB hung it in OpenBLAS's constructor (its allocation retried forever).
// The limits are stepped from 0.5 to 4 GiB by 25%, so that the band where the libraries load
// but cannot start or run is crossed whatever they map on this machine; below the
// libraries' own mapping the dynamic loader refuses relpos before any of its code runs
// (exit 127, docs/config.md "Bounds and memory"), which is counted, not failed.
#include <sys/resource.h>

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "tests/trained_box.h"

using namespace relpos::testing;

TEST_CASE("memory limits: a limit too small ends in one line, exit 2, never a signal or hang",
          "[cli][memory][hostile][slow]") {
  TrainedBox box("memory_limits");
  const int resource = GENERATE(RLIMIT_AS, RLIMIT_DATA);
  const std::vector<std::vector<std::string>> commands = {
      {"eval", box.checkpoint().string(), "--batches", "1"},
      {"sample", box.checkpoint().string(), "--prompt", "The", "--tokens", "50", "--no-cache"},
      {"train", "tiny.yaml", "train.out_dir=limited", "--overwrite"}};
  for (const auto& command : commands) {
    int ran = 0, refused = 0;
    for (double gib = 0.5; gib <= 4.0; gib *= 1.25) {
      const auto bytes = static_cast<rlim_t>(gib * 1024 * 1024 * 1024);
      const RelposResult r = relpos_in(box.path(), command, 60, {}, {resource, bytes});
      INFO((resource == RLIMIT_AS ? "RLIMIT_AS " : "RLIMIT_DATA ")
           << bytes << " bytes: relpos " << command[0] << "\nexit " << r.exit_code
           << "\nstderr: " << r.err);
      if (r.exit_code == 127) {  // the loader could not map the libraries
        REQUIRE(r.err.find("error while loading shared libraries") != std::string::npos);
      } else if (r.exit_code == 2) {
        require_one_line_error(r, {"limit"});
        ++refused;
      } else {
        REQUIRE(r.exit_code == 0);
        ++ran;
      }
    }
    INFO("relpos " << command[0]);
    CHECK(refused > 0);
    CHECK(ran > 0);
  }
}
