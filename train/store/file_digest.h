#pragma once
// A whole-file digest kept beside a file, so that its bytes are checked before
// anything parses them. <file>.digest holds one line:
//   fnv1a64 <16 lowercase hex digits> <size in bytes>
// FNV-1a (64-bit) finds accidental corruption (bit flips, truncation, a torn
// copy); it is not cryptographic, so it does not stop a deliberate forgery.
#include <cstdint>
#include <filesystem>
#include <span>
#include <string>

namespace relpos {

std::uint64_t fnv1a64(std::span<const char> bytes);

// <file>.digest
std::filesystem::path digest_path(const std::filesystem::path& file);

// Writes the digest of `bytes` (the contents of `file`) atomically to digest_path(file).
void write_digest(const std::filesystem::path& file, std::span<const char> bytes);

// Removes digest_path(file) if there is one; a UsageError when it cannot.
void remove_digest(const std::filesystem::path& file);

// The contents of `file`, after checking them against digest_path(file). Throws a
// one-line UsageError "<file>: <reason>" for a missing or malformed digest, a size
// that differs from the recorded one (checked before the file is read), or a
// mismatching digest.
std::string read_verified_file(const std::filesystem::path& file);

}  // namespace relpos
