// The CUDA backend instance, its optional kernels and device-wide synchronisation.
#include "autograd/cuda/cuda_backend.h"

#include <cuda_runtime_api.h>

#include "autograd/cuda/check.h"
#include "autograd/cuda/device_select.h"
#include "autograd/error.h"

namespace relpos {
namespace {

// A CUDA build on a machine without a usable GPU: a user error, said plainly.
void require_usable_device() {
  int devices = 0;
  const cudaError_t status = cudaGetDeviceCount(&devices);
  if (status != cudaSuccess) {
    cudaGetLastError();  // clear it
    fail("device 'cuda' requested, but no CUDA device is usable ({})", cudaGetErrorString(status));
  }
  require(devices > 0, "device 'cuda' requested, but no CUDA device was found");
}

}  // namespace

CudaBackend& cuda_backend() {
  static CudaBackend instance;
  // Checked on the first call; a failed check throws and is repeated next time.
  static const bool device_checked = (require_usable_device(), true);
  (void)device_checked;
  return instance;
}

bool CudaBackend::supports(Kernel kernel) const {
  switch (kernel) {
    case Kernel::adam_update:
      return true;
    case Kernel::flash_attention:  // scaled_attention takes the fused path instead
    case Kernel::rotary:           // the op composes the rotation from elementwise kernels
    case Kernel::sgd_update:       // the optimizer is refused when it is built
      return false;
  }
  return false;
}

void CudaBackend::synchronize() { RELPOS_CUDA_CHECK(cudaDeviceSynchronize()); }

void select_cuda_device(int slot) {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) == cudaSuccess && devices > 0) cudaSetDevice(slot % devices);
}

}  // namespace relpos
