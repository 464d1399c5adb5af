#include "train/store/hdf5_message_check.h"

#include <fmt/format.h>

#include <array>
#include <limits>
#include <string_view>

namespace relpos {
namespace {

constexpr unsigned kMostRank = 32;  // H5S_MAX_RANK

namespace type {
constexpr std::uint8_t kNull = 0x00, kFillValue = 0x05, kExternalFiles = 0x07, kGroupInfo = 0x0A;
}  // namespace type

// The encodings of the datatypes relpos writes (version 1 datatype messages: class and
// version, class bit fields, size, properties), the only ones a checkpoint may hold.
constexpr std::array<std::string_view, 5> kDatatypes = {
    std::string_view("\x10\x00\x00\x00\x01\x00\x00\x00\x00\x00\x08\x00", 12),  // u8
    std::string_view("\x10\x08\x00\x00\x08\x00\x00\x00\x00\x00\x40\x00", 12),  // i64
    std::string_view("\x10\x00\x00\x00\x08\x00\x00\x00\x00\x00\x40\x00", 12),  // u64
    // f32, f64: bit offset, precision, exponent location and size, mantissa location and
    // size, exponent bias.
    std::string_view(
        "\x11\x20\x1f\x00\x04\x00\x00\x00\x00\x00\x20\x00\x17\x08\x00\x17\x7f\x00\x00\x00", 20),
    std::string_view(
        "\x11\x20\x3f\x00\x08\x00\x00\x00\x00\x00\x40\x00\x34\x0b\x00\x34\xff\x03\x00\x00", 20),
};

// The reason a datatype of `size` bytes at `at` is refused, or "" (then `element` is
// its size in bytes).
std::string datatype(Hdf5Bytes bytes, std::uint64_t at, std::uint64_t size,
                     std::uint64_t& element) {
  for (const std::string_view known : kDatatypes) {
    if (size == known.size() && bytes.has(at, size) &&
        std::string_view(bytes.image.data() + at, size) == known) {
      element = bytes.le(at + 4, 4);
      return "";
    }
  }
  return "has a datatype relpos does not write (it writes little-endian u8, i64, u64, f32 and "
         "f64)";
}

// The reason a dataspace of `size` bytes at `at` is refused, or "" (then `elements`
// is the number of elements it holds). relpos writes version 2, scalar or simple, with
// maximum dimensions equal to the dimensions.
std::string dataspace(Hdf5Bytes bytes, std::uint64_t at, std::uint64_t size,
                      std::uint64_t& elements) {
  if (size < 4) return "has a dataspace shorter than 4 bytes";
  const std::uint8_t version = bytes.byte(at), rank = bytes.byte(at + 1),
                     flags = bytes.byte(at + 2), kind = bytes.byte(at + 3);
  if (version != 2 || rank > kMostRank)
    return "has a dataspace of a version relpos does not write or a rank over 32";
  if ((flags & ~0x01) != 0) return "has a dataspace with flags relpos does not write";
  const bool consistent = kind == 0 ? rank == 0 : kind == 1 && rank >= 1;
  if (!consistent) return "has a dataspace whose kind and rank disagree (or a null dataspace)";
  const bool has_max = flags & 0x01;
  if (size != 4 + std::uint64_t{rank} * 8 * (has_max ? 2 : 1))
    return "has a dataspace whose size is not its rank's";
  elements = 1;
  for (unsigned i = 0; i < rank; ++i) {
    const std::uint64_t dim = bytes.le(at + 4 + 8 * i, 8);
    if (has_max && bytes.le(at + 4 + 8 * (rank + i), 8) != dim)
      return "has a dataspace whose maximum dimensions differ from its dimensions";
    if (dim != 0 && elements > std::numeric_limits<std::uint64_t>::max() / dim)
      return "has a dataspace of more than 2^64 elements";
    elements *= dim;
  }
  return "";
}

// An attribute message, version 3 as relpos writes it: version, flags, name, datatype
// and dataspace sizes, character set, then the NUL-terminated name, the datatype, the
// dataspace and the value, which fill the message exactly.
std::string attribute(Hdf5Bytes bytes, const Hdf5Message& message) {
  const std::uint64_t start = message.data, end = message.data + message.size;
  if (message.size < 9 || bytes.byte(start) != 3)
    return "has a version relpos does not write (it writes 3) or is too short";
  if (bytes.byte(start + 1) != 0)
    return "has a shared datatype or dataspace, or flags relpos does not write";
  if (bytes.byte(start + 8) > 1) return "has a character set other than ASCII and UTF-8";
  const std::uint64_t name_size = bytes.le(start + 2, 2), type_size = bytes.le(start + 4, 2),
                      space_size = bytes.le(start + 6, 2), name = start + 9;
  if (end - name < name_size + type_size + space_size)
    return "has a name, datatype or dataspace size past its end";
  if (name_size == 0 || bytes.byte(name + name_size - 1) != 0)
    return "has a name without its terminating NUL";
  const std::uint64_t type = name + name_size, space = type + type_size, value = space + space_size;
  std::uint64_t element = 0, elements = 0;
  std::string reason = datatype(bytes, type, type_size, element);
  if (reason.empty()) reason = dataspace(bytes, space, space_size, elements);
  if (!reason.empty()) return reason;
  if (elements > (end - value) / element || elements * element != end - value)
    return fmt::format("has a value of {} bytes where its datatype and dataspace need {} x {}",
                       end - value, elements, element);
  return "";
}

// A link info or attribute info message as relpos writes it: version 0, no flags (no
// creation order), and no dense storage: the fractal heap and name index addresses
// undefined, so that the links or attributes are all in the object header.
std::string storage_info(Hdf5Bytes bytes, const Hdf5Message& message) {
  if (message.size != 18 || bytes.byte(message.data) != 0 || bytes.byte(message.data + 1) != 0)
    return "has a version, flags or size relpos does not write (it writes version 0, no "
           "creation order, 18 bytes)";
  if (bytes.le(message.data + 2, 8) != kHdf5Undefined ||
      bytes.le(message.data + 10, 8) != kHdf5Undefined)
    return "names dense storage (a fractal heap and B-tree; relpos keeps links and attributes "
           "in the object header)";
  return "";
}

std::string continuation(Hdf5Bytes bytes, const Hdf5Message& message) {
  if (message.size != 16) return fmt::format("is {} bytes long (it has 16)", message.size);
  const std::uint64_t at = bytes.le(message.data, 8), length = bytes.le(message.data + 8, 8);
  if (length < 8 || !bytes.has(at, length))
    return fmt::format("names a {}-byte chunk at {}, outside the {}-byte file", length, at,
                       bytes.image.size());
  return "";
}

// A data layout message: version 3, contiguous, its data inside the file (or not
// allocated: an undefined address).
std::string layout(Hdf5Bytes bytes, const Hdf5Message& message, std::uint64_t& data_size) {
  if (message.size != 18 || bytes.byte(message.data) != 3)
    return "has a version or size relpos does not write (it writes version 3, 18 bytes)";
  const std::uint64_t at = bytes.le(message.data + 2, 8);
  data_size = bytes.le(message.data + 10, 8);
  if (at != kHdf5Undefined && !bytes.has(at, data_size))
    return fmt::format("stores {} bytes at {}, outside the {}-byte file", data_size, at,
                       bytes.image.size());
  return "";
}

// A fill value message, version 3, with no fill value of its own.
std::string fill_value(Hdf5Bytes bytes, const Hdf5Message& message) {
  if (message.size != 2 || bytes.byte(message.data) != 3 ||
      (bytes.byte(message.data + 1) & 0xe0) != 0)
    return "has a version, flags or size relpos does not write (version 3, no fill value)";
  return "";
}

// A group info message, version 0: link phase change values and estimates if flagged.
std::string group_info(Hdf5Bytes bytes, const Hdf5Message& message) {
  if (message.size < 2) return "is shorter than 2 bytes";
  const std::uint8_t flags = bytes.byte(message.data + 1);
  const std::uint64_t size = 2 + ((flags & 0x01) ? 4 : 0) + ((flags & 0x02) ? 4 : 0);
  if (bytes.byte(message.data) != 0 || (flags & ~0x03) != 0 || message.size != size)
    return "has a version, flags or size relpos does not write";
  return "";
}

std::string child(const std::string& path, std::string_view name) {
  return (path == "/" ? "/" : path + "/") + std::string(name);
}

}  // namespace

std::string hdf5_message_name(std::uint8_t message_type) {
  switch (message_type) {
    case type::kNull:
      return "null";
    case hdf5_message::kDataspace:
      return "dataspace";
    case hdf5_message::kLinkInfo:
      return "link info";
    case hdf5_message::kDatatype:
      return "datatype";
    case type::kFillValue:
      return "fill value";
    case hdf5_message::kLink:
      return "link";
    case type::kExternalFiles:
      return "external data files";
    case hdf5_message::kLayout:
      return "data layout";
    case type::kGroupInfo:
      return "group info";
    case hdf5_message::kAttribute:
      return "attribute";
    case hdf5_message::kContinuation:
      return "continuation";
    case hdf5_message::kAttributeInfo:
      return "attribute info";
    default:
      return fmt::format("type {:#04x}", message_type);
  }
}

std::optional<std::string> check_hdf5_message(Hdf5Bytes bytes, const Hdf5Message& message,
                                              const std::string& path, Hdf5DatasetParts& dataset) {
  // Message flags: constant (0x01) and "do not share" (0x04) only; a shared message
  // would live in a table relpos never writes.
  std::string reason;
  if ((message.flags & ~0x05) != 0) {
    reason =
        fmt::format("has flags {:#04x} (shared or unknown; relpos writes none)", message.flags);
  } else {
    std::uint64_t value = 0;
    switch (message.type) {
      case type::kNull:
        break;
      case hdf5_message::kDataspace:
        reason = dataspace(bytes, message.data, message.size, value);
        if (reason.empty()) dataset.elements = value;
        break;
      case hdf5_message::kDatatype:
        reason = datatype(bytes, message.data, message.size, value);
        if (reason.empty()) dataset.element_size = value;
        break;
      case type::kFillValue:
        reason = fill_value(bytes, message);
        break;
      case type::kGroupInfo:
        reason = group_info(bytes, message);
        break;
      case hdf5_message::kLinkInfo:
      case hdf5_message::kAttributeInfo:
        reason = storage_info(bytes, message);
        break;
      case hdf5_message::kContinuation:
        reason = continuation(bytes, message);
        break;
      case hdf5_message::kAttribute:
        reason = attribute(bytes, message);
        break;
      case hdf5_message::kLayout:
        if (message.size >= 2 && (bytes.byte(message.data) == 3 || bytes.byte(message.data) == 4) &&
            bytes.byte(message.data + 1) != 1)
          return fmt::format(
              "dataset {} is not stored contiguously (relpos writes no chunked, compact or "
              "virtual datasets)",
              path);
        reason = layout(bytes, message, value);
        if (reason.empty()) dataset.data_size = value;
        break;
      case hdf5_message::kLink: {
        const Hdf5Link link = read_hdf5_link(bytes, message);
        if (!link.well_formed) {
          reason = "is malformed";
        } else if (!link.hard) {
          return fmt::format("{} is a soft or external link (relpos writes hard links only)",
                             child(path, link.name));
        } else if (link.end != message.data + message.size) {
          reason = "has bytes after its last field";
        }
        break;
      }
      case type::kExternalFiles:
        return fmt::format(
            "dataset {} keeps its data in an external file (relpos reads only what is inside "
            "the checkpoint)",
            path);
      default:
        reason = "is of a type relpos does not write";
    }
  }
  if (reason.empty()) return std::nullopt;
  return fmt::format("{}: the {} message at byte {} {}", path, hdf5_message_name(message.type),
                     message.at, reason);
}

}  // namespace relpos
