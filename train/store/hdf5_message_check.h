#pragma once
// The object header messages of a checkpoint, each held against what relpos writes
// (an allow-list) before HDF5 decodes it: part of the pre-check of
// hdf5_metadata_check.h. HDF5 1.10 decodes a message's fields without checking them
// against the message's size, and allocates by some of them (a continuation chunk's
// length, a fill value's size, a compact dataset's size), so every length and size
// field it reads must be exact here.
#include <cstdint>
#include <optional>
#include <string>

#include "train/store/hdf5_object_walk.h"

namespace relpos {

// What the messages of one object header say about its dataset, if it is one.
struct Hdf5DatasetParts {
  std::optional<std::uint64_t> elements;      // dataspace message
  std::optional<std::uint64_t> element_size;  // datatype message
  std::optional<std::uint64_t> data_size;     // data layout message
};

// Why `message` of the object at `path` is refused, one line to follow
// "checkpoint <file>: " ("/state: the attribute message at byte 123 has ..."; "dataset
// /params/x is not stored contiguously ..."), or std::nullopt if it is one relpos
// writes. Fills `dataset` from a dataspace, datatype or data layout message.
std::optional<std::string> check_hdf5_message(Hdf5Bytes bytes, const Hdf5Message& message,
                                              const std::string& path, Hdf5DatasetParts& dataset);

// The name of a message type in the HDF5 file format specification ("data layout").
std::string hdf5_message_name(std::uint8_t type);

}  // namespace relpos
