#pragma once
// A check of a checkpoint image before HDF5 parses it. HDF5 1.10 trusts some of what
// its object headers say: found by tests/fuzz/fuzz_checkpoint_resealed.cpp with the
// checksums recomputed, as a hostile editor would (docs/fuzzing.md), a link info
// message naming a B-tree at a huge address crashed it with SIGSEGV in H5Gget_info, a
// malformed link message made it free an unset pointer, an attribute message whose
// dataspace size ran past the message made it read past a heap block (H5Aexists), and
// an 8-byte continuation message made it read a chunk length from the next message
// and allocate that many bytes (H5C_protect).
#include <span>
#include <string>

namespace relpos {

// An allow-list: the image must hold only what relpos writes, so that HDF5 never
// decodes anything else. Requires, throwing a one-line UsageError
// "checkpoint <file>: ..." otherwise:
//   - a version 2 superblock with 8-byte addresses, no flags, base address 0, no
//     extension, its end-of-file address the image's size and the root group inside;
//   - every object header reachable from the root through hard links
//     (hdf5_object_walk.h) a version 2 header inside the image, with the flags relpos's
//     HDF5 writes, every message inside its chunk, every continuation chunk read and
//     every chunk's checksum right (HDF5 1.10.8 leaks an object header whose checksum it
//     finds wrong);
//   - every message one of the types relpos writes (null, dataspace, link info,
//     datatype, fill value, link, data layout, group info, attribute, continuation,
//     attribute info), unshared, each exactly as long as its fields
//     (hdf5_message_check.h): hard links only, no dense link or attribute storage,
//     contiguous datasets whose data lie inside the image and are exactly as long as
//     their dataspace and datatype say, the five datatypes relpos writes.
// The image's superblock has passed check_superblock (hdf5_superblock.h).
void check_hdf5_metadata(std::span<const char> image, const std::string& file);

}  // namespace relpos
