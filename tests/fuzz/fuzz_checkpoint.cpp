// libFuzzer harness: the mutated bytes of a checkpoint file, with a matching
// whole-file digest, read by load_checkpoint. Most mutations stop at HDF5's metadata
// checksums or a dataset's digest; fuzz_checkpoint_resealed gets past those.
#include <cstddef>
#include <cstdint>
#include <span>

#include "tests/fuzz/checkpoint_input.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  relpos::fuzzing::load_as_checkpoint(
      std::span<const char>(reinterpret_cast<const char*>(data), size));
  return 0;
}
