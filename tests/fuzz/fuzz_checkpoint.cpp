// libFuzzer harness: the bytes of a checkpoint file, with a matching digest beside
// it (as a hostile file would have), read by load_checkpoint. Every input must end
// in a Checkpoint or a UsageError; anything else is a finding.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <span>
#include <string>

#include "autograd/error.h"
#include "train/store/checkpoint.h"
#include "train/store/file_digest.h"

namespace {

const std::filesystem::path& input_path() {
  static const std::filesystem::path path =
      std::filesystem::temp_directory_path() /
      ("relpos_fuzz_checkpoint_" + std::to_string(::getpid()) + ".h5");
  return path;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::span<const char> bytes(reinterpret_cast<const char*>(data), size);
  std::ofstream(input_path(), std::ios::binary | std::ios::trunc)
      .write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  relpos::write_digest(input_path(), bytes);
  try {
    relpos::load_checkpoint(input_path());
  } catch (const relpos::UsageError&) {
  }
  return 0;
}
