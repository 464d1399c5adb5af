#pragma once
// HDF5's metadata checksum: Bob Jenkins' lookup3 hashlittle with initial value 0, as
// HDF5 computes it (H5_checksum_metadata) over its superblock and every version 2
// object header chunk.
#include <cstdint>
#include <span>

namespace relpos {

std::uint32_t hdf5_metadata_checksum(std::span<const char> bytes);

}  // namespace relpos
