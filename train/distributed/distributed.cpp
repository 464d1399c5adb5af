#include "train/distributed/distributed.h"

#include <fmt/format.h>

#include <cstdlib>
#include <vector>

#ifdef RELPOS_HAVE_MPI
#include <mpi.h>
#endif
#ifdef RELPOS_HAVE_NCCL
#include <nccl.h>
#endif

#include "autograd/device_control.h"

namespace relpos {

#ifdef RELPOS_HAVE_MPI

namespace {

// True when a launcher (mpirun, srun) started this process: Open MPI, PMI or PMIx set these.
bool launched_by_mpi() {
  for (const char* variable : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK"})
    if (std::getenv(variable) != nullptr) return true;
  return false;
}

bool mpi_running() {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  return initialized != 0 && finalized == 0;
}

template <class T>
MPI_Datatype mpi_type();
template <>
MPI_Datatype mpi_type<float>() {
  return MPI_FLOAT;
}
template <>
MPI_Datatype mpi_type<double>() {
  return MPI_DOUBLE;
}

// Rank 0 adds the ranks' buffers in rank order, then every rank receives the sum.
template <class T>
void ordered_sum(std::span<T> values) {
  const int n = static_cast<int>(values.size());
  std::vector<T> gathered(is_root() ? values.size() * static_cast<std::size_t>(world_size()) : 0);
  MPI_Gather(values.data(), n, mpi_type<T>(), gathered.data(), n, mpi_type<T>(), 0, MPI_COMM_WORLD);
  if (is_root()) {
    for (std::size_t i = 0; i < values.size(); ++i) {
      T sum = gathered[i];
      for (int r = 1; r < world_size(); ++r)
        sum += gathered[static_cast<std::size_t>(r) * values.size() + i];
      values[i] = sum;
    }
  }
  MPI_Bcast(values.data(), n, mpi_type<T>(), 0, MPI_COMM_WORLD);
}

template <class T>
void sum_over_ranks(std::span<T> values, bool deterministic) {
  if (world_size() == 1 || values.empty()) return;
  if (deterministic) return ordered_sum(values);
  MPI_Allreduce(MPI_IN_PLACE, values.data(), static_cast<int>(values.size()), mpi_type<T>(),
                MPI_SUM, MPI_COMM_WORLD);
}

}  // namespace

DistributedScope::DistributedScope(int& argc, char**& argv) {
  if (!launched_by_mpi()) return;  // one process without a launcher: no MPI at all
  MPI_Init(&argc, &argv);
  // A rank that fails mid-run ends the job with MPI_Abort (main.cpp), never waits alone.
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
#ifdef RELPOS_HAVE_NCCL
  // One GPU per rank: the ranks of one machine take its GPUs in turn, before any CUDA work.
  if (world_size() > 1) {
    MPI_Comm local;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &local);
    int local_rank = 0;
    MPI_Comm_rank(local, &local_rank);
    MPI_Comm_free(&local);
    select_gpu(local_rank);
  }
#endif
}
DistributedScope::~DistributedScope() {
  if (mpi_running()) MPI_Finalize();
}

int rank() {
  if (!mpi_running()) return 0;
  int r = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}
int world_size() {
  if (!mpi_running()) return 1;
  int n = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  return n;
}
bool built_with_mpi() { return true; }

void all_reduce_sum(std::span<float> values, bool deterministic) {
  sum_over_ranks(values, deterministic);
}
void all_reduce_sum(std::span<double> values, bool deterministic) {
  sum_over_ranks(values, deterministic);
}

void broadcast(std::span<char> bytes, int root) {
  if (world_size() == 1) return;
  MPI_Bcast(bytes.data(), static_cast<int>(bytes.size()), MPI_CHAR, root, MPI_COMM_WORLD);
}

void barrier() {
  if (world_size() > 1) MPI_Barrier(MPI_COMM_WORLD);
}

void abort_job(int code) {
  if (mpi_running() && world_size() > 1) MPI_Abort(MPI_COMM_WORLD, code);
  std::exit(code);
}

std::optional<std::string> agree_on_error(const std::optional<std::string>& local) {
  // The lowest failing rank (world_size() when none failed) tells its message to all.
  int mine = local ? rank() : world_size(), lowest = 0;
  MPI_Allreduce(&mine, &lowest, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (lowest == world_size()) return std::nullopt;
  int length = rank() == lowest ? static_cast<int>(local->size()) : 0;
  MPI_Bcast(&length, 1, MPI_INT, lowest, MPI_COMM_WORLD);
  std::string message =
      rank() == lowest ? *local : std::string(static_cast<std::size_t>(length), ' ');
  MPI_Bcast(message.data(), length, MPI_CHAR, lowest, MPI_COMM_WORLD);
  return lowest == 0 ? message : fmt::format("{} (on rank {})", message, lowest);
}

#else  // one process: every collective is the identity

DistributedScope::DistributedScope(int&, char**&) {}
DistributedScope::~DistributedScope() = default;
int rank() { return 0; }
int world_size() { return 1; }
bool built_with_mpi() { return false; }
void all_reduce_sum(std::span<float>, bool) {}
void all_reduce_sum(std::span<double>, bool) {}
void broadcast(std::span<char>, int) {}
void barrier() {}
void abort_job(int code) { std::exit(code); }
std::optional<std::string> agree_on_error(const std::optional<std::string>& local) { return local; }

#endif

void require_single_rank(const std::string& command) {
  if (world_size() > 1)
    throw CollectiveError(
        fmt::format("{} runs in one process; launch it without mpirun (it was started on {} ranks)",
                    command, world_size()));
}

#ifdef RELPOS_HAVE_NCCL

namespace {

void check_nccl(ncclResult_t status, const char* what) {
  if (status != ncclSuccess)
    throw InternalError(fmt::format("{}: {}", what, ncclGetErrorString(status)));
}

// One communicator over all ranks, one GPU per rank: rank 0 makes the id, MPI carries it.
ncclComm_t communicator() {
  static ncclComm_t comm = [] {
    ncclUniqueId id{};
    if (is_root()) check_nccl(ncclGetUniqueId(&id), "ncclGetUniqueId");
    broadcast(std::span<char>(reinterpret_cast<char*>(&id), sizeof(id)), 0);
    ncclComm_t c = nullptr;
    check_nccl(ncclCommInitRank(&c, world_size(), id, rank()), "ncclCommInitRank");
    return c;
  }();
  return comm;
}

}  // namespace

bool built_with_nccl() { return true; }

void all_reduce_sum_cuda(const Tensor& flat) {
  if (world_size() == 1) return;
  // The gradients were written by kernels on any stream: wait for them, reduce on the
  // default stream, and wait again so the copies back see the sum.
  synchronize(Device::cuda);
  check_nccl(ncclAllReduce(flat.raw_data(), flat.raw_data(), static_cast<std::size_t>(flat.numel()),
                           ncclFloat32, ncclSum, communicator(), nullptr),
             "ncclAllReduce");
  synchronize(Device::cuda);
}

#else

bool built_with_nccl() { return false; }

void all_reduce_sum_cuda(const Tensor&) {
  if (world_size() == 1) return;
  throw CollectiveError(
      "train.device: cuda on several MPI ranks needs NCCL, and this relpos was built without it "
      "(install NCCL and rebuild with -DRELPOS_MPI=ON and CUDA)");
}

#endif

}  // namespace relpos
