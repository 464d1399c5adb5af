// The one place where a device is mapped to its backend.
#include "autograd/backend.h"

#include "autograd/cpu/cpu_backend.h"
#include "autograd/error.h"
#if RELPOS_HAVE_CUDA
#include "autograd/cuda/cuda_backend.h"
#endif

namespace relpos {

CpuBackend& cpu_backend() {
  static CpuBackend instance;
  return instance;
}

Backend& backend_for(Device device) {
  if (device == Device::cpu) return cpu_backend();
#if RELPOS_HAVE_CUDA
  return cuda_backend();
#else
  fail("device 'cuda' requested, but this relpos was built without CUDA (-DRELPOS_CUDA=OFF)");
#endif
}

Allocator& allocator_for(Device device) { return backend_for(device).allocator(); }

}  // namespace relpos
