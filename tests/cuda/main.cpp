// Runs the [cuda] tests when a CUDA device is usable. Otherwise prints one line
// "SKIPPED: no CUDA device (<reason>)" and exits with 77, the code that ctest's
// SKIP_RETURN_CODE turns into a visible "Skipped".
#define CATCH_CONFIG_RUNNER
#include <cuda_runtime_api.h>

#include <catch2/catch.hpp>
#include <cstdio>

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
  return Catch::Session().run(argc, argv);
}
