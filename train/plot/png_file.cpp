#include "train/plot/png_file.h"

#include <fmt/format.h>
#include <png.h>

#include <csetjmp>
#include <cstdio>
#include <new>
#include <span>
#include <string>
#include <vector>

#include "autograd/error.h"
#include "train/atomic_file.h"

namespace relpos {

namespace fs = std::filesystem;

namespace {

// libpng reports errors through these callbacks and then longjmps back to
// encode_png(); the message is kept in the char buffer given as error pointer.
constexpr std::size_t kMessageSize = 256;

[[noreturn]] void keep_error(png_structp png, png_const_charp message) {
  auto* buffer = static_cast<char*>(png_get_error_ptr(png));
  std::snprintf(buffer, kMessageSize, "%s", message);
  png_longjmp(png, 1);
}

void ignore_warning(png_structp, png_const_charp) {}

void append_bytes(png_structp png, png_bytep data, png_size_t length) {
  auto* out = static_cast<std::vector<unsigned char>*>(png_get_io_ptr(png));
  try {
    out->insert(out->end(), data, data + length);
  } catch (const std::bad_alloc&) {
    png_error(png, "out of memory");
  }
}

void flush_nothing(png_structp) {}

void write_rows(png_structp png, const Image& image) {
  const std::size_t stride = static_cast<std::size_t>(image.width()) * 3;
  for (int y = 0; y < image.height(); ++y)
    png_write_row(png, image.bytes().data() + static_cast<std::size_t>(y) * stride);
}

// Encodes `image` into `out`. Returns false with libpng's reason in `message` on
// failure. Its locals are all set before setjmp, as a longjmp back requires.
bool encode_png(const Image& image, std::vector<unsigned char>& out, char* message) {
  png_structp png =
      png_create_write_struct(PNG_LIBPNG_VER_STRING, message, keep_error, ignore_warning);
  if (png == nullptr) {
    std::snprintf(message, kMessageSize, "cannot create a libpng writer");
    return false;
  }
  png_infop info = png_create_info_struct(png);
  if (info == nullptr) {
    std::snprintf(message, kMessageSize, "cannot create a libpng info struct");
    png_destroy_write_struct(&png, nullptr);
    return false;
  }
  if (setjmp(png_jmpbuf(png))) {
    png_destroy_write_struct(&png, &info);
    return false;
  }
  png_set_write_fn(png, &out, append_bytes, flush_nothing);
  png_set_IHDR(png, info, static_cast<png_uint_32>(image.width()),
               static_cast<png_uint_32>(image.height()), 8, PNG_COLOR_TYPE_RGB, PNG_INTERLACE_NONE,
               PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
  png_write_info(png, info);
  write_rows(png, image);
  png_write_end(png, nullptr);
  png_destroy_write_struct(&png, &info);
  return true;
}

}  // namespace

void write_png(const fs::path& path, const Image& image) {
  std::vector<unsigned char> bytes;
  char message[kMessageSize] = {};
  require(encode_png(image, bytes, message), "cannot write PNG {}: {}", path.string(), message);

  try {
    replace_file(path, std::span(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
  } catch (const UsageError& error) {
    fail("cannot write PNG {}: {}", path.string(), error.what());
  }
}

}  // namespace relpos
