#pragma once
// The HDF5 superblock (the file's first bytes) of a checkpoint image: checked before
// HDF5 parses the image, and repaired after HDF5 1.10 produced it.
#include <span>
#include <string>

namespace relpos {

// Requires the HDF5 signature at offset 0 (relpos writes no user block) and a
// superblock of version 2 or later, which carries a checksum. The UsageError
// starts with "checkpoint <file>: ".
void check_superblock(std::span<const char> image, const std::string& file);

// H5Fget_file_image of HDF5 1.10.8 clears the "open for writing" flag of a version 2
// superblock in the image but keeps the checksum computed with the flag set, so
// HDF5 itself then refuses the image. This recomputes the checksum (Jenkins'
// lookup3 hash, as HDF5 uses) over the superblock as it is in the image.
void reseal_superblock(std::span<char> image);

}  // namespace relpos
