#include "train/store/hdf5_metadata_check.h"

#include <array>
#include <cstdint>
#include <limits>

#include "autograd/error.h"
#include "train/store/hdf5_object_walk.h"

namespace relpos {
namespace {

constexpr unsigned kMostRank = 32;  // H5S_MAX_RANK

class MetadataCheck {
 public:
  MetadataCheck(std::span<const char> image, const std::string& file)
      : bytes_{image}, file_(file) {}

  void run() {
    if (bytes_.has(0, 48) && (bytes_.byte(8) == 2 || bytes_.byte(8) == 3) && bytes_.byte(9) == 8 &&
        bytes_.byte(10) == 8) {
      require(bytes_.le(12, 8) == 0,
              "checkpoint {}: HDF5 base address {} (relpos writes 0; corrupt or edited)", file_,
              bytes_.le(12, 8));
      require_inside(bytes_.le(20, 8), "the superblock extension");
      require_inside(bytes_.le(36, 8), "the root group");
    }
    walk_hdf5_objects(bytes_, [this](const Hdf5Object& object) { check(object); });
  }

 private:
  void check(const Hdf5Object& object) const {
    for (const std::uint64_t at : object.overruns)
      refuse("the object header message at byte {} runs past the end of its chunk", at);
    for (const Hdf5Message& message : object.messages) {
      if (message.flags & hdf5_message::kShared) continue;  // a reference HDF5 resolves
      if (message.type == hdf5_message::kContinuation && message.size >= 16) {
        const std::uint64_t at = bytes_.le(message.data, 8),
                            length = bytes_.le(message.data + 8, 8);
        require(bytes_.has(at, length),
                "checkpoint {}: an object header continues at {} ({} bytes), "
                "outside the {}-byte file (corrupt or edited)",
                file_, at, length, bytes_.image.size());
      } else if (message.type == hdf5_message::kLinkInfo) {
        storage_info(
            message, 8,
            {"a group's link heap", "a group's name index", "a group's creation-order index"});
      } else if (message.type == hdf5_message::kAttributeInfo) {
        storage_info(
            message, 2,
            {"an attribute heap", "an attribute name index", "an attribute creation-order index"});
      } else if (message.type == hdf5_message::kLink) {
        const Hdf5Link link = read_hdf5_link(bytes_, message);
        if (!link.well_formed) refuse("the link message at byte {} is malformed", message.at);
        if (link.hard) require_inside(link.object, "a hard link's object");
      } else if (message.type == hdf5_message::kAttribute) {
        attribute(message);
      }
    }
  }

  // A link info or attribute info message: version, flags, the maximum creation index
  // (`index_bytes`) if tracked, a fractal heap and a name B-tree address, then a
  // creation-order B-tree address if indexed.
  void storage_info(const Hdf5Message& message, std::uint64_t index_bytes,
                    const std::array<const char*, 3>& what) const {
    if (message.size < 2) return;
    const std::uint8_t flags = bytes_.byte(message.data + 1);
    const std::uint64_t end = message.data + message.size;
    std::uint64_t p = message.data + 2 + ((flags & 0x01) ? index_bytes : 0);
    const std::size_t addresses = (flags & 0x02) ? 3 : 2;
    for (std::size_t i = 0; i < addresses && p <= end && end - p >= 8; ++i, p += 8)
      require_inside(bytes_.le(p, 8), what[i]);
  }

