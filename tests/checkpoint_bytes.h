#pragma once
// Changing a checkpoint's bytes on purpose: where its HDF5 structures lie, flipping one
// byte, and rewriting the digest file so that the change reaches the HDF5 parser.
#include <H5Cpp.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "tests/test_files.h"
#include "train/store/file_digest.h"

namespace relpos::testing {

// Rewrites <file>.digest to match the file's current bytes: a change made on purpose
// (or by a hostile writer) then reaches the HDF5 parser and the per-dataset digests.
inline void redigest(const std::filesystem::path& file) { write_digest(file, slurp(file)); }

// XORs the byte at `offset` with 0x55.
inline void flip_byte(const std::filesystem::path& file, std::uint64_t offset) {
  std::fstream f(file, std::ios::binary | std::ios::in | std::ios::out);
  f.seekg(static_cast<std::streamoff>(offset));
  const char byte = static_cast<char>(f.get() ^ 0x55);
  f.seekp(static_cast<std::streamoff>(offset));
  f.put(byte);
}

// Where a contiguous dataset's bytes lie in the file.
inline haddr_t data_offset(const std::filesystem::path& file, const std::string& dataset) {
  const H5::H5File h5(file.string(), H5F_ACC_RDONLY);
  return H5Dget_offset(h5.openDataSet(dataset).getId());
}

// Bytes [begin, end) of the file that hold one structure.
struct Hdf5Region {
  std::string what;
  std::uint64_t begin, end;
};

namespace detail {

inline herr_t add_object_regions(hid_t root, const char* name, const H5O_info_t* info,
                                 void* regions) {
  auto& out = *static_cast<std::vector<Hdf5Region>*>(regions);
  const std::string path = std::string("/") + (std::string(name) == "." ? "" : name);
  out.push_back({"object header of " + path, info->addr, info->addr + info->hdr.space.total});
  if (info->type != H5O_TYPE_DATASET) return 0;
  const hid_t dataset = H5Dopen2(root, name, H5P_DEFAULT);
  const haddr_t at = H5Dget_offset(dataset);
  const hsize_t size = H5Dget_storage_size(dataset);
  H5Dclose(dataset);
  if (at != HADDR_UNDEF && size > 0) out.push_back({"data of " + path, at, at + size});
  return 0;
}

}  // namespace detail

// Every structure of an HDF5 file in file order: the superblock, each object's header
// (groups and datasets, with their attributes), each dataset's data, and the bytes
// between them (the groups' B-trees and name heaps, free space), named by their neighbours.
inline std::vector<Hdf5Region> hdf5_regions(const std::filesystem::path& file) {
  std::vector<Hdf5Region> known;
  {
    const H5::H5File h5(file.string(), H5F_ACC_RDONLY);
    H5F_info2_t info;
    H5Fget_info2(h5.getId(), &info);
    known.push_back({"superblock", 0, info.super.super_size});
    H5Ovisit2(h5.getId(), H5_INDEX_NAME, H5_ITER_INC, detail::add_object_regions, &known,
              H5O_INFO_BASIC | H5O_INFO_HDR);
  }
  std::sort(known.begin(), known.end(),
            [](const Hdf5Region& a, const Hdf5Region& b) { return a.begin < b.begin; });
  std::vector<Hdf5Region> all;
  std::uint64_t covered = 0;
  std::string before = "the start";
  const auto add_gap = [&](std::uint64_t until, const std::string& after) {
    if (until > covered) all.push_back({"between " + before + " and " + after, covered, until});
  };
  for (const Hdf5Region& r : known) {
    add_gap(r.begin, r.what);
    all.push_back(r);
    covered = std::max(covered, r.end);
    before = r.what;
  }
  add_gap(std::filesystem::file_size(file), "the end");
  return all;
}

}  // namespace relpos::testing
