// Copies (strided, with dtype conversion, host<->device in either direction)
// and fills on the GPU.
#include <array>
#include <cstdint>

#include "autograd/cuda/check.h"
#include "autograd/cuda/cuda_backend.h"
#include "autograd/cuda/launch.cuh"
#include "autograd/cuda/strided.cuh"

namespace relpos {
namespace {

using cuda::StridedIndexer;

template <class Fn>
void dispatch_any(DType t, Fn&& fn) {
  switch (t) {
    case DType::f32:
      fn(float{});
      break;
    case DType::f64:
      fn(double{});
      break;
    case DType::i64:
      fn(std::int64_t{});
      break;
    default:
      fn(std::uint8_t{});
      break;
  }
}

template <class D, class S>
__global__ void copy_kernel(D* dst, const S* src, std::int64_t n, StridedIndexer<2> indexer) {
  for (std::int64_t i = cuda::thread_index(); i < n; i += cuda::thread_count()) {
    std::int64_t offset[2];
    indexer.offsets(i, offset);
    dst[offset[0]] = static_cast<D>(src[offset[1]]);
  }
}

template <class T>
__global__ void fill_kernel(T* dst, std::int64_t n, T value) {
  for (std::int64_t i = cuda::thread_index(); i < n; i += cuda::thread_count()) dst[i] = value;
}

std::size_t bytes_of(const Tensor& t) {
  return static_cast<std::size_t>(t.numel()) * element_size(t.dtype());
}

// dst = src with both on the device.
void copy_on_device(const Tensor& dst, const Tensor& src) {
  if (dst.dtype() == src.dtype() && dst.is_contiguous() && src.is_contiguous()) {
    RELPOS_CUDA_CHECK(
        cudaMemcpyAsync(dst.raw_data(), src.raw_data(), bytes_of(dst), cudaMemcpyDeviceToDevice));
    return;
  }
  const auto indexer = cuda::make_indexer<2>(dst.shape(), {&dst.strides(), &src.strides()});
  const std::int64_t n = dst.numel();
  dispatch_any(dst.dtype(), [&](auto d) {
    dispatch_any(src.dtype(), [&](auto s) {
      using D = decltype(d);
      using S = decltype(s);
      copy_kernel<D, S><<<cuda::blocks_for(n), cuda::kThreads>>>(
          static_cast<D*>(dst.raw_data()), static_cast<const S*>(src.raw_data()), n, indexer);
      RELPOS_CUDA_CHECK_LAUNCH("copy_kernel");
    });
  });
}

// Host -> device: the bytes travel in src's dtype and contiguous layout; the
// conversion to dst's dtype and strides happens on the device.
void upload(const Tensor& dst, const Tensor& src) {
  const Tensor host = src.contiguous();
  const bool direct = dst.dtype() == src.dtype() && dst.is_contiguous();
  const Tensor staging = direct ? dst : Tensor::empty(src.shape(), src.dtype(), Device::cuda);
  RELPOS_CUDA_CHECK(
      cudaMemcpy(staging.raw_data(), host.raw_data(), bytes_of(host), cudaMemcpyHostToDevice));
  if (!direct) copy_on_device(dst, staging);
}

// Device -> host: converted to dst's dtype and made contiguous on the device,
// then downloaded, then scattered into dst's strides on the host if needed.
void download(const Tensor& dst, const Tensor& src) {
  Tensor device_side = src;
  if (src.dtype() != dst.dtype() || !src.is_contiguous()) {
    device_side = Tensor::empty(src.shape(), dst.dtype(), Device::cuda);
    copy_on_device(device_side, src);
  }
  const Tensor host = dst.is_contiguous() ? dst : Tensor::empty(dst.shape(), dst.dtype());
  RELPOS_CUDA_CHECK(
      cudaMemcpy(host.raw_data(), device_side.raw_data(), bytes_of(host), cudaMemcpyDeviceToHost));
  if (!dst.is_contiguous()) backend_for(Device::cpu).copy(dst, host);
}

}  // namespace

void CudaBackend::copy(const Tensor& dst, const Tensor& src) {
  if (dst.shape() != src.shape())
    throw InternalError(fmt::format("CudaBackend::copy: shapes {} and {} differ",
                                    to_string(dst.shape()), to_string(src.shape())));
  if (dst.numel() == 0) return;
  const bool dst_on_device = dst.device() == Device::cuda;
  const bool src_on_device = src.device() == Device::cuda;
  if (dst_on_device && src_on_device) {
    copy_on_device(dst, src);
  } else if (dst_on_device) {
    upload(dst, src);
  } else if (src_on_device) {
    download(dst, src);
  } else {
    throw InternalError("CudaBackend::copy: neither tensor is on the GPU");
  }
}

void CudaBackend::fill(const Tensor& dst, double value) {
  const std::int64_t n = dst.numel();
  if (n == 0) return;
  dispatch_any(dst.dtype(), [&](auto zero) {
    using T = decltype(zero);
    fill_kernel<T><<<cuda::blocks_for(n), cuda::kThreads>>>(static_cast<T*>(dst.raw_data()), n,
                                                            static_cast<T>(value));
    RELPOS_CUDA_CHECK_LAUNCH("fill_kernel");
  });
}

}  // namespace relpos
