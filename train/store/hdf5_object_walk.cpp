#include "train/store/hdf5_object_walk.h"

#include <cstring>
#include <set>
#include <utility>

#include "train/store/hdf5_checksum.h"

namespace relpos {
namespace {

constexpr std::size_t kMostChunks = 1024, kMostObjects = 1 << 20;
constexpr char kSignature[] = "\x89HDF\r\n\x1a\n";

class ObjectWalk {
 public:
  ObjectWalk(Hdf5Bytes bytes, const std::function<void(const Hdf5Object&)>& visit)
      : bytes_(bytes), visit_(visit) {}

  // False if it stopped at kMostObjects with objects left to visit.
  bool run() {
    // The superblock extension, the root group.
    pending_ = {{bytes_.le(20, 8), "the superblock extension"}, {bytes_.le(36, 8), "/"}};
    while (!pending_.empty() && visited_.size() < kMostObjects) {
      const auto [at, path] = pending_.back();
      pending_.pop_back();
      if (at != kHdf5Undefined && visited_.insert(at).second) object_header(at, path);
    }
    return pending_.empty();
  }

 private:
  void object_header(std::uint64_t at, const std::string& path) {
    Hdf5Object object{at, path, false, 0, {}, {}, {}, {}};
    read_chunks(object);
    visit_(object);
    for (const Hdf5Message& message : object.messages) {  // none if unreadable
      if (message.type != hdf5_message::kLink || (message.flags & hdf5_message::kShared)) continue;
      const Hdf5Link link = read_hdf5_link(bytes_, message);
      if (link.well_formed && link.hard)
        pending_.push_back(
            {link.object, (path == "/" ? "/" : path + "/") + std::string(link.name)});
    }
  }

  // Reads the chunks and messages of the object header at object.address, unless it is
  // not a version 2 object header whose first chunk lies inside the image (then
  // object.readable stays false).
  void read_chunks(Hdf5Object& object) {
    const std::uint64_t at = object.address;
    if (!bytes_.signature(at, "OHDR") || !bytes_.has(at, 6) || bytes_.byte(at + 4) != 2) return;
    const std::uint8_t flags = bytes_.byte(at + 5);
    std::uint64_t pos = at + 6;
    if (flags & 0x20) pos += 16;  // access, modification, change, birth times
    if (flags & 0x10) pos += 4;   // attribute phase change values
    const unsigned width = 1u << (flags & 0x03);
    if (!bytes_.has(pos, width)) return;
    const std::uint64_t size = bytes_.le(pos, width);
    pos += width;
    if (!bytes_.has(pos, size) || !bytes_.has(pos + size, 4)) return;
    object.readable = true;
    object.flags = flags;
    object.chunks = {{at, pos + size}};
    const std::uint64_t header = (flags & 0x04) ? 6 : 4;  // + creation order
    messages(object, pos, pos + size, header);
    for (std::size_t i = 0; i < object.messages.size(); ++i) {
      const Hdf5Message message = object.messages[i];
      if (message.type != hdf5_message::kContinuation || message.size < 16 ||
          (message.flags & hdf5_message::kShared))
        continue;
      const std::uint64_t chunk = bytes_.le(message.data, 8),
                          length = bytes_.le(message.data + 8, 8);
      if (length >= 8 && bytes_.has(chunk, length) && bytes_.signature(chunk, "OCHK") &&
          object.chunks.size() < kMostChunks && seen_chunks_.insert(chunk).second) {
        object.chunks.push_back({chunk, chunk + length - 4});
        messages(object, chunk + 4, chunk + length - 4, header);
      } else {
        object.unread_chunks.push_back(message.at);
      }
    }
  }

  // The messages of one chunk, [p, end).
  void messages(Hdf5Object& object, std::uint64_t p, std::uint64_t end, std::uint64_t header) {
    while (end - p >= header) {
      const std::uint64_t size = bytes_.le(p + 1, 2), data = p + header;
      if (size > end - data) {
        object.overruns.push_back(p);
        return;
      }
      object.messages.push_back({bytes_.byte(p), bytes_.byte(p + 3), p, data, size});
      p = data + size;
    }
  }

  Hdf5Bytes bytes_;
  const std::function<void(const Hdf5Object&)>& visit_;
  std::vector<std::pair<std::uint64_t, std::string>> pending_;  // address, path
  std::set<std::uint64_t> visited_, seen_chunks_;
};

}  // namespace

bool Hdf5Bytes::signature(std::uint64_t at, std::string_view sig) const {
  return has(at, sig.size()) && std::memcmp(image.data() + at, sig.data(), sig.size()) == 0;
}

Hdf5Link read_hdf5_link(Hdf5Bytes bytes, const Hdf5Message& message) {
  Hdf5Link link;
  std::uint64_t p = message.data;
  const std::uint64_t end = message.data + message.size;
  if (message.size < 2 || bytes.byte(p) != 1) return link;
  const std::uint8_t flags = bytes.byte(p + 1);
  if (flags & 0xe0) return link;  // an unknown flag
  p += 2;
  std::uint8_t type = 0;  // hard unless stated
  if (flags & 0x08) {
    if (p >= end) return link;
    type = bytes.byte(p++);
  }
  if (flags & 0x04) p += 8;  // creation order
  if (flags & 0x10) {        // character set: ASCII or UTF-8
    if (p >= end || bytes.byte(p) > 1) return link;
    ++p;
  }
  const unsigned width = 1u << (flags & 0x03);
  if (p > end || end - p < width) return link;
  const std::uint64_t name_length = bytes.le(p, width);
  p += width;
  if (name_length < 1 || name_length > end - p) return link;
  link.name = std::string_view(bytes.image.data() + p, name_length);
  p += name_length;
  if (type == 0) {
    if (end - p < 8) return link;
    link.hard = true;
    link.object = bytes.le(p, 8);
    link.end = p + 8;
  } else if (type != 1 && type != 64) {  // soft, external: a length, then that many bytes
    return link;
  } else if (end - p < 2 || bytes.le(p, 2) > end - p - 2) {
    return link;
  } else {
    link.end = p + 2 + bytes.le(p, 2);
  }
  link.well_formed = true;
  return link;
}

bool walk_hdf5_objects(Hdf5Bytes bytes, const std::function<void(const Hdf5Object&)>& visit) {
  if (!bytes.signature(0, std::string_view(kSignature, 8)) || !bytes.has(0, 48)) return false;
  const std::uint8_t version = bytes.byte(8);
  if ((version != 2 && version != 3) || bytes.byte(9) != 8 || bytes.byte(10) != 8 ||
      bytes.le(12, 8) != 0)
    return false;
  return ObjectWalk(bytes, visit).run();
}

std::uint32_t hdf5_chunk_checksum(Hdf5Bytes bytes, const Hdf5Chunk& chunk) {
  return hdf5_metadata_checksum(bytes.image.subspan(chunk.start, chunk.checksum_at - chunk.start));
}

}  // namespace relpos
