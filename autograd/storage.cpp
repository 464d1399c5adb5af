#include "autograd/storage.h"

#include "autograd/allocator.h"

namespace relpos {

Storage::Storage(std::size_t bytes, Device device) : bytes_(bytes), device_(device) {
  data_ = allocator_for(device).allocate(bytes);
}

Storage::~Storage() { allocator_for(device_).deallocate(data_, bytes_); }

}  // namespace relpos
