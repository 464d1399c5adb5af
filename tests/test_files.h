#pragma once
// File helpers shared by the tests: a temporary directory, reading a file back, a
// pseudo-random text and a lowered file-size limit for the write-error paths.
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

namespace relpos::testing {

// A fresh directory under the system temp dir, relpos_<name>_<pid>_<count>,
// created empty on construction and removed with everything in it on destruction.
class TempDir {
 public:
  explicit TempDir(const std::string& name) : path_(unique_path(name)) {
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::filesystem::path& path() const { return path_; }

  // Writes `text` byte for byte to `name` inside the directory and returns its path.
  std::filesystem::path write(const std::string& name, const std::string& text) const {
    const std::filesystem::path file = path_ / name;
    std::ofstream(file, std::ios::binary) << text;
    return file;
  }

 private:
  // The count keeps two directories of one process apart even under the same name.
  static std::filesystem::path unique_path(const std::string& name) {
    static std::atomic<int> count{0};
    return std::filesystem::temp_directory_path() /
           ("relpos_" + name + "_" + std::to_string(::getpid()) + "_" + std::to_string(count++));
  }

  std::filesystem::path path_;
};

// The bytes of `file`, which must exist and be readable.
inline std::string slurp(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  INFO("reading " << file);
  REQUIRE(in.good());
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// `size` letters a-z from a fixed generator seeded by `seed`: a corpus whose windows are
// recognisable.
inline std::string pseudo_random_text(std::size_t size, std::uint64_t seed) {
  std::string text(size, ' ');
  for (auto& c : text) {
    seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
    c = static_cast<char>('a' + (seed >> 59) % 26);
  }
  return text;
}

// Lowers the process file-size limit (and ignores SIGXFSZ) while alive: writes
// past `bytes` fail with EFBIG, like a full disk.
struct FileSizeLimit {
  rlimit saved{};
  void (*saved_handler)(int) = nullptr;
  explicit FileSizeLimit(rlim_t bytes) {
    getrlimit(RLIMIT_FSIZE, &saved);
    saved_handler = signal(SIGXFSZ, SIG_IGN);
    rlimit lowered = saved;
    lowered.rlim_cur = bytes;
    setrlimit(RLIMIT_FSIZE, &lowered);
  }
  ~FileSizeLimit() {
    setrlimit(RLIMIT_FSIZE, &saved);
    signal(SIGXFSZ, saved_handler);
  }
  FileSizeLimit(const FileSizeLimit&) = delete;
  FileSizeLimit& operator=(const FileSizeLimit&) = delete;
};

}  // namespace relpos::testing
