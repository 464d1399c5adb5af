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

}  // namespace relpos
