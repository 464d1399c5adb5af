#pragma once
// Writes an Image as an 8-bit RGB PNG file (libpng), atomically.
#include <filesystem>

#include "train/plot/image.h"

namespace relpos {

// Encodes in memory, writes <path>.tmp, fflush + fsync, then renames it onto
// <path>. On failure the .tmp is removed, whatever was at <path> is untouched, and
// a UsageError names the path and the reason.
void write_png(const std::filesystem::path& path, const Image& image);

}  // namespace relpos
