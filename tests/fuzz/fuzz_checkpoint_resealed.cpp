// libFuzzer harness, resealing mode: the mutated bytes of a checkpoint file with every
// digest and checksum recomputed after the mutation (dataset fnv1a64 attributes, HDF5
// object header and superblock checksums, the whole-file digest; tests/fuzz/hdf5_reseal.h),
// so that the mutation reaches HDF5's parser and relpos's walk of the file.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "tests/fuzz/checkpoint_input.h"
#include "tests/fuzz/hdf5_reseal.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::vector<char> image(data, data + size);
  relpos::fuzzing::reseal_checkpoint_image(image);
  relpos::fuzzing::load_as_checkpoint(image);
  return 0;
}
