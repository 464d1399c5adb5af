// Formats CUDA and cuBLAS failures as one line: where, which call, what error.
#include "autograd/cuda/check.h"

#include <fmt/format.h>

#include <string_view>

#include "autograd/error.h"

namespace relpos::cuda {
namespace {

// The part of a source path from the project's top folder on, e.g.
// "/home/x/relpos/autograd/cuda/memory.cu" -> "autograd/cuda/memory.cu".
std::string_view project_path(std::string_view file) {
  for (std::string_view top : {"/autograd/", "/tests/", "/layers/", "/train/"}) {
    const auto at = file.rfind(top);
    if (at != std::string_view::npos) return file.substr(at + 1);
  }
  return file;
}

}  // namespace

void throw_cuda_error(cudaError_t status, const char* call, const char* file, int line) {
  // Clears a non-sticky error so that the next launch check does not report it again.
  cudaGetLastError();
  throw InternalError(fmt::format("CUDA error at {}:{}: {} failed: {} ({})", project_path(file),
                                  line, call, cudaGetErrorString(status),
                                  cudaGetErrorName(status)));
}

void throw_cublas_error(cublasStatus_t status, const char* call, const char* file, int line) {
  throw InternalError(fmt::format("cuBLAS error at {}:{}: {} failed: {} ({})", project_path(file),
                                  line, call, cublasGetStatusString(status),
                                  cublasGetStatusName(status)));
}

}  // namespace relpos::cuda
