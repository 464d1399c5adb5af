// Errors: CUDA runtime and cuBLAS failures become exceptions naming the call,
// the error and the file:line; out-of-memory names the request; misuse of the
// backend is reported; the device stays usable afterwards.
#include <catch2/catch.hpp>

#include "autograd/cuda/check.h"
#include "autograd/error.h"
#include "cuda_test_helpers.h"

using namespace relpos;
using namespace relpos::cuda_testing;
using Catch::Contains;

TEST_CASE("a failed CUDA runtime call names the call, the error and where", "[cuda]") {
  REQUIRE_THROWS_AS(RELPOS_CUDA_CHECK(cudaSetDevice(1 << 20)), InternalError);
  REQUIRE_THROWS_WITH(
      RELPOS_CUDA_CHECK(cudaSetDevice(1 << 20)),
      Contains("cudaSetDevice(1 << 20) failed") && Contains("invalid device ordinal") &&
          Contains("cudaErrorInvalidDevice") && Contains("tests/cuda/test_cuda_errors.cpp:"));
}

TEST_CASE("a failed cuBLAS call names the call and the status", "[cuda]") {
  cublasHandle_t handle = nullptr;
  RELPOS_CUDA_CHECK(cublasCreate(&handle));
  const float one = 1.0f;
  REQUIRE_THROWS_WITH(
      RELPOS_CUDA_CHECK(cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, -1, 1, 1, &one, nullptr, 1,
                                    nullptr, 1, &one, nullptr, 1)),
      Contains("cuBLAS error at tests/cuda/test_cuda_errors.cpp:") && Contains("cublasSgemm(") &&
          Contains("CUBLAS_STATUS_INVALID_VALUE"));
  RELPOS_CUDA_CHECK(cublasDestroy(handle));
}

TEST_CASE("out of device memory names the request, and the device still works", "[cuda]") {
  REQUIRE_THROWS_WITH(
      Tensor::empty({std::int64_t{1} << 50}, DType::f32, Device::cuda),
      Contains("cudaMalloc of 4503599627370496 bytes") && Contains("out of memory"));
  Tensor ones = Tensor::ones({4}, DType::f32, Device::cuda);
  REQUIRE(ones.to_vector() == std::vector<double>{1, 1, 1, 1});
}

TEST_CASE("backend misuse is reported", "[cuda]") {
  Tensor a = Tensor::zeros({2, 3}, DType::f32, Device::cuda);
  Tensor b = Tensor::zeros({3, 2}, DType::f32, Device::cuda);
  REQUIRE_THROWS_WITH(gpu().copy(a, b), Contains("CudaBackend::copy: shapes [2, 3] and [3, 2]"));
  REQUIRE_THROWS_WITH(gpu().copy(Tensor::zeros({2}), Tensor::zeros({2})),
                      Contains("neither tensor is on the GPU"));

  // Nine axes that no merging can reduce: a's strides run the other way.
  const Shape shape(9, 2);
  Tensor base = Tensor::zeros(shape, DType::f32, Device::cuda);
  Shape reversed(9);
  for (std::size_t i = 0; i < 9; ++i) reversed[i] = std::int64_t{1} << i;
  Tensor a9 = Tensor::view_of(base, shape, reversed, 0);
  Tensor out = Tensor::empty(shape, DType::f32, Device::cuda);
  REQUIRE_THROWS_WITH(gpu().binary(BinaryOp::add, a9, base, out),
                      Contains("needs more than 8 strided axes"));
}
