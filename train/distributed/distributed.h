#pragma once
// The ranks of a data-parallel job and the collectives the trainer needs. Every use
// of MPI and NCCL in relpos lives in distributed.cpp. Built without MPI (RELPOS_MPI
// OFF, or not found), or launched without mpirun, this is one rank: every
// collective returns at once and leaves its buffer alone.
#include <optional>
#include <span>
#include <string>

#include "autograd/error.h"
#include "autograd/tensor.h"

namespace relpos {

// Initialises MPI (when built with it and started by a launcher such as mpirun or srun)
// for the life of main() and finalises it; without a launcher relpos is one process.
class DistributedScope {
 public:
  DistributedScope(int& argc, char**& argv);
  ~DistributedScope();
  DistributedScope(const DistributedScope&) = delete;
  DistributedScope& operator=(const DistributedScope&) = delete;
};

int rank();
int world_size();
inline bool is_root() { return rank() == 0; }
bool built_with_mpi();
bool built_with_nccl();

// A UsageError raised alike on every rank (after an agreement or from globally reduced
// values): main prints it once, on rank 0, and every rank exits with code 2.
class CollectiveError : public UsageError {
 public:
  using UsageError::UsageError;
};

// Throws a CollectiveError: for a failure that every rank reaches alike.
template <class... Args>
[[noreturn]] void fail_everywhere(fmt::format_string<Args...> format, Args&&... args) {
  throw CollectiveError(fmt::format(format, std::forward<Args>(args)...));
}

// Runs `body` on every rank; when it throws a UsageError on any rank, every rank throws
// a CollectiveError with the message of the lowest such rank. Never hangs: the ranks
// always meet in the agreement, whatever `body` did.
template <class Body>
void run_collectively(Body&& body);

// Sums `values` over the ranks in place, the same result on every rank. With
// `deterministic`, rank 0 gathers every rank's buffer and adds them in rank order, then
// broadcasts the sum: bit-identical from run to run for a fixed rank count.
void all_reduce_sum(std::span<float> values, bool deterministic);
void all_reduce_sum(std::span<double> values, bool deterministic);
// Sums a contiguous f32 CUDA tensor over the ranks in place through NCCL (one GPU per
// rank, the communicator bootstrapped over MPI on first use). A UsageError when relpos
// was built without NCCL.
void all_reduce_sum_cuda(const Tensor& flat);
void broadcast(std::span<char> bytes, int root);
void barrier();
// Ends every rank of the job with `code` (MPI_Abort), or this process without MPI.
[[noreturn]] void abort_job(int code);

// Refused under mpirun with more than one rank: a CollectiveError naming `command`.
void require_single_rank(const std::string& command);

// ---- implementation of run_collectively ----
// Every rank passes its error (if any); every rank gets the lowest failing rank's error.
std::optional<std::string> agree_on_error(const std::optional<std::string>& local);

template <class Body>
void run_collectively(Body&& body) {
  std::optional<std::string> error;
  try {
    body();
  } catch (const CollectiveError&) {
    throw;  // raised alike on every rank already
  } catch (const UsageError& e) {
    if (world_size() == 1) throw;
    error = e.what();
  }
  if (world_size() == 1) return;
  if (auto agreed = agree_on_error(error)) throw CollectiveError(*agreed);
}

}  // namespace relpos
