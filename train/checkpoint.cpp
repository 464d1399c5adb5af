#include "train/checkpoint.h"

#include <H5Cpp.h>
#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <functional>
#include <string_view>
#include <system_error>
#include <utility>

#include "autograd/error.h"
#include "train/atomic_file.h"

namespace relpos {

namespace fs = std::filesystem;

namespace {

// /state attributes with a fixed meaning; every other /state attribute is an RNG/sampler state.
constexpr const char* kStepAttribute = "step";
constexpr const char* kTokensSeenAttribute = "tokens_seen";
constexpr const char* kFormatVersionAttribute = "format_version";
constexpr const char* kConfigAttribute = "config";

bool is_reserved_state_attribute(const std::string& name) {
  return name == kStepAttribute || name == kTokensSeenAttribute ||
         name == kFormatVersionAttribute || name == kConfigAttribute;
}


// HDF5 reports a failure through its "auto" error handler, before the C++ wrapper
// throws and before unwinding closes objects (which clears the error stack). Our
// handler prints nothing: it keeps the most specific message of the first failure
// since capture_hdf5_errors(), e.g. "truncated file: eof = ...".
std::string& first_hdf5_error() {
  static std::string message;
  return message;
}

herr_t keep_innermost_message(unsigned n, const H5E_error2_t* error, void* out) {
  if (n == 0 && error->desc != nullptr) *static_cast<std::string*>(out) = error->desc;
  return 0;
}

herr_t record_hdf5_error(hid_t stack, void*) {
  if (first_hdf5_error().empty())
    H5Ewalk2(stack, H5E_WALK_UPWARD, keep_innermost_message, &first_hdf5_error());
  return 0;
}

void capture_hdf5_errors() {
  first_hdf5_error().clear();
  H5E_auto2_t handler = record_hdf5_error;
  H5::Exception::setAutoPrint(handler, nullptr);
}

// One line: HDF5's file-driver messages span several lines.
std::string hdf5_reason(const H5::Exception& exception) {
  std::string reason = first_hdf5_error().empty() ? exception.getDetailMsg() : first_hdf5_error();
  std::replace(reason.begin(), reason.end(), '\n', ' ');
  return reason;
}

// ---- names <-> HDF5 paths ----

std::string join(const std::vector<std::string>& parts, char separator) {
  std::string out;
  for (const std::string& part : parts) {
    if (!out.empty()) out += separator;
    out += part;
  }
  return out;
}

// "blocks.0.attn.q.weight" -> {"blocks", "0", "attn", "q", "weight"}
std::vector<std::string> param_path(const std::string& name) {
  std::vector<std::string> parts;
  std::size_t begin = 0;
  for (;;) {
    const std::size_t dot = name.find('.', begin);
    parts.push_back(name.substr(begin, dot - begin));
    require(!parts.back().empty() && parts.back().find('/') == std::string::npos,
            "parameter name '{}' must be non-empty parts separated by '.', without '/'", name);
    if (dot == std::string::npos) return parts;
    begin = dot + 1;
  }
}

// "blocks.0.attn.q.weight/exp_avg" -> {"blocks", "0", "attn", "q", "weight", "exp_avg"};
// a key without '/' (optimizer-wide state such as "step") -> {"step"}.
std::vector<std::string> optim_path(const std::string& key) {
  const std::size_t slash = key.rfind('/');
  if (slash == std::string::npos) return param_path(key);
  require(slash + 1 < key.size(),
          "optimizer state key '{}' must look like '<param name>/<state>' or '<state>'", key);
  std::vector<std::string> parts = param_path(key.substr(0, slash));
  parts.push_back(key.substr(slash + 1));
  return parts;
}

// ---- element types ----

const H5::PredType& memory_type(DType dtype) {
  switch (dtype) {
    case DType::f32: return H5::PredType::NATIVE_FLOAT;
    case DType::f64: return H5::PredType::NATIVE_DOUBLE;
    case DType::i64: return H5::PredType::NATIVE_INT64;
    default: return H5::PredType::NATIVE_UINT8;
  }
}

const H5::PredType& file_type(DType dtype) {
  switch (dtype) {
    case DType::f32: return H5::PredType::IEEE_F32LE;
    case DType::f64: return H5::PredType::IEEE_F64LE;
    case DType::i64: return H5::PredType::STD_I64LE;
    default: return H5::PredType::STD_U8LE;
  }
}

DType dtype_of_dataset(const H5::DataSet& dataset, const std::string& file) {
  const std::size_t bytes = dataset.getDataType().getSize();
  switch (dataset.getTypeClass()) {
    case H5T_FLOAT:
      if (bytes == 4) return DType::f32;
      if (bytes == 8) return DType::f64;
      break;
    case H5T_INTEGER: {
      const bool is_signed = dataset.getIntType().getSign() != H5T_SGN_NONE;
      if (bytes == 8 && is_signed) return DType::i64;
      if (bytes == 1 && !is_signed) return DType::u8;
      break;
    }
    default: break;
  }
  fail("checkpoint {}: dataset {} has an unsupported element type (expected f32, f64, i64 or u8)",
       file, dataset.getObjName());
}

// ---- writing ----

H5::DataSpace dataspace_for(const Shape& shape) {
  if (shape.empty()) return H5::DataSpace(H5S_SCALAR);
  const std::vector<hsize_t> dims(shape.begin(), shape.end());
  return H5::DataSpace(static_cast<int>(dims.size()), dims.data());
}

H5::Group open_or_create_group(const H5::Group& parent, const std::string& part,
                               const std::string& entry) {
  if (!parent.nameExists(part)) return parent.createGroup(part);
  require(parent.childObjType(part) == H5O_TYPE_GROUP,
          "'{}' needs {}/{} to be a group, but another entry stores a tensor there", entry,
          parent.getObjName(), part);
  return parent.openGroup(part);
}

// Stores `tensor` row-major at root/path[0]/.../path[n-1]; `entry` names it in errors.
void write_tensor(const H5::Group& root, const std::vector<std::string>& path,
                  const std::string& entry, const Tensor& tensor) {
  require(tensor.defined(), "'{}' is an undefined tensor", entry);
  H5::Group group = root;
  for (std::size_t i = 0; i + 1 < path.size(); ++i)
    group = open_or_create_group(group, path[i], entry);
  require(!group.nameExists(path.back()),
          "'{}' would be stored at {}/{}, which other entries use as a group", entry,
          group.getObjName(), path.back());
  const Tensor host = tensor.to(Device::cpu).contiguous();
  const H5::DataSet dataset =
      group.createDataSet(path.back(), file_type(host.dtype()), dataspace_for(host.shape()));
  if (host.numel() > 0) dataset.write(host.raw_data(), memory_type(host.dtype()));
}

void write_int_attribute(const H5::Group& group, const char* name, std::int64_t value) {
  const H5::Attribute attribute =
      group.createAttribute(name, H5::PredType::STD_I64LE, H5::DataSpace(H5S_SCALAR));
  attribute.write(H5::PredType::NATIVE_INT64, &value);
}

void write_string_attribute(const H5::Group& group, const char* name, const std::string& value) {
  H5::StrType type(H5::PredType::C_S1, H5T_VARIABLE);  // h5py reads it as str
  type.setCset(H5T_CSET_UTF8);
  const H5::Attribute attribute = group.createAttribute(name, type, H5::DataSpace(H5S_SCALAR));
  attribute.write(type, value);
}

void write_u64_array_attribute(const H5::Group& group, const std::string& name,
                               const std::vector<std::uint64_t>& values) {
  const hsize_t length = values.size();
  const H5::Attribute attribute =
      group.createAttribute(name, H5::PredType::STD_U64LE, H5::DataSpace(1, &length));
  if (length > 0) attribute.write(H5::PredType::NATIVE_UINT64, values.data());
}

void write_contents(const H5::H5File& h5, const Checkpoint& checkpoint) {
  const H5::Group params = h5.createGroup("params");
  for (const auto& [name, tensor] : checkpoint.params)
    write_tensor(params, param_path(name), name, tensor);
  const H5::Group optim = h5.createGroup("optim");
  for (const auto& [key, tensor] : checkpoint.optim)
    write_tensor(optim, optim_path(key), key, tensor);

  const H5::Group state = h5.createGroup("state");
  write_int_attribute(state, kStepAttribute, checkpoint.step);
  write_int_attribute(state, kTokensSeenAttribute, checkpoint.tokens_seen);
  write_int_attribute(state, kFormatVersionAttribute, checkpoint.format_version);
  write_string_attribute(state, kConfigAttribute, checkpoint.config_yaml);
  for (const auto& [name, values] : checkpoint.rng_states) {
    require(!name.empty() && !is_reserved_state_attribute(name),
            "RNG state name '{}' is empty or reserved (step, tokens_seen, format_version, config)",
            name);
    write_u64_array_attribute(state, name, values);
  }
}

// Size steps in which the in-memory file grows.
constexpr std::size_t kImageIncrement = std::size_t{16} << 20;

// The complete HDF5 file, built in memory (core driver, no backing store).
// HDF5 never writes to disk here: in HDF5 1.10, a file whose write fails can
// no longer be closed, and the process then crashes at exit. We write the
// bytes ourselves, so a full disk is an ordinary error.
std::vector<char> hdf5_image(const fs::path& label, const Checkpoint& checkpoint) {
  H5::FileAccPropList access;
  access.setCore(kImageIncrement, false);
  H5::H5File h5(label.string(), H5F_ACC_TRUNC, H5::FileCreatPropList::DEFAULT, access);
  write_contents(h5, checkpoint);  // its groups and datasets are closed on return
  h5.flush(H5F_SCOPE_GLOBAL);
  const ssize_t size = H5Fget_file_image(h5.getId(), nullptr, 0);
  std::vector<char> image(size > 0 ? static_cast<std::size_t>(size) : 0);
  if (size <= 0 || H5Fget_file_image(h5.getId(), image.data(), image.size()) != size)
    throw H5::FileIException("H5Fget_file_image", "cannot copy the in-memory file");
  h5.close();
  return image;
}

// ---- reading ----

Tensor read_tensor(const H5::DataSet& dataset, const std::string& file) {
  const DType dtype = dtype_of_dataset(dataset, file);
  const H5::DataSpace space = dataset.getSpace();
  const H5S_class_t kind = space.getSimpleExtentType();
  require(kind == H5S_SCALAR || kind == H5S_SIMPLE,
          "checkpoint {}: dataset {} has an empty (null) dataspace", file, dataset.getObjName());
  std::vector<hsize_t> dims(static_cast<std::size_t>(space.getSimpleExtentNdims()));
  space.getSimpleExtentDims(dims.data());
  Tensor tensor = Tensor::empty(Shape(dims.begin(), dims.end()), dtype);
  if (tensor.numel() > 0) dataset.read(tensor.raw_data(), memory_type(dtype));
  return tensor;
}

using TensorVisitor = std::function<void(const std::vector<std::string>& path, Tensor tensor)>;

// Calls visit(path below the starting group, tensor) for every dataset under `group`.
void read_tree(const H5::Group& group, std::vector<std::string>& path, const std::string& file,
               const TensorVisitor& visit) {
  for (hsize_t i = 0; i < group.getNumObjs(); ++i) {
    const std::string name = group.getObjnameByIdx(i);
    path.push_back(name);
    switch (group.childObjType(name)) {
      case H5O_TYPE_GROUP: read_tree(group.openGroup(name), path, file, visit); break;
      case H5O_TYPE_DATASET: visit(path, read_tensor(group.openDataSet(name), file)); break;
      default:
        fail("checkpoint {}: {}/{} is neither a group nor a dataset", file, group.getObjName(),
             name);
    }
    path.pop_back();
  }
}

bool has_group(const H5::H5File& h5, const char* name) {
  return h5.nameExists(name) && h5.childObjType(name) == H5O_TYPE_GROUP;
}

H5::Attribute open_state_attribute(const H5::Group& state, const char* name,
                                   const std::string& file) {
  require(state.attrExists(name), "checkpoint {}: /state has no attribute '{}'", file, name);
  return state.openAttribute(name);
}

std::int64_t read_int_attribute(const H5::Group& state, const char* name, const std::string& file) {
  const H5::Attribute attribute = open_state_attribute(state, name, file);
  require(attribute.getTypeClass() == H5T_INTEGER &&
              attribute.getSpace().getSimpleExtentNpoints() == 1,
          "checkpoint {}: /state attribute '{}' must be a single integer", file, name);
  std::int64_t value = 0;
  attribute.read(H5::PredType::NATIVE_INT64, &value);
  return value;
}

std::string read_string_attribute(const H5::Group& state, const char* name,
                                  const std::string& file) {
  const H5::Attribute attribute = open_state_attribute(state, name, file);
  require(attribute.getTypeClass() == H5T_STRING,
          "checkpoint {}: /state attribute '{}' must be a string", file, name);
  std::string value;
  attribute.read(attribute.getStrType(), value);
  return value;
}

std::map<std::string, std::vector<std::uint64_t>> read_rng_states(const H5::Group& state,
                                                                  const std::string& file) {
  std::map<std::string, std::vector<std::uint64_t>> states;
  for (int i = 0; i < state.getNumAttrs(); ++i) {
    const H5::Attribute attribute = state.openAttribute(static_cast<unsigned>(i));
    const std::string name = attribute.getName();
    if (is_reserved_state_attribute(name)) continue;
    const H5::DataSpace space = attribute.getSpace();
    require(attribute.getTypeClass() == H5T_INTEGER &&
                attribute.getIntType().getSign() == H5T_SGN_NONE &&
                attribute.getDataType().getSize() == 8 && space.getSimpleExtentNdims() == 1,
            "checkpoint {}: /state attribute '{}' must be a 1-d uint64 array (an RNG state)", file,
            name);
    std::vector<std::uint64_t> values(static_cast<std::size_t>(space.getSimpleExtentNpoints()));
    if (!values.empty()) attribute.read(H5::PredType::NATIVE_UINT64, values.data());
    states.emplace(name, std::move(values));
  }
  return states;
}

Checkpoint read_contents(const H5::H5File& h5, const std::string& file) {
  require(has_group(h5, "state"), "checkpoint {}: no /state group (not a relpos checkpoint?)",
          file);
  const H5::Group state = h5.openGroup("state");
  Checkpoint checkpoint;
  checkpoint.format_version = read_int_attribute(state, kFormatVersionAttribute, file);
  require(checkpoint.format_version == kCheckpointFormatVersion,
          "checkpoint {}: format_version {} is not supported (this build reads version {})", file,
          checkpoint.format_version, kCheckpointFormatVersion);
  checkpoint.step = read_int_attribute(state, kStepAttribute, file);
  checkpoint.tokens_seen = read_int_attribute(state, kTokensSeenAttribute, file);
  checkpoint.config_yaml = read_string_attribute(state, kConfigAttribute, file);
  checkpoint.rng_states = read_rng_states(state, file);

  require(has_group(h5, "params"), "checkpoint {}: no /params group", file);
  std::vector<std::string> path;
  read_tree(h5.openGroup("params"), path, file,
            [&](const std::vector<std::string>& where, Tensor tensor) {
              checkpoint.params.emplace(join(where, '.'), std::move(tensor));
            });
  if (has_group(h5, "optim")) {
    read_tree(h5.openGroup("optim"), path, file,
              [&](const std::vector<std::string>& where, Tensor tensor) {
                if (where.size() == 1) {  // optimizer-wide state, e.g. /optim/step
                  checkpoint.optim.emplace(where.front(), std::move(tensor));
                  return;
                }
                const std::vector<std::string> param(where.begin(), where.end() - 1);
                checkpoint.optim.emplace(join(param, '.') + "/" + where.back(), std::move(tensor));
              });
  }
  return checkpoint;
}

// ---- checkpoint directories ----

// "ckpt_00001200.h5" -> 1200; nullopt for any other name.
// (A plain scan, not <regex>: GCC 12's <regex> trips a false -Wmaybe-uninitialized under
// -fsanitize=address, which -Werror turns into a build failure.)
std::optional<std::int64_t> step_of_checkpoint_name(const std::string& filename) {
  const std::string_view name = filename, prefix = "ckpt_", suffix = ".h5";
  if (!name.starts_with(prefix) || !name.ends_with(suffix)) return std::nullopt;
  const std::string_view digits =
      name.substr(prefix.size(), name.size() - prefix.size() - suffix.size());
  if (digits.size() < 8 || digits.size() > 18) return std::nullopt;
  std::int64_t step = 0;
  for (const char c : digits) {
    if (c < '0' || c > '9') return std::nullopt;
    step = step * 10 + (c - '0');  // at most 18 digits: no overflow
  }
  return step;
}

// The checkpoints in dir, sorted by step.
std::vector<std::pair<std::int64_t, fs::path>> list_checkpoints(const fs::path& dir) {
  std::vector<std::pair<std::int64_t, fs::path>> found;
  std::error_code error;
  if (!fs::is_directory(dir, error)) return found;
  for (fs::directory_iterator it(dir, error), end; !error && it != end; it.increment(error)) {
    const std::optional<std::int64_t> step = step_of_checkpoint_name(it->path().filename());
    if (step && it->is_regular_file()) found.emplace_back(*step, it->path());
  }
  require(!error, "cannot list checkpoint directory {}: {}", dir.string(), error.message());
  std::sort(found.begin(), found.end());
  return found;
}

}  // namespace

void save_checkpoint(const fs::path& path, const Checkpoint& checkpoint) {
  capture_hdf5_errors();
  try {
    require(checkpoint.format_version == kCheckpointFormatVersion,
            "format_version {} cannot be written (this build writes version {})",
            checkpoint.format_version, kCheckpointFormatVersion);
    replace_file(path, hdf5_image(path.string() + ".tmp", checkpoint));
  } catch (const UsageError& error) {
    fail("cannot save checkpoint {}: {}", path.string(), error.what());
  } catch (const H5::Exception& error) {
    fail("cannot save checkpoint {}: HDF5 error: {}", path.string(), hdf5_reason(error));
  }
}

Checkpoint load_checkpoint(const fs::path& path) {
  capture_hdf5_errors();
  const std::string file = path.string();
  std::error_code error;
  require(fs::exists(path, error), "checkpoint {}: no such file", file);
  require(fs::is_regular_file(path, error), "checkpoint {}: not a regular file", file);
  try {
    require(H5::H5File::isHdf5(file), "checkpoint {}: not an HDF5 file", file);
    const H5::H5File h5(file, H5F_ACC_RDONLY);
    return read_contents(h5, file);
  } catch (const H5::Exception& h5_error) {
    fail("checkpoint {}: unreadable, truncated or corrupt HDF5 file ({})", file,
         hdf5_reason(h5_error));
  }
}

fs::path checkpoint_path(const fs::path& dir, std::int64_t step) {
  require(step >= 0, "checkpoint_path: step {} is negative", step);
  return dir / fmt::format("ckpt_{:08d}.h5", step);
}

std::optional<fs::path> latest_checkpoint(const fs::path& dir) {
  const auto checkpoints = list_checkpoints(dir);
  if (checkpoints.empty()) return std::nullopt;
  return checkpoints.back().second;
}

void keep_last_checkpoints(const fs::path& dir, int keep) {
  if (keep <= 0) return;
  const auto checkpoints = list_checkpoints(dir);
  const std::size_t excess = checkpoints.size() > static_cast<std::size_t>(keep)
                                 ? checkpoints.size() - static_cast<std::size_t>(keep)
                                 : 0;
  for (std::size_t i = 0; i < excess; ++i) {
    std::error_code error;
    fs::remove(checkpoints[i].second, error);
    require(!error, "cannot delete old checkpoint {}: {}", checkpoints[i].second.string(),
            error.message());
  }
}

void check_params_match(const std::map<std::string, Tensor>& expected,
                        const std::map<std::string, Tensor>& loaded, const std::string& source) {
  for (const auto& [name, tensor] : expected) {
    const auto found = loaded.find(name);
    require(found != loaded.end(),
            "checkpoint {} does not match the model: parameter '{}' (shape {}) is missing", source,
            name, to_string(tensor.shape()));
    require(found->second.shape() == tensor.shape(),
            "checkpoint {} does not match the model: parameter '{}' has shape {} in the "
            "checkpoint but {} in the model",
            source, name, to_string(found->second.shape()), to_string(tensor.shape()));
  }
  for (const auto& [name, tensor] : loaded)
    require(expected.count(name) == 1,
            "checkpoint {} does not match the model: unexpected parameter '{}' (shape {})", source,
            name, to_string(tensor.shape()));
}

}  // namespace relpos
