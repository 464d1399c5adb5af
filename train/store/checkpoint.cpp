#include "train/store/checkpoint.h"

#include <H5Cpp.h>
#include <fmt/format.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <iterator>
#include <optional>
#include <set>
#include <span>
#include <string_view>
#include <system_error>
#include <utility>

#include "autograd/error.h"
#include "train/store/atomic_file.h"
#include "train/store/checkpoint_names.h"
#include "train/store/file_digest.h"
#include "train/store/hdf5_errors.h"
#include "train/store/hdf5_metadata_check.h"
#include "train/store/hdf5_superblock.h"

namespace relpos {

namespace fs = std::filesystem;

namespace {

// /state attributes with a fixed meaning; every other /state attribute is an RNG/sampler state.
constexpr const char* kStepAttribute = "step";
constexpr const char* kTokensSeenAttribute = "tokens_seen";
constexpr const char* kFormatVersionAttribute = "format_version";
// The resolved config: a 1-d uint8 dataset of its UTF-8 bytes. A byte dataset has no
// stored length that a corrupt file could make the reader trust (a string attribute has).
constexpr const char* kConfigDataset = "config";
// data.tokenizer sentencepiece: the model file's bytes, the same way; absent otherwise.
constexpr const char* kTokenizerDataset = "tokenizer";
// Every dataset's uint64 attribute: FNV-1a of its row-major little-endian bytes.
constexpr const char* kDigestAttribute = "fnv1a64";
// Groups deeper than this are refused (a parameter name has a handful of parts).
constexpr int kMaxGroupDepth = 64;

bool is_reserved_state_attribute(const std::string& name) {
  return name == kStepAttribute || name == kTokensSeenAttribute || name == kFormatVersionAttribute;
}

// ---- element types ----

const H5::PredType& memory_type(DType dtype) {
  switch (dtype) {
    case DType::f32:
      return H5::PredType::NATIVE_FLOAT;
    case DType::f64:
      return H5::PredType::NATIVE_DOUBLE;
    case DType::i64:
      return H5::PredType::NATIVE_INT64;
    default:
      return H5::PredType::NATIVE_UINT8;
  }
}

const H5::PredType& file_type(DType dtype) {
  switch (dtype) {
    case DType::f32:
      return H5::PredType::IEEE_F32LE;
    case DType::f64:
      return H5::PredType::IEEE_F64LE;
    case DType::i64:
      return H5::PredType::STD_I64LE;
    default:
      return H5::PredType::STD_U8LE;
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
    default:
      break;
  }
  fail("checkpoint {}: dataset {} has an unsupported element type (expected f32, f64, i64 or u8)",
       file, dataset.getObjName());
}

// ---- writing ----

// The bytes of a contiguous host tensor: what its dataset stores (the file types
// are little-endian, like every machine relpos builds for).
std::span<const char> tensor_bytes(const Tensor& host) {
  return {static_cast<const char*>(host.raw_data()),
          static_cast<std::size_t>(host.numel()) * element_size(host.dtype())};
}

Tensor string_bytes(const std::string& text) {
  Tensor bytes = Tensor::empty({static_cast<std::int64_t>(text.size())}, DType::u8);
  if (!text.empty()) std::memcpy(bytes.raw_data(), text.data(), text.size());
  return bytes;
}

H5::DataSpace dataspace_for(const Shape& shape) {
  if (shape.empty()) return H5::DataSpace(H5S_SCALAR);
  const std::vector<hsize_t> dims(shape.begin(), shape.end());
  return H5::DataSpace(static_cast<int>(dims.size()), dims.data());
}

// Raises HDF5's compact-storage limits of the group (or file, for its root group)
// creation property list `creation` to their maximum, 65,535 links and attributes:
// HDF5 moves more than 8 into dense storage by default, which relpos's reader refuses
// (hdf5_metadata_check.h). False if HDF5 refuses.
bool keep_compact(hid_t creation) {
  constexpr unsigned kMostCompact = 65535;
  return H5Pset_link_phase_change(creation, kMostCompact, 0) >= 0 &&
         H5Pset_attr_phase_change(creation, kMostCompact, 0) >= 0;
}

H5::Group create_group(const H5::Group& parent, const std::string& name) {
  const hid_t creation = H5Pcreate(H5P_GROUP_CREATE);
  hid_t id = H5I_INVALID_HID;
  if (creation >= 0 && keep_compact(creation))
    id = H5Gcreate2(parent.getId(), name.c_str(), H5P_DEFAULT, creation, H5P_DEFAULT);
  if (creation >= 0) H5Pclose(creation);
  if (id < 0) throw H5::GroupIException("H5Gcreate2", "cannot create group " + name);
  const H5::Group group(id);  // holds its own reference
  H5Gclose(id);
  return group;
}

H5::Group open_or_create_group(const H5::Group& parent, const std::string& part,
                               const std::string& entry) {
  if (!parent.nameExists(part)) return create_group(parent, part);
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
  const std::uint64_t digest = fnv1a64(tensor_bytes(host));
  dataset.createAttribute(kDigestAttribute, H5::PredType::STD_U64LE, H5::DataSpace(H5S_SCALAR))
      .write(H5::PredType::NATIVE_UINT64, &digest);
}

void write_int_attribute(const H5::Group& group, const char* name, std::int64_t value) {
  const H5::Attribute attribute =
      group.createAttribute(name, H5::PredType::STD_I64LE, H5::DataSpace(H5S_SCALAR));
  attribute.write(H5::PredType::NATIVE_INT64, &value);
}

void write_u64_array_attribute(const H5::Group& group, const std::string& name,
                               const std::vector<std::uint64_t>& values) {
  const hsize_t length = values.size();
  const H5::Attribute attribute =
      group.createAttribute(name, H5::PredType::STD_U64LE, H5::DataSpace(1, &length));
  if (length > 0) attribute.write(H5::PredType::NATIVE_UINT64, values.data());
}

void write_contents(const H5::H5File& h5, const Checkpoint& checkpoint) {
  const H5::Group params = create_group(h5, "params");
  for (const auto& [name, tensor] : checkpoint.params)
    write_tensor(params, param_path(name), name, tensor);
  const H5::Group optim = create_group(h5, "optim");
  for (const auto& [key, tensor] : checkpoint.optim)
    write_tensor(optim, optim_path(key), key, tensor);
  if (!checkpoint.memory.empty()) {
    const H5::Group memory = create_group(h5, "memory");
    for (const auto& [layer, tensor] : checkpoint.memory)
      write_tensor(memory, {layer}, layer, tensor);
  }
  if (!checkpoint.knn_memory.empty()) {
    const H5::Group knn = create_group(h5, "knn_memory");
    for (const auto& [name, tensor] : checkpoint.knn_memory)
      write_tensor(knn, {name}, "knn_memory/" + name, tensor);
  }

  const H5::Group state = create_group(h5, "state");
  write_int_attribute(state, kStepAttribute, checkpoint.step);
  write_int_attribute(state, kTokensSeenAttribute, checkpoint.tokens_seen);
  write_int_attribute(state, kFormatVersionAttribute, checkpoint.format_version);
  write_tensor(h5.openGroup("/"), {kConfigDataset}, kConfigDataset,
               string_bytes(checkpoint.config_yaml));
  if (!checkpoint.tokenizer_model.empty())
    write_tensor(h5.openGroup("/"), {kTokenizerDataset}, kTokenizerDataset,
                 string_bytes(checkpoint.tokenizer_model));
  for (const auto& [name, values] : checkpoint.rng_states) {
    require(!name.empty() && !is_reserved_state_attribute(name),
            "RNG state name '{}' is empty or reserved (step, tokens_seen, format_version)", name);
    write_u64_array_attribute(state, name, values);
  }
}

// Size steps in which the in-memory file grows.
constexpr std::size_t kImageIncrement = std::size_t{16} << 20;

// The complete HDF5 file, built in memory (core driver, no backing store).
// HDF5 never writes to disk here: in HDF5 1.10, a file whose write fails can
// no longer be closed, and the process then crashes at exit. We write the
// bytes ourselves, so a full disk is an ordinary error. The file format is
// that of HDF5 1.8 or later: superblock version 2 and object headers version 2,
// whose metadata carry checksums that HDF5 verifies on reading.
std::vector<char> hdf5_image(const fs::path& label, const Checkpoint& checkpoint) {
  H5::FileAccPropList access;
  access.setCore(kImageIncrement, false);
  access.setLibverBounds(H5F_LIBVER_V18, H5F_LIBVER_LATEST);
  const H5::FileCreatPropList creation;
  if (!keep_compact(creation.getId()))
    throw H5::FileIException("H5Pset_link_phase_change", "cannot keep the root group compact");
  H5::H5File h5(label.string(), H5F_ACC_TRUNC, creation, access);
  write_contents(h5, checkpoint);  // its groups and datasets are closed on return
  h5.flush(H5F_SCOPE_GLOBAL);
  const ssize_t size = H5Fget_file_image(h5.getId(), nullptr, 0);
  std::vector<char> image(size > 0 ? static_cast<std::size_t>(size) : 0);
  if (size <= 0 || H5Fget_file_image(h5.getId(), image.data(), image.size()) != size)
    throw H5::FileIException("H5Fget_file_image", "cannot copy the in-memory file");
  h5.close();
  reseal_superblock(image);
  // What relpos writes, its reader accepts: a checkpoint the pre-check would refuse is
  // never written.
  check_hdf5_metadata(image, label.string());
  return image;
}

// ---- reading ----

// HDF5 reads the verified bytes from memory, never the file again. Its core driver
// refuses an image whose name is an existing file: this name never is one.
constexpr const char* kImageName = "/dev/null/relpos-checkpoint-image";

H5::H5File open_image(std::string& image) {
  H5::FileAccPropList access;
  access.setCore(kImageIncrement, false);
  if (H5Pset_file_image(access.getId(), image.data(), image.size()) < 0)
    throw H5::FileIException("H5Pset_file_image", "cannot hand the file image to HDF5");
  return H5::H5File(kImageName, H5F_ACC_RDONLY, H5::FileCreatPropList::DEFAULT, access);
}

// A dataset found in the file, with its element type and declared shape; its data
// are not read yet.
struct DeclaredDataset {
  std::vector<std::string> path;  // below the group the walk started from
  H5::DataSet dataset;
  DType dtype = DType::f32;
  Shape shape;
  std::uint64_t bytes = 0;
};

// What a walk over the file has seen: every object once, and the bytes all declared
// datasets need, which may not exceed the file (contiguous data are stored in it).
struct WalkLimits {
  std::string file;
  std::uint64_t file_bytes = 0;
  std::uint64_t declared_bytes = 0;
  std::set<haddr_t> seen_objects;
};

void visit_object_once(hid_t object, const std::string& name, WalkLimits& limits) {
  H5O_info_t info;
  if (H5Oget_info2(object, &info, H5O_INFO_BASIC) < 0)
    throw H5::GroupIException("H5Oget_info2", "cannot read an object header");
  require(limits.seen_objects.insert(info.addr).second,
          "checkpoint {}: {} is linked a second time (a relpos checkpoint has a tree)", limits.file,
          name);
}

DeclaredDataset declare_dataset(H5::DataSet dataset, std::vector<std::string> path,
                                WalkLimits& limits) {
  const std::string name = dataset.getObjName();
  visit_object_once(dataset.getId(), name, limits);
  DeclaredDataset declared{std::move(path), dataset, dtype_of_dataset(dataset, limits.file), {}, 0};
  const H5::DSetCreatPropList creation = dataset.getCreatePlist();
  require(creation.getLayout() == H5D_CONTIGUOUS,
          "checkpoint {}: dataset {} is not stored contiguously (relpos writes no chunked, "
          "compact or virtual datasets)",
          limits.file, name);
  // External storage keeps a dataset's bytes in other files (any path, a FIFO): the
  // reader stays in the verified image.
  require(H5Pget_external_count(creation.getId()) == 0,
          "checkpoint {}: dataset {} keeps its data in an external file (relpos reads only "
          "what is inside the checkpoint)",
          limits.file, name);
  const H5::DataSpace space = dataset.getSpace();
  const H5S_class_t kind = space.getSimpleExtentType();
  require(kind == H5S_SCALAR || kind == H5S_SIMPLE,
          "checkpoint {}: dataset {} has an empty (null) dataspace", limits.file, name);
  std::vector<hsize_t> dims(static_cast<std::size_t>(space.getSimpleExtentNdims()));
  space.getSimpleExtentDims(dims.data());
  std::uint64_t numel = 1;
  bool fits = true;
  for (const hsize_t dim : dims)
    fits = fits && dim <= limits.file_bytes && !__builtin_mul_overflow(numel, dim, &numel) &&
           numel <= limits.file_bytes;
  declared.bytes = fits ? numel * element_size(declared.dtype) : 0;
  require(fits && declared.bytes <= limits.file_bytes - limits.declared_bytes,
          "checkpoint {}: dataset {} declares shape [{}], more than the {}-byte file holds",
          limits.file, name, fmt::join(dims, ", "), limits.file_bytes);
  limits.declared_bytes += declared.bytes;
  declared.shape.assign(dims.begin(), dims.end());
  return declared;
}

// Appends every dataset under `group` (hard links only: a soft or external link
// could lead outside the file or into a cycle).
void declare_tree(const H5::Group& group, std::vector<std::string>& path, WalkLimits& limits,
                  std::vector<DeclaredDataset>& out) {
  require(static_cast<int>(path.size()) < kMaxGroupDepth,
          "checkpoint {}: groups nested deeper than {} below {}", limits.file, kMaxGroupDepth,
          group.getObjName());
  visit_object_once(group.getId(), group.getObjName(), limits);
  for (hsize_t i = 0; i < group.getNumObjs(); ++i) {
    const std::string name = group.getObjnameByIdx(i);
    H5L_info_t link;
    if (H5Lget_info(group.getId(), name.c_str(), &link, H5P_DEFAULT) < 0)
      throw H5::GroupIException("H5Lget_info", "cannot read a link");
    require(link.type == H5L_TYPE_HARD, "checkpoint {}: {}/{} is a soft or external link",
            limits.file, group.getObjName(), name);
    path.push_back(name);
    switch (group.childObjType(name)) {
      case H5O_TYPE_GROUP:
        declare_tree(group.openGroup(name), path, limits, out);
        break;
      case H5O_TYPE_DATASET:
        out.push_back(declare_dataset(group.openDataSet(name), path, limits));
        break;
      default:
        fail("checkpoint {}: {}/{} is neither a group nor a dataset", limits.file,
             group.getObjName(), name);
    }
    path.pop_back();
  }
}

std::vector<DeclaredDataset> declare_group(const H5::Group& group, WalkLimits& limits) {
  std::vector<DeclaredDataset> out;
  std::vector<std::string> path;
  declare_tree(group, path, limits, out);
  return out;
}

std::uint64_t read_digest_attribute(const H5::DataSet& dataset, const std::string& file) {
  const std::string name = dataset.getObjName();
  require(dataset.attrExists(kDigestAttribute), "checkpoint {}: dataset {} has no {} attribute",
          file, name, kDigestAttribute);
  const H5::Attribute attribute = dataset.openAttribute(kDigestAttribute);
  require(
      attribute.getTypeClass() == H5T_INTEGER && attribute.getSpace().getSimpleExtentNpoints() == 1,
      "checkpoint {}: dataset {}: attribute {} must be one uint64", file, name, kDigestAttribute);
  std::uint64_t digest = 0;
  attribute.read(H5::PredType::NATIVE_UINT64, &digest);
  return digest;
}

// Allocates and reads a declared dataset, then checks its bytes against its digest.
Tensor read_tensor(const DeclaredDataset& declared, const std::string& file) {
  const std::uint64_t recorded = read_digest_attribute(declared.dataset, file);
  Tensor tensor = Tensor::empty(declared.shape, declared.dtype);
  if (tensor.numel() > 0) declared.dataset.read(tensor.raw_data(), memory_type(declared.dtype));
  const std::uint64_t actual = fnv1a64(tensor_bytes(tensor));
  require(actual == recorded,
          "checkpoint {}: dataset {} is corrupt (its data digest {:016x} differs from the "
          "recorded {:016x})",
          file, declared.dataset.getObjName(), actual, recorded);
  return tensor;
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
  // Signed 64-bit as written: HDF5 would clamp a wider or unsigned value silently.
  require(attribute.getTypeClass() == H5T_INTEGER &&
              attribute.getIntType().getSign() == H5T_SGN_2 &&
              attribute.getDataType().getSize() == 8 &&
              attribute.getSpace().getSimpleExtentNpoints() == 1,
          "checkpoint {}: /state attribute '{}' must be a single int64", file, name);
  std::int64_t value = 0;
  attribute.read(H5::PredType::NATIVE_INT64, &value);
  return value;
}

// The 1-d uint8 dataset /<name> (the config's UTF-8 bytes, the tokenizer model's bytes).
std::string read_bytes_dataset(const H5::H5File& h5, const char* name, WalkLimits& limits) {
  require(h5.nameExists(name) && h5.childObjType(name) == H5O_TYPE_DATASET,
          "checkpoint {}: no /{} dataset", limits.file, name);
  const DeclaredDataset declared = declare_dataset(h5.openDataSet(name), {name}, limits);
  require(declared.dtype == DType::u8 && declared.shape.size() == 1,
          "checkpoint {}: /{} must be a 1-d uint8 dataset (its bytes)", limits.file, name);
  const Tensor bytes = read_tensor(declared, limits.file);
  const std::span<const char> text = tensor_bytes(bytes);
  return std::string(text.begin(), text.end());
}

std::map<std::string, std::vector<std::uint64_t>> read_rng_states(const H5::Group& state,
                                                                  const WalkLimits& limits) {
  std::map<std::string, std::vector<std::uint64_t>> states;
  for (int i = 0; i < state.getNumAttrs(); ++i) {
    const H5::Attribute attribute = state.openAttribute(static_cast<unsigned>(i));
    const std::string name = attribute.getName();
    if (is_reserved_state_attribute(name)) continue;
    const H5::DataSpace space = attribute.getSpace();
    require(attribute.getTypeClass() == H5T_INTEGER &&
                attribute.getIntType().getSign() == H5T_SGN_NONE &&
                attribute.getDataType().getSize() == 8 && space.getSimpleExtentNdims() == 1,
            "checkpoint {}: /state attribute '{}' must be a 1-d uint64 array (an RNG state)",
            limits.file, name);
    const auto count = static_cast<std::uint64_t>(space.getSimpleExtentNpoints());
    require(count <= limits.file_bytes / 8,
            "checkpoint {}: /state attribute '{}' declares {} values, more than the file holds",
            limits.file, name, count);
    std::vector<std::uint64_t> values(static_cast<std::size_t>(count));
    if (!values.empty()) attribute.read(H5::PredType::NATIVE_UINT64, values.data());
    states.emplace(name, std::move(values));
  }
  return states;
}

// The top-level names (/state, /config, /params, ...) are opened by name, which would
// follow a soft or external link (into another file) too: every link at the root must
// be a hard one before any is opened.
void require_hard_root_links(const H5::H5File& h5, const std::string& file) {
  const H5::Group root = h5.openGroup("/");
  for (hsize_t i = 0; i < root.getNumObjs(); ++i) {
    const std::string name = root.getObjnameByIdx(i);
    H5L_info_t link;
    if (H5Lget_info(root.getId(), name.c_str(), &link, H5P_DEFAULT) < 0)
      throw H5::GroupIException("H5Lget_info", "cannot read a link");
    require(link.type == H5L_TYPE_HARD, "checkpoint {}: /{} is a soft or external link", file,
            name);
  }
}

Checkpoint read_contents(const H5::H5File& h5, WalkLimits& limits,
                         const DeclaredShapeCheck& check_shapes) {
  const std::string& file = limits.file;
  require_hard_root_links(h5, file);
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
  require(checkpoint.step >= 0 && checkpoint.tokens_seen >= 0,
          "checkpoint {}: /state step {} and tokens_seen {} must both be >= 0", file,
          checkpoint.step, checkpoint.tokens_seen);
  checkpoint.config_yaml = read_bytes_dataset(h5, kConfigDataset, limits);
  if (h5.nameExists(kTokenizerDataset))
    checkpoint.tokenizer_model = read_bytes_dataset(h5, kTokenizerDataset, limits);
  checkpoint.rng_states = read_rng_states(state, limits);

  require(has_group(h5, "params"), "checkpoint {}: no /params group", file);
  const std::vector<DeclaredDataset> params = declare_group(h5.openGroup("params"), limits);
  const std::vector<DeclaredDataset> optim = has_group(h5, "optim")
                                                 ? declare_group(h5.openGroup("optim"), limits)
                                                 : std::vector<DeclaredDataset>{};
  const std::vector<DeclaredDataset> memory = has_group(h5, "memory")
                                                  ? declare_group(h5.openGroup("memory"), limits)
                                                  : std::vector<DeclaredDataset>{};
  const std::vector<DeclaredDataset> knn_memory =
      has_group(h5, "knn_memory") ? declare_group(h5.openGroup("knn_memory"), limits)
                                  : std::vector<DeclaredDataset>{};
  if (check_shapes) {
    std::map<std::string, Shape> shapes;
    for (const DeclaredDataset& p : params) shapes.emplace(join_parts(p.path, '.'), p.shape);
    check_shapes(checkpoint.config_yaml, shapes);
  }
  // A dotted group name ("/params/a.b") would give the name of a nested one ("/params/a/b").
  const auto add = [&](std::map<std::string, Tensor>& to, const std::string& name,
                       const DeclaredDataset& d) {
    require(to.emplace(name, read_tensor(d, file)).second,
            "checkpoint {}: the name '{}' is stored twice (the second time as {})", file, name,
            d.dataset.getObjName());
  };
  for (const DeclaredDataset& p : params) add(checkpoint.params, join_parts(p.path, '.'), p);
  for (const DeclaredDataset& o : optim) {
    if (o.path.size() == 1) {  // optimizer-wide state, e.g. /optim/step
      add(checkpoint.optim, o.path.front(), o);
      continue;
    }
    const std::vector<std::string> param(o.path.begin(), o.path.end() - 1);
    add(checkpoint.optim, join_parts(param, '.') + "/" + o.path.back(), o);
  }
  for (const DeclaredDataset& m : memory) add(checkpoint.memory, join_parts(m.path, '.'), m);
  for (const DeclaredDataset& k : knn_memory)
    add(checkpoint.knn_memory, join_parts(k.path, '/'), k);
  return checkpoint;
}

// The contents of a small file, or nothing when it does not exist.
std::optional<std::string> read_small_file(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) return std::nullopt;
  return std::string(std::istreambuf_iterator<char>(in), {});
}

}  // namespace

