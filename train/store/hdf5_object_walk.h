#pragma once
// A walk of the object headers of an HDF5 image as relpos writes it (superblock
// version 2 or 3 with 8-byte offsets and lengths and base address 0, version 2 object
// headers and their continuation chunks, groups with their links in the header). It
// serves the check made before HDF5 parses a checkpoint (hdf5_metadata_check.h) and
// the checkpoint fuzzer's resealing mode (tests/fuzz/hdf5_reseal.h).
//
// The walk itself never refuses anything and never reads outside the image: what it
// cannot read (another object header version, a bad signature, a continuation chunk or
// link target outside the image) is not followed but reported to the visitor, which
// sees every message and decides what to refuse.
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace relpos {

// Bounds-checked little-endian reads of an image.
struct Hdf5Bytes {
  std::span<const char> image;

  bool has(std::uint64_t at, std::uint64_t n) const {
    return at <= image.size() && n <= image.size() - at;
  }
  std::uint8_t byte(std::uint64_t at) const { return static_cast<std::uint8_t>(image[at]); }
  std::uint64_t le(std::uint64_t at, unsigned width) const {
    std::uint64_t value = 0;
    for (unsigned i = 0; i < width; ++i) value |= std::uint64_t{byte(at + i)} << (8 * i);
    return value;
  }
  bool signature(std::uint64_t at, std::string_view sig) const;
};

// HDF5 file format specification: message types and the undefined address.
namespace hdf5_message {
constexpr std::uint8_t kDataspace = 0x01, kLinkInfo = 0x02, kDatatype = 0x03, kLink = 0x06,
                       kLayout = 0x08, kAttribute = 0x0C, kContinuation = 0x10,
                       kAttributeInfo = 0x15;
constexpr std::uint8_t kShared = 0x02;  // message flag: the message lives elsewhere
}  // namespace hdf5_message
constexpr std::uint64_t kHdf5Undefined = ~std::uint64_t{0};

// One message of an object header: its header at `at`, its body [data, data + size).
struct Hdf5Message {
  std::uint8_t type = 0, flags = 0;
  std::uint64_t at = 0, data = 0, size = 0;
};

// One chunk of an object header ("OHDR" or "OCHK"): the checksum at checksum_at covers
// [start, checksum_at).
struct Hdf5Chunk {
  std::uint64_t start = 0, checksum_at = 0;
};

struct Hdf5Object {
  std::uint64_t address = 0;
  std::string path;  // "/" for the root group, then the link names that led here
  // A version 2 object header ("OHDR") whose first chunk lies inside the image; an
  // unreadable one has no chunks and no messages.
  bool readable = false;
  std::uint8_t flags = 0;  // of the object header
  std::vector<Hdf5Chunk> chunks;
  std::vector<Hdf5Message> messages;  // of every chunk, in order
  // Message headers whose size runs past the end of their chunk (the chunk's other
  // messages after it are not read).
  std::vector<std::uint64_t> overruns;
  // Continuation messages (their `at`) whose chunk was not read: outside the image,
  // shorter than 8 bytes, without the "OCHK" signature, or read before.
  std::vector<std::uint64_t> unread_chunks;
};

// A link message as HDF5 writes it: version 1, no unknown flag, an ASCII or UTF-8 name
// of at least one byte inside the message; a hard link's object address, or a soft or
// external link's value inside the message.
struct Hdf5Link {
  bool well_formed = false;
  bool hard = false;
  std::uint64_t object = kHdf5Undefined;  // a hard link's object header
  std::string_view name;                  // the link's name, inside the image
  std::uint64_t end = 0;                  // where its last field ends
};
Hdf5Link read_hdf5_link(Hdf5Bytes bytes, const Hdf5Message& message);

// The checksum the bytes of `chunk` give (lookup3 of [start, checksum_at)): what a sound
// chunk records at checksum_at.
std::uint32_t hdf5_chunk_checksum(Hdf5Bytes bytes, const Hdf5Chunk& chunk);

// Visits each object header reachable from the superblock extension and the root group
// through hard links in link messages, once, after reading all its chunks (or finding
// it unreadable); then follows its well-formed hard links. Returns false, visiting
// nothing, if the superblock is not one the walk reads, or after visiting 2^20 objects
// with more left. The visitor may throw to stop the walk.
bool walk_hdf5_objects(Hdf5Bytes bytes, const std::function<void(const Hdf5Object&)>& visit);

}  // namespace relpos
