#include "train/store/hdf5_metadata_check.h"

#include <cstdint>

#include "autograd/error.h"
#include "train/store/hdf5_message_check.h"
#include "train/store/hdf5_object_walk.h"

namespace relpos {
namespace {

// Object header flags relpos's HDF5 writes: the width of chunk 0's size (0x03), stored
// attribute phase change values (0x10) and times (0x20).
constexpr std::uint8_t kObjectHeaderFlags = 0x33;

class MetadataCheck {
 public:
  MetadataCheck(std::span<const char> image, const std::string& file)
      : bytes_{image}, file_(file) {}

  void run() const {
    superblock();
    require(walk_hdf5_objects(bytes_, [this](const Hdf5Object& object) { check(object); }),
            "checkpoint {}: more than 2^20 HDF5 objects (corrupt or edited)", file_);
  }

 private:
  // Version 2, 8-byte offsets and lengths, no flags, base address 0, no superblock
  // extension, the end-of-file address the image's size and the root group inside it.
  void superblock() const {
    require(bytes_.has(0, 48) && bytes_.byte(8) == 2 && bytes_.byte(9) == 8 &&
                bytes_.byte(10) == 8 && bytes_.byte(11) == 0,
            "checkpoint {}: the HDF5 superblock is not version 2 with 8-byte addresses and "
            "no flags, as relpos writes it (corrupt or edited)",
            file_);
    require(bytes_.le(12, 8) == 0,
            "checkpoint {}: HDF5 base address {} (relpos writes 0; corrupt or edited)", file_,
            bytes_.le(12, 8));
    require(bytes_.le(20, 8) == kHdf5Undefined,
            "checkpoint {}: the HDF5 superblock has an extension at {} (relpos writes none; "
            "corrupt or edited)",
            file_, bytes_.le(20, 8));
    require(bytes_.le(28, 8) == bytes_.image.size(),
            "checkpoint {}: the HDF5 superblock says the file ends at {}, but it has {} bytes "
            "(corrupt or edited)",
            file_, bytes_.le(28, 8), bytes_.image.size());
    const std::uint64_t root = bytes_.le(36, 8);
    require(root < bytes_.image.size(),
            "checkpoint {}: the root group at address {} lies outside the {}-byte file "
            "(corrupt or edited)",
            file_, root, bytes_.image.size());
  }

  void check(const Hdf5Object& object) const {
    if (!object.readable)
      refuse(
          "{}: the object header at address {} is not a version 2 object header inside "
          "the file",
          object.path, object.address);
    if ((object.flags & ~kObjectHeaderFlags) != 0)
      refuse(
          "{}: the object header at address {} has flags {:#04x} (relpos writes {:#04x} at "
          "most)",
          object.path, object.address, object.flags, kObjectHeaderFlags);
    for (const Hdf5Chunk& chunk : object.chunks) chunk_checksum(object, chunk);
    Hdf5DatasetParts dataset;
    for (const Hdf5Message& message : object.messages) {
      if (const auto reason = check_hdf5_message(bytes_, message, object.path, dataset))
        refuse("{}", *reason);
      const bool dataset_part = message.type == hdf5_message::kDataspace ||
                                message.type == hdf5_message::kDatatype ||
                                message.type == hdf5_message::kLayout;
      if (dataset_part && message_seen(object, message))
        refuse("{}: a second {} message at byte {}", object.path, hdf5_message_name(message.type),
               message.at);
    }
    for (const std::uint64_t at : object.overruns)
      refuse("{}: the object header message at byte {} runs past the end of its chunk", object.path,
             at);
    for (const std::uint64_t at : object.unread_chunks)
      refuse(
          "{}: the continuation message at byte {} names no object header chunk inside the "
          "file",
          object.path, at);
    if (dataset.data_size) dataset_size(object, dataset);
  }

  // An object header chunk's checksum, compared here before HDF5 does: when HDF5 1.10.8
  // finds one wrong (H5O_protect -> H5C_load_entry), it keeps a block it allocated while
  // loading the header (valgrind: 424 bytes from H5FL_reg_calloc), and its exit-time
  // teardown then prints "infinite loop closing library".
  void chunk_checksum(const Hdf5Object& object, const Hdf5Chunk& chunk) const {
    const auto recorded = static_cast<std::uint32_t>(bytes_.le(chunk.checksum_at, 4));
    const std::uint32_t actual = hdf5_chunk_checksum(bytes_, chunk);
    if (actual != recorded)
      refuse(
          "{}: the object header chunk at byte {} records checksum {:08x}, but its bytes give "
          "{:08x}",
          object.path, chunk.start, recorded, actual);
  }

  // Whether a message of `message`'s type came before it in `object`.
  static bool message_seen(const Hdf5Object& object, const Hdf5Message& message) {
    for (const Hdf5Message& other : object.messages) {
      if (&other == &message) return false;
      if (other.type == message.type) return true;
    }
    return false;
  }

  // A dataset's contiguous storage holds exactly its elements.
  void dataset_size(const Hdf5Object& object, const Hdf5DatasetParts& dataset) const {
    if (!dataset.elements || !dataset.element_size)
      refuse("{}: a dataset without a dataspace or datatype message", object.path);
    const std::uint64_t elements = *dataset.elements, element = *dataset.element_size;
    if (elements > *dataset.data_size / element || elements * element != *dataset.data_size)
      refuse(
          "{}: its data layout message stores {} bytes where its datatype and dataspace "
          "need {} x {}",
          object.path, *dataset.data_size, elements, element);
  }

  template <typename... Args>
  [[noreturn]] void refuse(fmt::format_string<Args...> format, Args&&... args) const {
    fail("checkpoint {}: {} (corrupt or edited)", file_,
         fmt::format(format, std::forward<Args>(args)...));
  }

  Hdf5Bytes bytes_;
  const std::string& file_;
};

}  // namespace

void check_hdf5_metadata(std::span<const char> image, const std::string& file) {
  MetadataCheck(image, file).run();
}

}  // namespace relpos
