#pragma once
// Turns CUDA runtime and cuBLAS status codes into relpos::InternalError
// exceptions that name the call, the error and the file:line of the call:
//   RELPOS_CUDA_CHECK(cudaMemcpy(dst, src, bytes, cudaMemcpyDefault));
//   kernel<<<grid, block>>>(...);
//   RELPOS_CUDA_CHECK_LAUNCH("kernel");
// Kernels run asynchronously: a fault inside one is reported by a later call
// (run with CUDA_LAUNCH_BLOCKING=1 to pin it on the launch).
#include <cublas_v2.h>
#include <cuda_runtime_api.h>

namespace relpos::cuda {

[[noreturn]] void throw_cuda_error(cudaError_t status, const char* call, const char* file,
                                   int line);
[[noreturn]] void throw_cublas_error(cublasStatus_t status, const char* call, const char* file,
                                     int line);

inline void check(cudaError_t status, const char* call, const char* file, int line) {
  if (status != cudaSuccess) throw_cuda_error(status, call, file, line);
}

inline void check(cublasStatus_t status, const char* call, const char* file, int line) {
  if (status != CUBLAS_STATUS_SUCCESS) throw_cublas_error(status, call, file, line);
}

}  // namespace relpos::cuda

#define RELPOS_CUDA_CHECK(call) ::relpos::cuda::check((call), #call, __FILE__, __LINE__)
#define RELPOS_CUDA_CHECK_LAUNCH(kernel_name) \
  ::relpos::cuda::check(cudaGetLastError(), "launch of " kernel_name, __FILE__, __LINE__)
