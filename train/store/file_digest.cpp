#include "train/store/file_digest.h"

#include <fmt/format.h>

#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <string>
#include <system_error>

#include "autograd/error.h"
#include "data/input_file.h"
#include "train/store/atomic_file.h"

namespace relpos {

namespace fs = std::filesystem;

namespace {

constexpr std::uint64_t kFnvOffsetBasis = 0xcbf29ce484222325ULL;
constexpr std::uint64_t kFnvPrime = 0x100000001b3ULL;
// A digest line is about 50 bytes; anything longer is not one.
constexpr std::size_t kMaxDigestFileBytes = 128;

struct RecordedDigest {
  std::uint64_t hash = 0;
  std::uint64_t size = 0;
};

std::string digest_line(std::uint64_t hash, std::uint64_t size) {
  return fmt::format("fnv1a64 {:016x} {}\n", hash, size);
}

RecordedDigest read_digest(const fs::path& file) {
  const fs::path sidecar = digest_path(file);
  std::error_code missing;
  require(fs::exists(fs::symlink_status(sidecar, missing)),
          "{}: no digest file {} (an interrupted save, or a checkpoint older than format 2); "
          "it is not trusted",
          file.string(), sidecar.string());
  std::string text;
  try {  // one byte more than a digest line may have: a longer file is malformed below
    text = read_regular_file(sidecar.string(), "digest file " + sidecar.string(),
                             kMaxDigestFileBytes + 1);
  } catch (const UsageError& e) {
    fail("{}: {}", file.string(), e.what());
  }
  RecordedDigest recorded;
  int consumed = 0;
  const bool parsed = text.size() <= kMaxDigestFileBytes &&
                      std::sscanf(text.c_str(), "fnv1a64 %16" SCNx64 " %20" SCNu64 "\n%n",
                                  &recorded.hash, &recorded.size, &consumed) == 2 &&
                      static_cast<std::size_t>(consumed) == text.size() &&
                      text == digest_line(recorded.hash, recorded.size);
  require(parsed,
          "{}: digest file {} is malformed (expected one line 'fnv1a64 <16 hex digits> "
          "<size>')",
          file.string(), sidecar.string());
  return recorded;
}

}  // namespace

std::uint64_t fnv1a64(std::span<const char> bytes) {
  std::uint64_t hash = kFnvOffsetBasis;
  for (const char byte : bytes) {
    hash ^= static_cast<unsigned char>(byte);
    hash *= kFnvPrime;
  }
  return hash;
}

fs::path digest_path(const fs::path& file) { return fs::path(file.string() + ".digest"); }

void write_digest(const fs::path& file, std::span<const char> bytes) {
  replace_file(digest_path(file), digest_line(fnv1a64(bytes), bytes.size()));
}

void remove_digest(const fs::path& file) {
  std::error_code error;
  fs::remove(digest_path(file), error);
  require(!error, "cannot delete {}: {}", digest_path(file).string(), error.message());
}

std::string read_verified_file(const fs::path& file) {
  const RecordedDigest recorded = read_digest(file);
  std::error_code error;
  const std::uintmax_t size = fs::file_size(file, error);
  require(!error, "{}: cannot read its size: {}", file.string(), error.message());
  require(size == recorded.size,
          "{}: {} bytes, but its digest file records {} (truncated or changed since it was saved)",
          file.string(), size, recorded.size);
  std::string bytes = read_regular_file(file.string(), file.string(), size);
  const std::uint64_t actual = fnv1a64(bytes);
  require(actual == recorded.hash,
          "{}: its content digest fnv1a64 {:016x} differs from the recorded {:016x} (the file is "
          "corrupt)",
          file.string(), actual, recorded.hash);
  return bytes;
}

}  // namespace relpos
