// Runs the [cuda] tests when a CUDA device is usable. Otherwise prints one line
// "SKIPPED: no CUDA device (<reason>)" and exits with 77, the code that ctest's
// SKIP_RETURN_CODE turns into a visible "Skipped".
#define CATCH_CONFIG_RUNNER
#include <cuda_runtime_api.h>

#include <catch2/catch.hpp>
#include <cstdio>

#include "autograd/cuda/cuda_backend.h"

namespace {
constexpr int kSkipped = 77;
}  // namespace

int main(int argc, char** argv) {
  int devices = 0;
  const cudaError_t status = cudaGetDeviceCount(&devices);
  if (status != cudaSuccess) {
    std::printf("SKIPPED: no CUDA device (cudaGetDeviceCount: %s, error %d)\n",
                cudaGetErrorString(status), static_cast<int>(status));
    return kSkipped;
  }
  if (devices == 0) {
    std::printf("SKIPPED: no CUDA device (cudaGetDeviceCount found 0 devices)\n");
    return kSkipped;
  }
  const int failed = Catch::Session().run(argc, argv);
  // Every tensor is gone by now: with the allocator's cached blocks given back, what
  // compute-sanitizer's leak check still reports is the process-lifetime cuBLAS handle
  // and its workspace (docs/cuda.md), or a real leak.
  relpos::cuda_backend().release_cached_memory();
  return failed;
}
