#pragma once
// The safetensors format (Hugging Face), written by our own code: an 8-byte
// little-endian header length N, N bytes of JSON (padded with spaces to a multiple
// of 8), then the raw little-endian tensor bytes. The header maps each tensor's
// name to {"dtype", "shape", "data_offsets": [begin, end)} relative to the data;
// "__metadata__" holds string-to-string metadata. Layout: docs/export.md.
#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <string_view>

#include "autograd/tensor.h"

namespace relpos {

// The element type written: f32, or bf16 rounded to nearest even from f32.
enum class ExportDType { f32, bf16 };
// "F32" or "BF16", as the header names it.
std::string_view safetensors_dtype_name(ExportDType dtype);
// "f32" / "bf16" -> the type; a UsageError naming `what` and the value otherwise.
ExportDType export_dtype_from_name(std::string_view name, std::string_view what);

// The whole file's bytes. Tensors (f32 or f64, any strides) are written row-major in
// name order, converted to `dtype`; each begins on an 8-byte boundary of the data.
std::string safetensors_bytes(const std::map<std::string, Tensor>& tensors,
                              const std::map<std::string, std::string>& metadata,
                              ExportDType dtype);

// Writes safetensors_bytes to <path>.tmp, fsyncs it and renames it onto `path`; on any
// failure `path` is untouched and a UsageError names the file and the reason.
void write_safetensors(const std::filesystem::path& path,
                       const std::map<std::string, Tensor>& tensors,
                       const std::map<std::string, std::string>& metadata, ExportDType dtype);

}  // namespace relpos
