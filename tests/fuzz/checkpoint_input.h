#pragma once
// What both checkpoint harnesses do with an input: write its bytes as a checkpoint
// file, with a matching digest beside it (as a hostile file would have), and read it
// with load_checkpoint. Every input must end in a Checkpoint or a UsageError;
// anything else (a crash, another exception, a leak, a hang) is a finding.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <span>
#include <string>

#include "autograd/error.h"
#include "train/store/checkpoint.h"
#include "train/store/file_digest.h"

namespace relpos::fuzzing {

inline void load_as_checkpoint(std::span<const char> bytes) {
  static const std::filesystem::path path =
      std::filesystem::temp_directory_path() /
      ("relpos_fuzz_checkpoint_" + std::to_string(::getpid()) + ".h5");
  std::ofstream(path, std::ios::binary | std::ios::trunc)
      .write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  write_digest(path, bytes);
  try {
    load_checkpoint(path);
  } catch (const UsageError&) {
  }
}

}  // namespace relpos::fuzzing
