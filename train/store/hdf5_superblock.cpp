#include "train/store/hdf5_superblock.h"

#include <cstdint>
#include <cstring>

#include "autograd/error.h"
#include "train/store/hdf5_checksum.h"

namespace relpos {
namespace {

constexpr char kSignature[] = "\x89HDF\r\n\x1a\n";
constexpr std::size_t kSignatureBytes = 8;
constexpr std::size_t kVersionOffset = 8;
constexpr std::size_t kOffsetSizeOffset = 9;
// Version 2 and 3: signature, version, offset size, length size, flags, then four
// addresses (base, extension, end of file, root object header), then the checksum.
constexpr std::size_t kFixedBytes = 12;
constexpr std::size_t kAddresses = 4;

}  // namespace

void check_superblock(std::span<const char> image, const std::string& file) {
  require(
      image.size() > kVersionOffset && std::memcmp(image.data(), kSignature, kSignatureBytes) == 0,
      "checkpoint {}: not an HDF5 file", file);
  const int version = static_cast<unsigned char>(image[kVersionOffset]);
  require(version >= 2,
          "checkpoint {}: HDF5 superblock version {} has no checksum (relpos writes version 2 "
          "or later)",
          file, version);
}

void reseal_superblock(std::span<char> image) {
  require(image.size() > kOffsetSizeOffset &&
              (image[kVersionOffset] == 2 || image[kVersionOffset] == 3),
          "reseal_superblock: not an HDF5 image with a version 2 or 3 superblock");
  const std::size_t covered =
      kFixedBytes + kAddresses * static_cast<unsigned char>(image[kOffsetSizeOffset]);
  require(image.size() >= covered + 4,
          "reseal_superblock: the image is shorter than its superblock");
  const std::uint32_t checksum = hdf5_metadata_checksum(image.first(covered));
  for (int i = 0; i < 4; ++i) image[covered + i] = static_cast<char>(checksum >> (8 * i));
}

}  // namespace relpos
