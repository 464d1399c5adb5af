#include "tests/fuzz/hdf5_reseal.h"

#include <cstdint>
#include <string_view>

#include "train/store/file_digest.h"
#include "train/store/hdf5_object_walk.h"
#include "train/store/hdf5_superblock.h"

namespace relpos::fuzzing {
namespace {

void put_le(std::span<char> image, std::uint64_t at, std::uint64_t value, unsigned width) {
  for (unsigned i = 0; i < width; ++i) image[at + i] = static_cast<char>(value >> (8 * i));
}

// The bytes a contiguous layout message names, and the value of the `fnv1a64`
// attribute, in one object header.
struct DatasetDigest {
  std::uint64_t data_at = 0, data_size = 0, digest_at = 0;
  bool has_layout = false, has_digest = false;
};

void read_digest_parts(Hdf5Bytes bytes, const Hdf5Message& message, DatasetDigest& dataset) {
  const std::uint64_t data = message.data, end = message.data + message.size;
  if (message.type == hdf5_message::kLayout && message.size >= 18) {
    const std::uint8_t version = bytes.byte(data);
    if ((version == 3 || version == 4) && bytes.byte(data + 1) == 1) {  // contiguous
      dataset.data_at = bytes.le(data + 2, 8);
      dataset.data_size = bytes.le(data + 10, 8);
      dataset.has_layout = true;
    }
  } else if (message.type == hdf5_message::kAttribute && message.size >= 8) {
    const std::uint8_t version = bytes.byte(data);
    if (version != 2 && version != 3) return;  // version 1 pads its parts; not written
    const std::uint64_t name_size = bytes.le(data + 2, 2), type_size = bytes.le(data + 4, 2),
                        space_size = bytes.le(data + 6, 2);
    const std::uint64_t name = data + (version == 3 ? 9 : 8);
    const std::uint64_t value = name + name_size + type_size + space_size;
    if (name_size == 8 && value <= end && end - value >= 8 && bytes.signature(name, "fnv1a64")) {
      dataset.digest_at = value;
      dataset.has_digest = true;
    }
  }
}

}  // namespace

void reseal_checkpoint_image(std::span<char> image) {
  const Hdf5Bytes bytes{image};
  walk_hdf5_objects(bytes, [&](const Hdf5Object& object) {
    DatasetDigest dataset;
    for (const Hdf5Message& message : object.messages)
      if (!(message.flags & hdf5_message::kShared)) read_digest_parts(bytes, message, dataset);
    if (dataset.has_layout && dataset.has_digest && bytes.has(dataset.data_at, dataset.data_size))
      put_le(image, dataset.digest_at,
             fnv1a64(bytes.image.subspan(dataset.data_at, dataset.data_size)), 8);
    for (const Hdf5Chunk& chunk : object.chunks)
      put_le(image, chunk.checksum_at, hdf5_chunk_checksum(bytes, chunk), 4);
  });
  if (bytes.signature(0, "\x89HDF\r\n\x1a\n") && bytes.has(0, 48) &&
      (bytes.byte(8) == 2 || bytes.byte(8) == 3) && bytes.byte(9) == 8)
    reseal_superblock(image);  // 8-byte addresses: the checksum at byte 44
}

}  // namespace relpos::fuzzing
