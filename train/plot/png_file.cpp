#include "train/plot/png_file.h"

#include <fmt/format.h>
#include <png.h>
#include <unistd.h>

#include <cerrno>
#include <csetjmp>
#include <cstdio>
#include <new>
#include <string>
#include <system_error>
#include <vector>

#include "autograd/error.h"

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

std::string errno_message(int error) { return std::generic_category().message(error); }

// Why creating a file at `path` failed with `error`, in words.
std::string create_failure(const fs::path& path, int error) {
  const fs::path dir = path.parent_path().empty() ? fs::path(".") : path.parent_path();
  std::error_code ignored;
  if (error == ENOENT && !fs::is_directory(dir, ignored))
    return fmt::format("directory {} does not exist", dir.string());
  return fmt::format("cannot create {}: {}", path.string(), errno_message(error));
}

}  // namespace

void write_png(const fs::path& path, const Image& image) {
  std::vector<unsigned char> bytes;
  char message[kMessageSize] = {};
  require(encode_png(image, bytes, message), "cannot write PNG {}: {}", path.string(), message);

  const fs::path tmp = path.string() + ".tmp";
  std::FILE* file = std::fopen(tmp.c_str(), "wb");
  if (file == nullptr) fail("cannot write PNG {}: {}", path.string(), create_failure(tmp, errno));
  bool written = std::fwrite(bytes.data(), 1, bytes.size(), file) == bytes.size() &&
                 std::fflush(file) == 0 && ::fsync(::fileno(file)) == 0;
  int error = errno;
  if (std::fclose(file) != 0 && written) {
    written = false;
    error = errno;
  }
  if (!written) {
    std::remove(tmp.c_str());
    fail("cannot write PNG {}: writing {} failed: {}", path.string(), tmp.string(),
         errno_message(error));
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    error = errno;
    std::remove(tmp.c_str());
    fail("cannot write PNG {}: cannot rename {} onto it: {}", path.string(), tmp.string(),
         errno_message(error));
  }
}

}  // namespace relpos
