#include "tests/fuzz/hdf5_reseal.h"

#include <cstdint>
#include <cstring>
#include <set>
#include <string_view>
#include <vector>

#include "train/store/file_digest.h"

// HDF5's own metadata checksum (Jenkins lookup3, H5private.h): exported by libhdf5
// but declared in no public header. Using it keeps the checksums exactly HDF5's.
extern "C" std::uint32_t H5_checksum_metadata(const void* data, std::size_t len,
                                              std::uint32_t initval);

namespace relpos::fuzzing {
namespace {

// Format constants (HDF5 file format specification, version 2 structures).
constexpr std::uint64_t kSuperblockChecksumAt = 44;  // 8-byte offsets and lengths
constexpr std::uint8_t kLinkMessage = 0x06, kLayoutMessage = 0x08, kAttributeMessage = 0x0C,
                       kContinuationMessage = 0x10;
constexpr std::uint8_t kSharedMessage = 0x02;  // message flag: the message lives elsewhere
constexpr std::size_t kMostChunks = 1024, kMostObjects = 1 << 16;

// Bounds-checked little-endian access to the image: a mutated size or address never
// reads or writes outside it.
struct Image {
  std::span<char> bytes;

  bool has(std::uint64_t at, std::uint64_t n) const {
    return at <= bytes.size() && n <= bytes.size() - at;
  }
  std::uint8_t byte(std::uint64_t at) const { return static_cast<std::uint8_t>(bytes[at]); }
  std::uint64_t le(std::uint64_t at, unsigned width) const {
    std::uint64_t value = 0;
    for (unsigned i = 0; i < width; ++i) value |= std::uint64_t{byte(at + i)} << (8 * i);
    return value;
  }
  void put_le(std::uint64_t at, std::uint64_t value, unsigned width) {
    for (unsigned i = 0; i < width; ++i) bytes[at + i] = static_cast<char>(value >> (8 * i));
  }
  bool signature(std::uint64_t at, std::string_view sig) const {
    return has(at, sig.size()) && std::memcmp(bytes.data() + at, sig.data(), sig.size()) == 0;
  }
  void checksum(std::uint64_t start, std::uint64_t checksum_at) {
    put_le(checksum_at, H5_checksum_metadata(bytes.data() + start, checksum_at - start, 0), 4);
  }
};

// One chunk of an object header: [start, checksum_at) is covered by the checksum at
// checksum_at; its messages lie in [messages, checksum_at).
struct Chunk {
  std::uint64_t start, messages, checksum_at;
};

// What one object header holds that resealing needs.
struct ObjectHeader {
  std::vector<Chunk> chunks;
  std::uint8_t flags = 0;
  std::uint64_t data_at = 0, data_size = 0;  // a contiguous layout
  bool has_layout = false;
  std::uint64_t digest_at = 0;  // the value of the `fnv1a64` attribute
  bool has_digest = false;
};

class Resealer {
 public:
  explicit Resealer(std::span<char> bytes) : image_{bytes} {}

  void run() {
    if (!image_.signature(0, "\x89HDF\r\n\x1a\n") || !image_.has(0, kSuperblockChecksumAt + 4))
      return;
    const std::uint8_t version = image_.byte(8);
    if ((version != 2 && version != 3) || image_.byte(9) != 8 || image_.byte(10) != 8) return;
    if (image_.le(12, 8) == 0) {             // base address 0: addresses are offsets in the image
      pending_.push_back(image_.le(20, 8));  // the superblock extension, if any
      pending_.push_back(image_.le(36, 8));  // the root group
      while (!pending_.empty() && visited_.size() < kMostObjects) {
        const std::uint64_t address = pending_.back();
        pending_.pop_back();
        if (visited_.insert(address).second) reseal_object(address);
      }
    }
    image_.checksum(0, kSuperblockChecksumAt);
  }

