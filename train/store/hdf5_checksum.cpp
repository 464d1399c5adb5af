#include "train/store/hdf5_checksum.h"

#include <cstring>

namespace relpos {
namespace {

std::uint32_t rotate(std::uint32_t x, int k) { return (x << k) | (x >> (32 - k)); }

std::uint32_t load_le32(const unsigned char* p) {
  return std::uint32_t{p[0]} | std::uint32_t{p[1]} << 8 | std::uint32_t{p[2]} << 16 |
         std::uint32_t{p[3]} << 24;
}

}  // namespace

std::uint32_t hdf5_metadata_checksum(std::span<const char> bytes) {
  std::uint32_t a, b, c;
  a = b = c = 0xdeadbeef + static_cast<std::uint32_t>(bytes.size());
  std::size_t length = bytes.size();
  const auto* k = reinterpret_cast<const unsigned char*>(bytes.data());
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

}  // namespace relpos
