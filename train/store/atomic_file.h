#pragma once
// Replacing a file so that readers see the old contents or the new ones, never
// a part: write <path>.tmp, fsync it, rename it onto <path>, fsync the folder.
#include <filesystem>
#include <span>
#include <string>

namespace relpos {

// On failure the .tmp is removed, <path> is untouched, and a UsageError gives
// the reason, naming the file or folder involved (callers add their context).
void replace_file(const std::filesystem::path& path, std::span<const char> bytes);

// Removes the .tmp file that replace_file is writing at this moment, if any. Only
// async-signal-safe calls (unlink): for a signal handler that ends the process.
void remove_temporary_in_flight() noexcept;

// replace_file with the error "cannot write <path>: <reason>".
void write_file_atomic(const std::filesystem::path& path, const std::string& text);

}  // namespace relpos
