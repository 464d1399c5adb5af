#pragma once
// Reading an input file (a config, a sweep, a corpus, a digest): only a regular
// file is read, so that a FIFO, a device or a folder named as input gives a
// one-line error instead of a hang or an endless read.
#include <cstdint>
#include <string>
#include <string_view>

namespace relpos {

// The bytes of `path` (symlinks followed), at most `max_bytes` of them. Throws a
// one-line UsageError "<label>: cannot open: <reason>" when it cannot be opened (no
// such file, a symlink loop, no permission) or is not a regular file (a folder, a
// FIFO, a device, a socket), "<label>: larger than <max_bytes> bytes", or
// "<label>: cannot read: <reason>".
std::string read_regular_file(const std::string& path, std::string_view label,
                              std::uint64_t max_bytes);

}  // namespace relpos
