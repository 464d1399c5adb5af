// One changed byte in a checkpoint, wherever it lies: in process over a sweep of the whole
// file, and through the relpos binary once in each HDF5 structure.
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <new>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "autograd/error.h"
#include "tests/checkpoint_bytes.h"
#include "tests/sample_checkpoint.h"
#include "tests/test_files.h"
#include "tests/test_process.h"
#include "train/store/checkpoint.h"
#include "train/store/file_digest.h"

using namespace relpos;
namespace fs = std::filesystem;
using testing::data_offset;
using testing::flip_byte;
using testing::redigest;
using testing::relpos_in;
using testing::RelposResult;
using testing::require_one_line_error;
using testing::sample_checkpoint;
using testing::slurp;
using testing::TempDir;

namespace {

// A copy of `bytes` with byte `at` flipped, and a digest file that matches it, so that the
// change reaches the HDF5 parser. Each copy has its own name: HDF5 shares an open file
// between opens of the same file, and a load that failed may leave one open.
fs::path changed_copy(const TempDir& dir, const std::string& bytes, std::uint64_t at) {
  const fs::path changed = dir.write("changed_" + std::to_string(at) + ".h5", bytes);
  flip_byte(changed, at);
  redigest(changed);
  return changed;
}

// `message` on one line of the outcomes file.
std::string one_line(std::string message) {
  std::replace(message.begin(), message.end(), '\n', ' ');
  return message;
}

// What `relpos inspect` makes of a checkpoint: "0" it loads; "2 <error>" it is refused
// with that one line and exit code 2; "1 <what>" any other exception (exit code 1).
std::string outcome(const fs::path& file) {
  try {
    load_checkpoint(file);
    return "0";
  } catch (const UsageError& e) {
    return "2 " + one_line(e.what());
  } catch (const std::bad_alloc&) {
    return "2 out of memory";
  } catch (const std::length_error&) {
    return "2 out of memory";
  } catch (const std::exception& e) {
    return "1 " + one_line(e.what());
  }
}

// The outcome of a copy changed at each position, loaded in process, one copy after the
// other, by a child process that ends with _exit: HDF5 1.10 leaks blocks on some corrupt
// files, and its exit-time teardown would then print "infinite loop closing library"
// lines (the relpos binary skips that teardown too, train/main.cpp). A crash or a hang
// (60 s) fails the test and names the position.
std::vector<std::string> outcomes(const TempDir& dir, const std::string& bytes,
                                  const std::vector<std::uint64_t>& positions) {
  const fs::path log = dir.path() / "outcomes.txt";
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    std::ofstream out(log);
    for (const std::uint64_t at : positions) {
      const fs::path changed = changed_copy(dir, bytes, at);
      out << outcome(changed) << std::endl;  // flushed: a crash leaves the lines before it
      fs::remove(changed);
      fs::remove(digest_path(changed));
    }
    ::_exit(0);
  }
  const int code = testing::wait_at_most(pid, 60);
  std::vector<std::string> lines;
  std::istringstream in(slurp(log));
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  INFO("the child ended with " << code << " after " << lines.size() << " of " << positions.size()
                               << " positions");
  if (lines.size() < positions.size()) INFO("at byte " << positions[lines.size()]);
  REQUIRE(code == 0);
  REQUIRE(lines.size() == positions.size());
  return lines;
}

}  // namespace

// In process, where a changed byte costs a load, not a process: the CLI adds only the
// mapping of errors to one line and an exit code (checked below, per HDF5 structure).
TEST_CASE("one changed byte anywhere in a checkpoint is loaded or refused, never a crash",
          "[checkpoint][slow]") {
  TempDir dir("checkpoint_sweep");
  const fs::path good = dir.path() / "good.h5";
  save_checkpoint(good, sample_checkpoint());
  const std::string bytes = slurp(good);
  const std::uint64_t config_at = data_offset(good, "/config");
  const std::uint64_t config_end = config_at + sample_checkpoint().config_yaml.size();
  // Every byte of the superblock and of the config, the first, middle and last byte of
  // every HDF5 structure, and every 37th byte elsewhere.
  std::set<std::uint64_t> chosen;
  for (std::uint64_t at = 0; at < bytes.size(); ++at)
    if (at < 48 || (at >= config_at && at < config_end) || at % 37 == 0) chosen.insert(at);
  for (const testing::Hdf5Region& r : testing::hdf5_regions(good))
    chosen.insert({r.begin, (r.begin + r.end) / 2, r.end - 1});
  const std::vector<std::uint64_t> positions(chosen.begin(), chosen.end());
  REQUIRE(positions.size() > 300);
  const std::vector<std::string> results = outcomes(dir, bytes, positions);
  int refused = 0;
  for (std::size_t i = 0; i < positions.size(); ++i) {
    INFO("byte " << positions[i] << " of " << bytes.size() << ": " << results[i]);
    REQUIRE((results[i] == "0" || results[i].rfind("2 ", 0) == 0));
    if (results[i] != "0") ++refused;
  }
  REQUIRE(refused > static_cast<int>(positions.size()) / 2);
}

TEST_CASE("cli: one changed byte in each HDF5 structure of a checkpoint: loaded or one line",
          "[checkpoint][slow]") {
  TempDir dir("checkpoint_structures");
  const fs::path good = dir.path() / "good.h5";
  save_checkpoint(good, sample_checkpoint());
  const std::string bytes = slurp(good);
  // The middle byte of each structure (superblock, object headers, dataset data, the
  // B-trees and heaps between them): the binary does what the in-process load does, exit
  // 0, or exit 2 with one line naming the file, and neither crashes nor hangs (10 s).
  const std::vector<testing::Hdf5Region> regions = testing::hdf5_regions(good);
  REQUIRE(regions.size() > 30);
  std::vector<std::uint64_t> middles;
  for (const testing::Hdf5Region& r : regions) middles.push_back((r.begin + r.end) / 2);
  const std::vector<std::string> in_process = outcomes(dir, bytes, middles);
  for (std::size_t i = 0; i < regions.size(); ++i) {
    const fs::path changed = changed_copy(dir, bytes, middles[i]);
    const RelposResult cli = relpos_in(dir.path(), {"inspect", changed.string()}, 10);
    INFO(regions[i].what << " [" << regions[i].begin << ", " << regions[i].end << "), byte "
                         << middles[i] << ": in process '" << in_process[i]
                         << "', stderr: " << cli.err);
    if (in_process[i] == "0") {
      REQUIRE(cli.exit_code == 0);
    } else {
      REQUIRE(in_process[i].rfind("2 ", 0) == 0);
      const bool out_of_memory = in_process[i] == "2 out of memory";
      require_one_line_error(cli, {out_of_memory ? "out of memory" : changed.filename().string()});
    }
  }
  // Without the rewritten digest file, every change is refused before parsing.
  const fs::path changed = dir.write("changed.h5", bytes);
  write_digest(changed, bytes);
  flip_byte(changed, data_offset(good, "/config") + 1);
  require_one_line_error(relpos_in(dir.path(), {"inspect", changed.string()}),
                         {"its content digest"});
}
