#include "train/store/input_output.h"

#include "autograd/error.h"
#include "train/store/file_digest.h"

namespace relpos {
namespace fs = std::filesystem;
namespace {

// The path with symlinks and `.`/`..` resolved as far as it exists; the path itself
// when even that fails (a symlink loop), which then only matches itself.
fs::path resolved(const fs::path& path) {
  std::error_code error;
  const fs::path real = fs::weakly_canonical(fs::absolute(path, error), error);
  return error ? path.lexically_normal() : real;
}

}  // namespace

std::vector<InputFile> checkpoint_inputs(const fs::path& checkpoint) {
  return {{checkpoint, "the checkpoint"}, {digest_path(checkpoint), "the checkpoint's digest"}};
}

bool same_file(const fs::path& a, const fs::path& b) {
  std::error_code error;
  if (fs::exists(a, error) && fs::exists(b, error)) return fs::equivalent(a, b, error) && !error;
  return resolved(a) == resolved(b);
}

bool inside_folder(const fs::path& path, const fs::path& dir) {
  const fs::path inner = resolved(path), outer = resolved(dir);
  auto i = inner.begin();
  for (auto o = outer.begin(); o != outer.end(); ++o, ++i) {
    if (o->empty()) continue;  // the empty last part of a path ending in '/'
    if (i == inner.end() || *i != *o) return false;
  }
  return true;
}

void require_not_an_input(const fs::path& output, std::string_view option,
                          const std::vector<InputFile>& inputs) {
  for (const InputFile& input : inputs)
    require(!same_file(output, input.path),
            "{} '{}' is {} '{}'; an output never replaces an input: choose another path", option,
            output.string(), input.role, input.path.string());
}

void require_not_written(const std::vector<InputFile>& inputs, const OutputFolder& folder) {
  std::error_code error;
  // The entries written that exist: an input may be one of them through a hard link.
  std::vector<fs::path> written;
  if (fs::is_directory(folder.dir, error))
    for (const auto& entry : fs::directory_iterator(folder.dir, error))
      if (folder.writes(entry.path().filename().string())) written.push_back(entry.path());
  const fs::path dir = resolved(folder.dir);
  for (const InputFile& input : inputs) {
    const fs::path relative = resolved(input.path).lexically_relative(dir);
    fs::path entry;
    if (!relative.empty() && *relative.begin() != ".." && *relative.begin() != "." &&
        folder.writes(relative.begin()->string()))
      entry = folder.dir / *relative.begin();
    for (const fs::path& file : written)
      if (entry.empty() && fs::is_regular_file(file, error) && same_file(input.path, file))
        entry = file;
    require(entry.empty(),
            "{} '{}' is written by {} '{}' (as '{}'); an output never replaces an input: move "
            "it or choose another folder",
            input.role, input.path.string(), folder.what, folder.dir.string(), entry.string());
  }
}

}  // namespace relpos
