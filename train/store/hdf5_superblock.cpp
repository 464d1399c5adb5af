#include "train/store/hdf5_superblock.h"

#include <cstdint>
#include <cstring>

#include "autograd/error.h"

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

std::uint32_t rotate(std::uint32_t x, int k) { return (x << k) | (x >> (32 - k)); }

std::uint32_t load_le32(const unsigned char* p) {
  return std::uint32_t{p[0]} | std::uint32_t{p[1]} << 8 | std::uint32_t{p[2]} << 16 |
         std::uint32_t{p[3]} << 24;
}

// Bob Jenkins' lookup3 hashlittle with initial value 0 (HDF5's H5_checksum_metadata).
std::uint32_t lookup3(std::span<const unsigned char> key) {
  std::uint32_t a, b, c;
  a = b = c = 0xdeadbeef + static_cast<std::uint32_t>(key.size());
  std::size_t length = key.size();
  const unsigned char* k = key.data();
  while (length > 12) {
    a += load_le32(k);
    b += load_le32(k + 4);
    c += load_le32(k + 8);
    a -= c, a ^= rotate(c, 4), c += b;
    b -= a, b ^= rotate(a, 6), a += c;
    c -= b, c ^= rotate(b, 8), b += a;
    a -= c, a ^= rotate(c, 16), c += b;
    b -= a, b ^= rotate(a, 19), a += c;
    c -= b, c ^= rotate(b, 4), b += a;
    length -= 12;
    k += 12;
  }
  if (length == 0) return c;
  unsigned char tail[12] = {};
  std::memcpy(tail, k, length);
  a += load_le32(tail);
  b += load_le32(tail + 4);
  c += load_le32(tail + 8);
  c ^= b, c -= rotate(b, 14);
  a ^= c, a -= rotate(c, 11);
  b ^= a, b -= rotate(a, 25);
  c ^= b, c -= rotate(b, 16);
  a ^= c, a -= rotate(c, 4);
  b ^= a, b -= rotate(a, 14);
  c ^= b, c -= rotate(b, 24);
  return c;
}

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
  const auto* bytes = reinterpret_cast<const unsigned char*>(image.data());
  const std::uint32_t checksum = lookup3({bytes, covered});
  for (int i = 0; i < 4; ++i) image[covered + i] = static_cast<char>(checksum >> (8 * i));
}

}  // namespace relpos