 private:
  void reseal_object(std::uint64_t at) {
    if (!image_.signature(at, "OHDR") || !image_.has(at, 6) || image_.byte(at + 4) != 2) return;
    ObjectHeader object;
    object.flags = image_.byte(at + 5);
    std::uint64_t pos = at + 6;
    if (object.flags & 0x20) pos += 16;  // access, modification, change, birth times
    if (object.flags & 0x10) pos += 4;   // attribute phase change values
    const unsigned width = 1u << (object.flags & 0x03);
    if (!image_.has(pos, width)) return;
    const std::uint64_t size = image_.le(pos, width);
    pos += width;
    if (!image_.has(pos, size) || !image_.has(pos + size, 4)) return;
    object.chunks.push_back({at, pos, pos + size});
    for (std::size_t i = 0; i < object.chunks.size(); ++i) read_messages(object.chunks[i], object);
    if (object.has_layout && object.has_digest && image_.has(object.data_at, object.data_size)) {
      const std::span<const char> data(image_.bytes.data() + object.data_at, object.data_size);
      image_.put_le(object.digest_at, fnv1a64(data), 8);
    }
    for (const Chunk& chunk : object.chunks) image_.checksum(chunk.start, chunk.checksum_at);
  }

  void read_messages(const Chunk chunk, ObjectHeader& object) {
    const std::uint64_t header = (object.flags & 0x04) ? 6 : 4;  // + creation order
    for (std::uint64_t p = chunk.messages; chunk.checksum_at - p >= header;) {
      const std::uint8_t type = image_.byte(p), flags = image_.byte(p + 3);
      const std::uint64_t size = image_.le(p + 1, 2), data = p + header;
      if (size > chunk.checksum_at - data) return;
      if (!(flags & kSharedMessage)) read_message(type, data, size, object);
      p = data + size;
    }
  }

  void read_message(std::uint8_t type, std::uint64_t data, std::uint64_t size,
                    ObjectHeader& object) {
    const std::uint64_t end = data + size;
    if (type == kContinuationMessage && size >= 16) {
      const std::uint64_t at = image_.le(data, 8), length = image_.le(data + 8, 8);
      if (length >= 8 && image_.has(at, length) && image_.signature(at, "OCHK") &&
          object.chunks.size() < kMostChunks && seen_chunks_.insert(at).second)
        object.chunks.push_back({at, at + 4, at + length - 4});
    } else if (type == kLinkMessage && size >= 2) {
      read_link(data, end);
    } else if (type == kLayoutMessage && size >= 18) {
      const std::uint8_t version = image_.byte(data);
      if ((version == 3 || version == 4) && image_.byte(data + 1) == 1) {  // contiguous
        object.data_at = image_.le(data + 2, 8);
        object.data_size = image_.le(data + 10, 8);
        object.has_layout = true;
      }
    } else if (type == kAttributeMessage && size >= 8) {
      const std::uint8_t version = image_.byte(data);
      if (version != 2 && version != 3) return;  // version 1 pads its parts; not written
      const std::uint64_t name_size = image_.le(data + 2, 2), type_size = image_.le(data + 4, 2),
                          space_size = image_.le(data + 6, 2);
      const std::uint64_t name = data + (version == 3 ? 9 : 8);
      const std::uint64_t value = name + name_size + type_size + space_size;
      if (name_size == 8 && value <= end && end - value >= 8 && image_.signature(name, "fnv1a64")) {
        object.digest_at = value;
        object.has_digest = true;
      }
    }
  }

  // A link message: a hard link's target is an object header to reseal too.
  void read_link(std::uint64_t p, std::uint64_t end) {
    const std::uint8_t flags = image_.byte(p + 1);
    p += 2;
    std::uint8_t link_type = 0;  // hard unless stated
    if (flags & 0x08) {
      if (p >= end) return;
      link_type = image_.byte(p++);
    }
    if (flags & 0x04) p += 8;  // creation order
    if (flags & 0x10) p += 1;  // character set
    const unsigned width = 1u << (flags & 0x03);
    if (link_type != 0 || p > end || end - p < width) return;
    const std::uint64_t name_length = image_.le(p, width);
    p += width;
    if (name_length > end - p || end - p - name_length < 8) return;
    pending_.push_back(image_.le(p + name_length, 8));
  }

  Image image_;
  std::vector<std::uint64_t> pending_;
  std::set<std::uint64_t> visited_, seen_chunks_;
};

}  // namespace

void reseal_checkpoint_image(std::span<char> image) { Resealer(image).run(); }

}  // namespace relpos::fuzzing
