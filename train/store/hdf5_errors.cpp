#include "train/store/hdf5_errors.h"

#include <algorithm>

namespace relpos {
namespace {

std::string& first_hdf5_error() {
  static std::string message;
  return message;
}

herr_t keep_innermost_message(unsigned n, const H5E_error2_t* error, void* out) {
  if (n == 0 && error->desc != nullptr) *static_cast<std::string*>(out) = error->desc;
  return 0;
}

herr_t record_hdf5_error(hid_t stack, void*) {
  if (first_hdf5_error().empty())
    H5Ewalk2(stack, H5E_WALK_UPWARD, keep_innermost_message, &first_hdf5_error());
  return 0;
}

}  // namespace

void capture_hdf5_errors() {
  first_hdf5_error().clear();
  H5E_auto2_t handler = record_hdf5_error;
  H5::Exception::setAutoPrint(handler, nullptr);
}

std::string hdf5_reason(const H5::Exception& exception) {
  std::string reason = first_hdf5_error().empty() ? exception.getDetailMsg() : first_hdf5_error();
  std::replace(reason.begin(), reason.end(), '\n', ' ');
  return reason;
}

}  // namespace relpos
