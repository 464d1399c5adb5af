#include "train/store/safetensors.h"

#include <bit>
#include <cstring>
#include <nlohmann/json.hpp>
#include <span>
#include <vector>

#include "autograd/cpu/bf16_round.h"
#include "autograd/error.h"
#include "train/store/atomic_file.h"

namespace relpos {
namespace {

static_assert(std::endian::native == std::endian::little,
              "safetensors data are little-endian; this writer copies native bytes");

constexpr std::size_t kAlignment = 8;

std::size_t element_bytes(ExportDType dtype) { return dtype == ExportDType::f32 ? 4 : 2; }

std::size_t aligned(std::size_t n) { return (n + kAlignment - 1) / kAlignment * kAlignment; }

// The tensor's elements, row-major, as `dtype` bytes.
std::string encode(const Tensor& tensor, ExportDType dtype) {
  const Tensor values = tensor.to(DType::f32).contiguous();  // f32 (or f64) -> f32, row-major
  const auto n = static_cast<std::size_t>(values.numel());
  const float* data = values.data<float>();
  std::string bytes(n * element_bytes(dtype), '\0');
  if (dtype == ExportDType::f32) {
    if (n > 0) std::memcpy(bytes.data(), data, n * sizeof(float));
    return bytes;
  }
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint16_t h = cpu::to_bf16(data[i]);
    std::memcpy(bytes.data() + 2 * i, &h, sizeof h);
  }
  return bytes;
}

}  // namespace

std::string_view safetensors_dtype_name(ExportDType dtype) {
  return dtype == ExportDType::f32 ? "F32" : "BF16";
}

ExportDType export_dtype_from_name(std::string_view name, std::string_view what) {
  if (name == "f32") return ExportDType::f32;
  if (name == "bf16") return ExportDType::bf16;
  fail("{}: expected f32 or bf16, got '{}'", what, name);
}

std::string safetensors_bytes(const std::map<std::string, Tensor>& tensors,
                              const std::map<std::string, std::string>& metadata,
                              ExportDType dtype) {
  nlohmann::json header = nlohmann::json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  std::vector<std::string> blobs;
  std::size_t offset = 0;
  for (const auto& [name, tensor] : tensors) {  // std::map: name order
    require(name != "__metadata__" && !name.empty(), "safetensors: a tensor may not be named '{}'",
            name);
    require(tensor.dtype() == DType::f32 || tensor.dtype() == DType::f64,
            "safetensors: tensor '{}' is {}, expected a floating-point tensor", name,
            tensor.describe());
    blobs.push_back(encode(tensor, dtype));
    const std::size_t begin = aligned(offset), end = begin + blobs.back().size();
    header[name] = {{"dtype", safetensors_dtype_name(dtype)},
                    {"shape", tensor.shape()},
                    {"data_offsets", {begin, end}}};
    offset = end;
  }
  std::string json = header.dump();
  json.resize(aligned(json.size()), ' ');  // the data then starts on an 8-byte boundary
  const std::uint64_t length = json.size();
  std::string file(sizeof length, '\0');
  std::memcpy(file.data(), &length, sizeof length);
  file += json;
  const std::size_t data_start = file.size();
  file.reserve(data_start + offset);
  for (const std::string& blob : blobs) {
    file.resize(data_start + aligned(file.size() - data_start), '\0');
    file += blob;
  }
  return file;
}

void write_safetensors(const std::filesystem::path& path,
                       const std::map<std::string, Tensor>& tensors,
                       const std::map<std::string, std::string>& metadata, ExportDType dtype) {
  const std::string bytes = safetensors_bytes(tensors, metadata, dtype);
  try {
    replace_file(path, std::span<const char>(bytes.data(), bytes.size()));
  } catch (const UsageError& e) {
    fail("cannot write {}: {}", path.string(), e.what());
  }
}

}  // namespace relpos
