#pragma once
// A check of a checkpoint image before HDF5 parses it: every file address that the
// object headers reachable from the root hold for HDF5 to follow lies inside the image.
// HDF5 1.10 follows some without checking them against the end of the file: a group
// whose link info message names a B-tree at a huge address (checksums recomputed, as a
// hostile editor would) crashed it with SIGSEGV inside H5Gget_info (found by
// tests/fuzz/fuzz_checkpoint_resealed.cpp, docs/fuzzing.md).
#include <span>
#include <string>

namespace relpos {

// Walks the version 2 object headers from the root group (and the superblock
// extension), their continuation chunks and the hard links of compact groups, and
// requires the address of every continuation chunk, dense link storage and dense
// attribute storage (fractal heap, name and creation-order B-trees) to be undefined or
// inside the image. Throws a one-line UsageError "checkpoint <file>: ..." otherwise.
// The image's superblock has passed check_superblock (hdf5_superblock.h).
void check_hdf5_addresses(std::span<const char> image, const std::string& file);

}  // namespace relpos
