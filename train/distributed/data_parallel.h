#pragma once
// What each rank of a data-parallel run does with the global batch and the gradients
// (docs/distributed.md): it trains on its own rows of every batch, and the ranks then
// sum their gradients in one all-reduce of a flat buffer.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "data/batch.h"
#include "optim/parameter.h"

namespace relpos {

// Rows [rank·B/N, (rank+1)·B/N) of a (B, L) batch; B must be a multiple of N.
Batch rank_rows(const Batch& global, int rank, int world_size);

// The number of targets of a batch that are scored (not kIgnoreTarget).
std::int64_t scored_targets(const Batch& batch);

// Sums the parameters' gradients over the ranks, through one flat buffer on their device.
class GradientAllReduce {
 public:
  GradientAllReduce(const std::vector<NamedParameter>& parameters, bool deterministic);
  // Copies every gradient into the buffer (zeros where a rank has none), sums it over the
  // ranks, and copies the sums back; a parameter gets a gradient when any rank had one.
  // Returns the seconds spent in the collective itself.
  double sum(const std::vector<NamedParameter>& parameters);
  std::int64_t elements() const { return elements_; }

 private:
  bool deterministic_;
  std::int64_t elements_ = 0;  // gradient elements in the buffer
};

// An FNV-1a hash of the tensors' names and bytes (on the CPU), in map order.
std::uint64_t state_hash(const std::map<std::string, Tensor>& tensors);

// Checks that every rank holds the same state (parameters and optimizer buffers, by
// hash): a CollectiveError naming the first rank that differs from rank 0. Returns the hash.
std::uint64_t require_same_state_on_all_ranks(std::uint64_t local_hash);

}  // namespace relpos
