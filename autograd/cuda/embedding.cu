// Embedding gather and its scatter-add backward, on the GPU. Indices are
// validated by the op (ops/embedding.cpp). The backward uses no atomics: the
// positions 0..count-1 are sorted by index with a stable radix sort (cub), so
// each table row finds the positions that use it in increasing order, and one
// thread per (row, column) adds them in that order, exactly as the CPU does.
#include <cstdint>
#include <cub/device/device_radix_sort.cuh>
#include <limits>

#include "autograd/cuda/check.h"
#include "autograd/cuda/cuda_backend.h"
#include "autograd/cuda/launch.cuh"
#include "autograd/error.h"

namespace relpos {
namespace {

template <class T>
__global__ void embedding_kernel(const T* table, const std::int64_t* indices, T* out,
                                 std::int64_t count, std::int64_t dim) {
  for (std::int64_t e = cuda::thread_index(); e < count * dim; e += cuda::thread_count()) {
    const std::int64_t i = e / dim, j = e % dim;
    out[e] = table[indices[i] * dim + j];
  }
}

__global__ void iota_kernel(std::int64_t* out, std::int64_t count) {
  for (std::int64_t i = cuda::thread_index(); i < count; i += cuda::thread_count()) out[i] = i;
}

// keys (count): the sorted indices. begin[v] / end[v] (vocab, zero-filled)
// become the range of sorted positions whose index is v; each is written by
// the one position where a run of equal keys starts or ends.
__global__ void segment_bounds_kernel(const std::uint64_t* keys, std::int64_t count,
                                      std::int64_t* begin, std::int64_t* end) {
  for (std::int64_t p = cuda::thread_index(); p < count; p += cuda::thread_count()) {
    const std::uint64_t key = keys[p];
    if (p == 0 || keys[p - 1] != key) begin[key] = p;
    if (p == count - 1 || keys[p + 1] != key) end[key] = p + 1;
  }
}

// grad_table[v, j] = sum over sorted positions s in [begin[v], end[v]) of
// grad_out[position[s], j], added in order starting from 0.
template <class T>
__global__ void gather_sums_kernel(const T* grad_out, const std::int64_t* positions,
                                   const std::int64_t* begin, const std::int64_t* end,
                                   T* grad_table, std::int64_t vocab, std::int64_t dim) {
  for (std::int64_t e = cuda::thread_index(); e < vocab * dim; e += cuda::thread_count()) {
    const std::int64_t v = e / dim, j = e % dim;
    T acc = T(0);
    for (std::int64_t s = begin[v]; s < end[v]; ++s) acc += grad_out[positions[s] * dim + j];
    grad_table[e] = acc;
  }
}

// Bits that hold every index below vocab.
int key_bits(std::int64_t vocab) {
  int bits = 1;
  while (bits < 63 && (std::int64_t{1} << bits) < vocab) ++bits;
  return bits;
}

// sorted_positions (count) = 0..count-1 stably sorted by indices; sorted_keys
// (count) = the indices in that order.
void sort_positions_by_index(const Tensor& indices, std::int64_t vocab, const Tensor& sorted_keys,
                             const Tensor& sorted_positions) {
  const std::int64_t count = indices.numel();
  require(count <= std::numeric_limits<int>::max(),
          "CUDA embedding backward: {} indices exceed the sort's 32-bit count", count);
  Tensor positions = Tensor::empty({count}, DType::i64, Device::cuda);  // (count)
  iota_kernel<<<cuda::blocks_for(count), cuda::kThreads>>>(positions.data<std::int64_t>(), count);
  RELPOS_CUDA_CHECK_LAUNCH("iota_kernel");
  // Indices are validated non-negative, so their bits sort as unsigned keys.
  const auto* keys_in = reinterpret_cast<const std::uint64_t*>(indices.data<std::int64_t>());
  auto* keys_out = reinterpret_cast<std::uint64_t*>(sorted_keys.data<std::int64_t>());
  const int items = static_cast<int>(count), end_bit = key_bits(vocab);
  std::size_t temp_bytes = 0;
  RELPOS_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(
      nullptr, temp_bytes, keys_in, keys_out, positions.data<std::int64_t>(),
      sorted_positions.data<std::int64_t>(), items, 0, end_bit));
  Tensor temp = Tensor::empty({static_cast<std::int64_t>(temp_bytes)}, DType::u8, Device::cuda);
  RELPOS_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(
      temp.raw_data(), temp_bytes, keys_in, keys_out, positions.data<std::int64_t>(),
      sorted_positions.data<std::int64_t>(), items, 0, end_bit));
}

}  // namespace

void CudaBackend::embedding(const Tensor& table, const Tensor& indices, const Tensor& out) {
  const std::int64_t count = indices.numel();
  const std::int64_t dim = table.shape().back();
  if (count * dim == 0) return;
  dispatch_floating(table.dtype(), [&](auto zero) {
    using T = decltype(zero);
    embedding_kernel<T><<<cuda::blocks_for(count * dim), cuda::kThreads>>>(
        table.data<T>(), indices.data<std::int64_t>(), out.data<T>(), count, dim);
    RELPOS_CUDA_CHECK_LAUNCH("embedding_kernel");
  });
}

void CudaBackend::embedding_backward(const Tensor& grad_out, const Tensor& indices,
                                     const Tensor& grad_table) {
  const std::int64_t count = indices.numel();
  const std::int64_t vocab = grad_table.shape().front();
  const std::int64_t dim = grad_table.shape().back();
  if (vocab * dim == 0) return;
  Tensor bounds = Tensor::empty({2, vocab}, DType::i64, Device::cuda);  // (2, vocab): begin, end
  fill(bounds, 0.0);
  std::int64_t* begin = bounds.data<std::int64_t>();
  std::int64_t* end = begin + vocab;
  Tensor sorted_keys = Tensor::empty({count}, DType::i64, Device::cuda);       // (count)
  Tensor sorted_positions = Tensor::empty({count}, DType::i64, Device::cuda);  // (count)
  if (count > 0) {
    sort_positions_by_index(indices, vocab, sorted_keys, sorted_positions);
    segment_bounds_kernel<<<cuda::blocks_for(count), cuda::kThreads>>>(
        reinterpret_cast<const std::uint64_t*>(sorted_keys.data<std::int64_t>()), count, begin,
        end);
    RELPOS_CUDA_CHECK_LAUNCH("segment_bounds_kernel");
  }
  dispatch_floating(grad_table.dtype(), [&](auto zero) {
    using T = decltype(zero);
    gather_sums_kernel<T><<<cuda::blocks_for(vocab * dim), cuda::kThreads>>>(
        grad_out.data<T>(), sorted_positions.data<std::int64_t>(), begin, end, grad_table.data<T>(),
        vocab, dim);
    RELPOS_CUDA_CHECK_LAUNCH("gather_sums_kernel");
  });
}

}  // namespace relpos
