#include "train/store/hdf5_addresses.h"

#include <cstdint>
#include <cstring>
#include <set>
#include <vector>

#include "autograd/error.h"

namespace relpos {
namespace {

// HDF5 file format specification: message types and the undefined address.
constexpr std::uint8_t kLinkInfo = 0x02, kLink = 0x06, kContinuation = 0x10, kAttributeInfo = 0x15;
constexpr std::uint64_t kUndefined = ~std::uint64_t{0};
constexpr std::size_t kMostObjects = 1 << 20;

class AddressCheck {
 public:
  AddressCheck(std::span<const char> image, const std::string& file) : image_(image), file_(file) {}

  void run() {
    if (image_.size() < 48 || image_[9] != 8 || image_[10] != 8) return;  // 8-byte offsets only
    pending_ = {le(20), le(36)};  // the superblock extension, the root group
    while (!pending_.empty()) {
      const std::uint64_t at = pending_.back();
      pending_.pop_back();
      if (at != kUndefined && visited_.size() < kMostObjects && visited_.insert(at).second)
        object_header(at);
    }
  }

 private:
  bool has(std::uint64_t at, std::uint64_t n) const {
    return at <= image_.size() && n <= image_.size() - at;
  }
  std::uint64_t le(std::uint64_t at, unsigned width = 8) const {
    std::uint64_t value = 0;
    for (unsigned i = 0; i < width; ++i)
      value |= std::uint64_t{static_cast<std::uint8_t>(image_[at + i])} << (8 * i);
    return value;
  }
  void require_inside(std::uint64_t address, const char* what) const {
    require(address == kUndefined || address < image_.size(),
            "checkpoint {}: {} at address {} lies outside the {}-byte file (corrupt or edited)",
            file_, what, address, image_.size());
  }

  // A version 2 object header: its chunks' messages. What is not one (a version 1
  // header, a bad signature) is left to HDF5, which checks it.
  void object_header(std::uint64_t at) {
    if (!has(at, 6) || std::memcmp(image_.data() + at, "OHDR", 4) != 0 || image_[at + 4] != 2)
      return;
    const auto flags = static_cast<std::uint8_t>(image_[at + 5]);
    std::uint64_t pos = at + 6 + ((flags & 0x20) ? 16 : 0) + ((flags & 0x10) ? 4 : 0);
    const unsigned width = 1u << (flags & 0x03);
    if (!has(pos, width)) return;
    const std::uint64_t size = le(pos, width);
    pos += width;
    if (!has(pos, size)) return;
    std::vector<std::pair<std::uint64_t, std::uint64_t>> chunks = {{pos, pos + size}};
    for (std::size_t i = 0; i < chunks.size() && i < 1024; ++i)
      messages(chunks[i].first, chunks[i].second, (flags & 0x04) ? 6 : 4, chunks);
  }

  void messages(std::uint64_t p, std::uint64_t end, std::uint64_t header,
                std::vector<std::pair<std::uint64_t, std::uint64_t>>& chunks) {
    while (end - p >= header) {
      const auto type = static_cast<std::uint8_t>(image_[p]);
      const std::uint64_t size = le(p + 1, 2), data = p + header;
      if (size > end - data) return;
      if (!(static_cast<std::uint8_t>(image_[p + 3]) & 0x02))  // not a shared message
        message(type, data, size, chunks);
      p = data + size;
    }
  }

  void message(std::uint8_t type, std::uint64_t data, std::uint64_t size,
               std::vector<std::pair<std::uint64_t, std::uint64_t>>& chunks) {
    const std::uint64_t end = data + size;
    if (type == kContinuation && size >= 16) {
      const std::uint64_t at = le(data), length = le(data + 8);
      require(has(at, length),
              "checkpoint {}: an object header continues at {} ({} bytes), "
              "outside the {}-byte file (corrupt or edited)",
              file_, at, length, image_.size());
      if (length >= 8) chunks.emplace_back(at + 4, at + length - 4);  // "OCHK" ... checksum
    } else if (type == kLinkInfo && size >= 2) {
      const auto flags = static_cast<std::uint8_t>(image_[data + 1]);
      std::uint64_t p = data + 2 + ((flags & 0x01) ? 8 : 0);  // max creation index
      for (const char* what : {"a group's link heap", "a group's name index"}) {
        if (end - p < 8) return;
        require_inside(le(p), what);
        p += 8;
      }
      if ((flags & 0x02) && end - p >= 8) require_inside(le(p), "a group's creation-order index");
    } else if (type == kAttributeInfo && size >= 2) {
      const auto flags = static_cast<std::uint8_t>(image_[data + 1]);
      std::uint64_t p = data + 2 + ((flags & 0x01) ? 2 : 0);  // max creation index
      for (const char* what : {"an attribute heap", "an attribute name index"}) {
        if (end - p < 8) return;
        require_inside(le(p), what);
        p += 8;
      }
      if ((flags & 0x02) && end - p >= 8)
        require_inside(le(p), "an attribute creation-order index");
    } else if (type == kLink && size >= 2) {
      link(data, end);
    }
  }

  // A link message, which must be well formed as HDF5 writes it (HDF5 1.10 freed an unset
  // pointer after reading a malformed one); a hard link's target is walked too.
  void link(std::uint64_t p, std::uint64_t end) {
    const std::uint64_t start = p;
    const auto byte = [&](std::uint64_t at) { return static_cast<std::uint8_t>(image_[at]); };
    const std::uint8_t flags = byte(p + 1);
    bool ok = byte(p) == 1 && (flags & 0xe0) == 0;  // version 1, no unknown flag
    p += 2;
    std::uint8_t link_type = 0;  // hard unless stated
    if (ok && (flags & 0x08)) link_type = p < end ? byte(p++) : 0xff;
    if (flags & 0x04) p += 8;                                  // creation order
    if (ok && (flags & 0x10)) ok = p < end && byte(p++) <= 1;  // ASCII or UTF-8 name
    const unsigned width = 1u << (flags & 0x03);
    ok = ok && p <= end && end - p >= width;
    const std::uint64_t name_length = ok ? le(p, width) : 0;
    p += ok ? width : 0;
    ok = ok && name_length >= 1 && name_length <= end - p;
    p += ok ? name_length : 0;
    if (ok && link_type == 0) {
      ok = end - p >= 8;
      if (ok) {
        require_inside(le(p), "a hard link's object");
        pending_.push_back(le(p));
      }
    } else if (ok) {  // soft (1) or external (64): a length, then that many bytes
      ok = (link_type == 1 || link_type == 64) && end - p >= 2 && le(p, 2) <= end - p - 2;
    }
    require(ok, "checkpoint {}: the link message at byte {} is malformed (corrupt or edited)",
            file_, start);
  }

  std::span<const char> image_;
  const std::string& file_;
  std::vector<std::uint64_t> pending_;
  std::set<std::uint64_t> visited_;
};

}  // namespace

void check_hdf5_addresses(std::span<const char> image, const std::string& file) {
  AddressCheck(image, file).run();
}

}  // namespace relpos
