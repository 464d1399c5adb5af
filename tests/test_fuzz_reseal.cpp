// The checkpoint fuzzer's resealing mode (tests/fuzz/hdf5_reseal.h): a resealed
// image reaches the parser. Resealing an untouched checkpoint changes no byte (the
// checksums and digests are computed exactly as HDF5 and relpos compute them, in
// continuation chunks too), and an edited /state value or parameter byte, refused
// before resealing, is read after it.
#include <catch2/catch.hpp>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "autograd/error.h"
#include "tests/fixture.h"
#include "tests/fuzz/hdf5_reseal.h"
#include "tests/test_files.h"
#include "train/store/checkpoint.h"
#include "train/store/file_digest.h"

using namespace relpos;
namespace fs = std::filesystem;
using testing::slurp;
using testing::TempDir;

namespace {

// Writes `image` as `path` with a matching whole-file digest, as the fuzz harness does.
void write_with_digest(const fs::path& path, const std::string& image) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << image;
  write_digest(path, image);
}

// The offset of the first `value` bytes after `anchor` in `image`.
std::size_t find_after(const std::string& image, const std::string& anchor,
                       const std::string& value) {
  const std::size_t at = image.find(anchor);
  REQUIRE(at != std::string::npos);
  const std::size_t found = image.find(value, at + anchor.size());
  REQUIRE(found != std::string::npos);
  return found;
}

template <typename T>
std::string bytes_of(T value) {
  std::string bytes(sizeof value, '\0');
  std::memcpy(bytes.data(), &value, sizeof value);
  return bytes;
}

}  // namespace

TEST_CASE("fuzz reseal: an untouched checkpoint stays byte for byte the same",
          "[fuzz][checkpoint]") {
  const std::string seed =
      slurp(testing::source_dir() / "tests/fuzz/corpus/checkpoint/tiny_run_step1.h5");
  REQUIRE(seed.find("OCHK") != std::string::npos);  // continuation chunks are covered
  std::string resealed = seed;
  fuzzing::reseal_checkpoint_image(resealed);
  REQUIRE(resealed == seed);
}

TEST_CASE("fuzz reseal: an edited /state value and parameter reach the parser",
          "[fuzz][checkpoint]") {
  TempDir dir("fuzz_reseal");
  Checkpoint c;
  c.params["a.b"] = Tensor::from_data(std::vector<float>{1, 2, 3, 4}, {4});
  c.config_yaml = "model: {}\n";
  c.step = 3;
  const fs::path saved = dir.path() / "saved.h5", edited = dir.path() / "edited.h5";
  save_checkpoint(saved, c);
  std::string image = slurp(saved);
  image.replace(find_after(image, std::string("step", 5), bytes_of<std::int64_t>(3)), 8,
                bytes_of<std::int64_t>(7));
  const std::string floats = bytes_of(1.0f) + bytes_of(2.0f) + bytes_of(3.0f);
  image.replace(image.find(floats) + 8, 4, bytes_of(9.0f));

  // Before resealing: HDF5's object header checksum refuses the edited step.
  write_with_digest(edited, image);
  REQUIRE_THROWS_WITH(load_checkpoint(edited), Catch::Contains("checksum"));
  fuzzing::reseal_checkpoint_image(image);
  write_with_digest(edited, image);
  const Checkpoint loaded = load_checkpoint(edited);
  REQUIRE(loaded.step == 7);
  REQUIRE(loaded.params.at("a.b").data<float>()[2] == 9.0f);
}

TEST_CASE("fuzz finding: a link info address outside the file is refused before HDF5 sees it",
          "[fuzz][checkpoint][hostile]") {
  // Found by fuzz_checkpoint_resealed in its first seconds: 4 bytes of the root group's
  // link info message changed (its heap address, checksums recomputed). Before: SIGSEGV
  // inside HDF5 (H5Gget_info -> H5B2_open -> H5F__accum_read).
  TempDir dir("fuzz_finding");
  const fs::path path = dir.path() / "finding.h5";
  std::string image = slurp(testing::source_dir() / "tests/fuzz/findings/link_info_address.h5");
  fuzzing::reseal_checkpoint_image(image);  // as the harness did
  write_with_digest(path, image);
  REQUIRE_THROWS_WITH(load_checkpoint(path), Catch::Contains("checkpoint " + path.string()) &&
                                                 Catch::Contains("a group's link heap") &&
                                                 Catch::Contains("lies outside the 40697-byte"));
}

TEST_CASE("fuzz finding: a malformed link message is refused before HDF5 sees it",
          "[fuzz][checkpoint][hostile]") {
  // Found by fuzz_checkpoint_resealed in its first seconds, after the finding above was
  // fixed: a mutated compact link message. Before: SIGSEGV inside HDF5, which freed an
  // unset pointer (H5Lget_name_by_idx -> H5G__link_release_table -> H5MM_xfree).
  TempDir dir("fuzz_finding");
  const fs::path path = dir.path() / "finding.h5";
  std::string image = slurp(testing::source_dir() / "tests/fuzz/findings/link_message_free.h5");
  fuzzing::reseal_checkpoint_image(image);
  write_with_digest(path, image);
  REQUIRE_THROWS_AS(load_checkpoint(path), UsageError);
  REQUIRE_THROWS_WITH(load_checkpoint(path), Catch::StartsWith("checkpoint " + path.string()));
}