void save_checkpoint(const fs::path& path, const Checkpoint& checkpoint) {
  capture_hdf5_errors();
  try {
    require(checkpoint.format_version == kCheckpointFormatVersion,
            "format_version {} cannot be written (this build writes version {})",
            checkpoint.format_version, kCheckpointFormatVersion);
    // The digest first, then the file, each replaced atomically: a checkpoint that is
    // in place always has its digest (a kill between the two leaves a digest without a
    // file, or a new digest beside an older file of the same name: a mismatch, so the
    // wrong bytes are never trusted).
    const std::vector<char> image = hdf5_image(path.string() + ".tmp", checkpoint);
    const std::optional<std::string> old_digest = read_small_file(digest_path(path));
    write_digest(path, image);
    try {
      replace_file(path, image);
    } catch (const UsageError&) {
      // The file at `path`, if any, is untouched: give it back its own digest.
      if (old_digest)
        replace_file(digest_path(path), *old_digest);
      else
        remove_digest(path);
      throw;
    }
  } catch (const UsageError& error) {
    fail("cannot save checkpoint {}: {}", path.string(), error.what());
  } catch (const H5::Exception& error) {
    fail("cannot save checkpoint {}: HDF5 error: {}", path.string(), hdf5_reason(error));
  }
}

Checkpoint load_checkpoint(const fs::path& path, const DeclaredShapeCheck& check_shapes) {
  capture_hdf5_errors();
  const std::string file = path.string();
  std::error_code error;
  require(fs::exists(path, error), "checkpoint {}: no such file", file);
  require(fs::is_regular_file(path, error), "checkpoint {}: not a regular file", file);
  std::string image;
  try {
    image = read_verified_file(path);
  } catch (const UsageError& digest_error) {
    fail("checkpoint {}", digest_error.what());
  }
  check_superblock(image, file);
  check_hdf5_metadata(image, file);
  try {
    const H5::H5File h5 = open_image(image);
    WalkLimits limits{file, image.size(), 0, {}};
    return read_contents(h5, limits, check_shapes);
  } catch (const H5::Exception& h5_error) {
    fail("checkpoint {}: unreadable, truncated or corrupt HDF5 file ({})", file,
         hdf5_reason(h5_error));
  }
}

}  // namespace relpos
