#pragma once
// HDF5's failures as one line: HDF5 reports a failure through its "auto" error
// handler, before the C++ wrapper throws and before unwinding closes objects (which
// clears the error stack). capture_hdf5_errors installs a handler that prints
// nothing and keeps the most specific message of the first failure since, e.g.
// "truncated file: eof = ...", which hdf5_reason then gives.
#include <H5Cpp.h>

#include <string>

namespace relpos {

// Starts capturing (forgets any earlier failure); call before each HDF5 operation.
void capture_hdf5_errors();

// The captured message of the first failure (else the exception's own), on one line:
// HDF5's file-driver messages span several lines.
std::string hdf5_reason(const H5::Exception& exception);

}  // namespace relpos
