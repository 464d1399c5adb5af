#pragma once
// A check of a checkpoint image before HDF5 parses it. HDF5 1.10 trusts some of what
// its object headers say: found by tests/fuzz/fuzz_checkpoint_resealed.cpp with the
// checksums recomputed, as a hostile editor would (docs/fuzzing.md), a link info
// message naming a B-tree at a huge address crashed it with SIGSEGV in H5Gget_info, a
// malformed link message made it free an unset pointer, and an attribute message whose
// dataspace size ran past the message made it read past a heap block (H5Aexists).
#include <span>
#include <string>

namespace relpos {

// Walks the object headers reachable from the root group and the superblock extension
// (hdf5_object_walk.h) and requires, throwing a one-line UsageError
// "checkpoint <file>: ..." otherwise:
//   - base address 0 (relpos writes no other), the superblock extension and the root
//     group inside the image, and every message inside its chunk;
//   - every address HDF5 follows from them (continuation chunks, dense link and
//     attribute storage: fractal heaps, name and creation-order B-trees, hard links'
//     objects) undefined or inside the image;
//   - every link message well formed as HDF5 writes it (read_hdf5_link);
//   - every attribute message well formed: version 1 to 3, its datatype and dataspace
//     not shared, its name NUL-terminated, its name, datatype, dataspace and value
//     inside the message, the datatype an atomic class relpos writes (integer, float,
//     string, bitfield) and the dataspace's size its rank's.
// The image's superblock has passed check_superblock (hdf5_superblock.h).
void check_hdf5_metadata(std::span<const char> image, const std::string& file);

}  // namespace relpos
