#pragma once
// Outputs never overwrite inputs: before a command writes a file, the path is
// compared, as the kernel resolves it (symlinks followed; a hard link is the same
// file), with every file the command reads.
#include <filesystem>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace relpos {

// A file a command reads, and what it is to the command, e.g. "the checkpoint".
struct InputFile {
  std::filesystem::path path;
  std::string role;
};

// The files a checkpoint is read from: the file and its digest.
std::vector<InputFile> checkpoint_inputs(const std::filesystem::path& checkpoint);

// True when `a` and `b` name the same file: the same inode when both exist, else the
// same path once symlinks and `.`/`..` are resolved.
bool same_file(const std::filesystem::path& a, const std::filesystem::path& b);

// True when `path`, resolved, lies inside the folder `dir`, resolved (or is it).
bool inside_folder(const std::filesystem::path& path, const std::filesystem::path& dir);

// Throws a one-line UsageError "<option> '<output>' is <role> '<input>'; an output
// never replaces an input: choose another path" when `output` names one of `inputs`.
void require_not_an_input(const std::filesystem::path& output, std::string_view option,
                          const std::vector<InputFile>& inputs);

// A folder a command writes into, and which of its entries it writes: `writes(name)`
// is true for the name of an entry (a file, or a folder with everything below it)
// that the command creates, replaces, appends to or removes.
struct OutputFolder {
  std::filesystem::path dir;
  std::function<bool(const std::string& name)> writes;
  std::string what;  // e.g. "the sweep's out_dir"
};

// Throws a one-line UsageError "<role> '<input>' is written by <what> '<dir>' (as
// '<entry>'); an output never replaces an input: ..." when an input, resolved, is one of the
// entries `folder` writes (by path, by inode for an existing file, or below a written folder).
void require_not_written(const std::vector<InputFile>& inputs, const OutputFolder& folder);

}  // namespace relpos
