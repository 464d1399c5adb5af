// libFuzzer harness: a config file as a user could write it, read by load_config.
// Every input must end in a config or a UsageError; anything else (another
// exception, a crash, a hang, a leak) is a finding.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>

#include "autograd/error.h"
#include "train/config/config.h"

namespace {

const std::filesystem::path& input_path() {
  static const std::filesystem::path path =
      std::filesystem::temp_directory_path() /
      ("relpos_fuzz_config_" + std::to_string(::getpid()) + ".yaml");
  return path;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::ofstream(input_path(), std::ios::binary | std::ios::trunc)
      .write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  try {
    const relpos::RunConfig config = relpos::load_config({input_path().string()}, {});
    relpos::config_from_yaml(relpos::to_yaml(config), "fuzz round trip");
  } catch (const relpos::UsageError&) {
  }
  return 0;
}
