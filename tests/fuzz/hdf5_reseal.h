#pragma once
// The checkpoint fuzzer's resealing mode: after a mutation, every check that stands
// in front of the parser is made to pass again, as a hostile editor would do, so
// that the mutated bytes reach HDF5's metadata parser and relpos's walk of the file
// instead of being refused by a digest.
//
// reseal_checkpoint_image walks the image the way relpos writes it, with the walk the
// loader's pre-check uses (train/store/hdf5_object_walk.h: superblock version 2 or 3
// with 8-byte offsets and lengths, version 2 object headers and their continuation
// chunks, groups with their links in the header), and for contiguous datasets:
//   1. each dataset's `fnv1a64` attribute is set to the FNV-1a hash of the bytes its
//      contiguous layout message names (docs/checkpoint.md);
//   2. the Jenkins lookup3 checksum of every object header chunk ("OHDR", "OCHK") is
//      recomputed (train/store/hdf5_checksum.h), then the superblock's.
// The caller then writes the whole-file digest. Structures the walk cannot read
// (a mutated signature, an address outside the image) are left as they are: the
// parser refuses them, as it would refuse such a file.
#include <span>

namespace relpos::fuzzing {

void reseal_checkpoint_image(std::span<char> image);

}  // namespace relpos::fuzzing