  // An attribute message (HDF5 1.10 decodes its parts without checking them against
  // the message, and copies the value with the size the datatype and dataspace give).
  void attribute(const Hdf5Message& message) const {
    const std::uint64_t start = message.data, end = message.data + message.size;
    const char* what = nullptr;
    const std::uint8_t version = message.size >= 8 ? bytes_.byte(start) : 0;
    if (version < 1 || version > 3) {
      what = "has an unknown version or is too short";
    } else if (version > 1 && (bytes_.byte(start + 1) & 0x03)) {
      what = "has a shared datatype or dataspace (relpos writes none)";
    } else {
      const auto part = [&](std::uint64_t at) {  // version 1 pads each part to 8 bytes
        const std::uint64_t size = bytes_.le(at, 2);
        return version == 1 ? (size + 7) / 8 * 8 : size;
      };
      const std::uint64_t name_size = bytes_.le(start + 2, 2), name_part = part(start + 2),
                          type_part = part(start + 4), space_part = part(start + 6);
      const std::uint64_t name = start + (version == 3 ? 9 : 8);
      if (name > end || end - name < name_part + type_part + space_part) {
        what = "has a name, datatype or dataspace size past its end";
      } else if (name_size == 0 || bytes_.byte(name + name_size - 1) != 0) {
        what = "has a name without its terminating NUL";
      } else {
        const std::uint64_t type = name + name_part, space = type + type_part,
                            value = space + space_part;
        what =
            value_check(type, bytes_.le(start + 4, 2), space, bytes_.le(start + 6, 2), end - value);
      }
    }
    if (what != nullptr) refuse("the attribute message at byte {} {}", message.at, what);
  }

  // The datatype at `type` and the dataspace at `space` (their sizes as the message
  // states them) and the `value_bytes` left for the value: the reason they are refused,
  // or nullptr.
  const char* value_check(std::uint64_t type, std::uint64_t type_size, std::uint64_t space,
                          std::uint64_t space_size, std::uint64_t value_bytes) const {
    if (type_size < 8) return "has a datatype shorter than 8 bytes";
    std::uint64_t properties = 0;
    switch (bytes_.byte(type) & 0x0f) {
      case 0:  // fixed-point
      case 4:  // bitfield
        properties = 4;
        break;
      case 1:  // floating-point
        properties = 12;
        break;
      case 3:  // string
        break;
      default:
        return "has a datatype class relpos does not write";
    }
    const std::uint64_t element = bytes_.le(type + 4, 4);
    if (type_size < 8 + properties || element == 0) return "has a malformed datatype";
    if (space_size < 4) return "has a dataspace shorter than 4 bytes";
    const std::uint8_t space_version = bytes_.byte(space), rank = bytes_.byte(space + 1),
                       space_flags = bytes_.byte(space + 2);
    if ((space_version != 1 && space_version != 2) || rank > kMostRank)
      return "has a dataspace of unknown version or rank over 32";
    if ((space_flags & ~0x01) != 0) return "has a dataspace with flags relpos does not write";
    // Version 2 names its kind: scalar and null have rank 0, simple a rank of 1 or more.
    if (space_version == 2) {
      const std::uint8_t kind = bytes_.byte(space + 3);
      const bool consistent = kind == 1 ? rank >= 1 : (kind == 0 || kind == 2) && rank == 0;
      if (!consistent) return "has a dataspace whose kind and rank disagree";
    }
    const std::uint64_t header = space_version == 1 ? 8 : 4;
    const std::uint64_t dims_bytes = std::uint64_t{rank} * 8 * ((space_flags & 0x01) ? 2 : 1);
    if (space_size < header + dims_bytes) return "has a dataspace shorter than its rank";
    std::uint64_t elements = 1;
    if (space_version == 2 && bytes_.byte(space + 3) == 2) elements = 0;  // null dataspace
    for (unsigned i = 0; i < rank && elements != 0; ++i) {
      const std::uint64_t dim = bytes_.le(space + header + 8 * i, 8);
      if (dim != 0 && elements > std::numeric_limits<std::uint64_t>::max() / dim)
        return "has a value larger than the message";
      elements *= dim;
    }
    if (elements != 0 && element > value_bytes / elements)
      return "has a value larger than the message";
    return nullptr;
  }

  void require_inside(std::uint64_t address, const char* what) const {
    require(address == kHdf5Undefined || address < bytes_.image.size(),
            "checkpoint {}: {} at address {} lies outside the {}-byte file (corrupt or edited)",
            file_, what, address, bytes_.image.size());
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
