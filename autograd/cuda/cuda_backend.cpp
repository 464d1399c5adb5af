// The CUDA backend instance and device-wide synchronisation.
#include "autograd/cuda/cuda_backend.h"

#include <cuda_runtime_api.h>

#include "autograd/cuda/check.h"

namespace relpos {

CudaBackend& cuda_backend() {
  static CudaBackend instance;
  return instance;
}

void CudaBackend::synchronize() { RELPOS_CUDA_CHECK(cudaDeviceSynchronize()); }

}  // namespace relpos
