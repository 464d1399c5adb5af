// Tensor storage, views, copies and version counting.
#include <catch2/catch.hpp>
#include <cstdlib>
#include <string>
#if RELPOS_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

#include "autograd/blas_kernel.h"
#include "autograd/error.h"
#include "autograd/ops/elementwise.h"
#include "autograd/ops/shape.h"
#include "autograd/tensor.h"
#include "autograd/threads.h"
#include "test_helpers.h"

using namespace relpos;

TEST_CASE("tensor creation and element access", "[tensor]") {
  Tensor t = Tensor::from_data(std::vector<double>{1, 2, 3, 4, 5, 6}, {2, 3});
  REQUIRE(t.shape() == Shape{2, 3});
  REQUIRE(t.strides() == Shape{3, 1});
  REQUIRE(t.dtype() == DType::f32);
  REQUIRE(t.is_contiguous());
  REQUIRE(t.to_vector() == std::vector<double>{1, 2, 3, 4, 5, 6});
  REQUIRE(Tensor::full({2, 2}, 7.5, DType::f64).to_vector() == std::vector<double>(4, 7.5));
  REQUIRE(Tensor::scalar(3.0).item() == 3.0);
  REQUIRE_THROWS_AS(t.item(), UsageError);
  REQUIRE_THROWS_WITH(Tensor::from_data(std::vector<double>{1, 2}, {3}),
                      Catch::Contains("2 values for shape [3]"));
}

TEST_CASE("views share storage and contiguous() copies", "[tensor]") {
  Tensor t = Tensor::from_data(std::vector<double>{0, 1, 2, 3, 4, 5}, {2, 3}, DType::f64);
  Tensor tt = transpose(t, 0, 1);
  REQUIRE(tt.shape() == Shape{3, 2});
  REQUIRE_FALSE(tt.is_contiguous());
  REQUIRE(tt.storage() == t.storage());
  REQUIRE(tt.to_vector() == std::vector<double>{0, 3, 1, 4, 2, 5});
  Tensor c = tt.contiguous();
  REQUIRE(c.is_contiguous());
  REQUIRE(c.storage() != t.storage());
  REQUIRE(c.to_vector() == tt.to_vector());

  Tensor s = slice(t, 1, 1, 3);
  REQUIRE(s.storage() == t.storage());
  REQUIRE(s.to_vector() == std::vector<double>{1, 2, 4, 5});
  Tensor stepped = slice(t, 1, 0, 3, 2);
  REQUIRE(stepped.to_vector() == std::vector<double>{0, 2, 3, 5});

  Tensor e = expand(slice(t, 0, 0, 1), {4, 3});
  REQUIRE(e.storage() == t.storage());
  REQUIRE(e.strides()[0] == 0);
  REQUIRE(e.to_vector() == std::vector<double>{0, 1, 2, 0, 1, 2, 0, 1, 2, 0, 1, 2});

  Tensor r = reshape(t, {3, -1});
  REQUIRE(r.storage() == t.storage());
  REQUIRE(r.shape() == Shape{3, 2});
}

TEST_CASE("in-place writes bump the shared version counter", "[tensor]") {
  Tensor t = Tensor::zeros({4});
  Tensor view = slice(t, 0, 1, 3);
  const auto v0 = t.version();
  view.fill_(2.0);
  REQUIRE(t.version() == v0 + 1);
  REQUIRE(t.to_vector() == std::vector<double>{0, 2, 2, 0});
  t.copy_(Tensor::ones({4}));
  REQUIRE(view.version() == v0 + 2);
}

TEST_CASE("dtype conversion and copies between layouts", "[tensor]") {
  Tensor t = Tensor::from_data(std::vector<double>{1.5, -2.25}, {2}, DType::f64);
  Tensor f = t.to(DType::f32);
  REQUIRE(f.dtype() == DType::f32);
  REQUIRE(f.to_vector() == std::vector<double>{1.5, -2.25});
  Tensor i = Tensor::from_data(std::vector<double>{3, 7}, {2}, DType::i64);
  REQUIRE(i.data<std::int64_t>()[1] == 7);
  REQUIRE_THROWS_AS(t.data<float>(), InternalError);
}

TEST_CASE("cuda device is refused cleanly without a CUDA build or device", "[tensor]") {
#if !RELPOS_HAVE_CUDA
  REQUIRE_THROWS_WITH(Tensor::zeros({2}, DType::f32, Device::cuda),
                      Catch::Contains("without CUDA"));
#else
  // A CUDA build on a machine without a GPU refuses the device with a clear error.
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0)
    REQUIRE_THROWS_WITH(Tensor::zeros({2}, DType::f32, Device::cuda),
                        Catch::Contains("no CUDA device"));
#endif
}

TEST_CASE("OpenBLAS is the OpenMP build and the thread count is settable", "[threads]") {
  REQUIRE(blas_uses_openmp());
  const int before = num_threads();
  set_num_threads(1);
  REQUIRE(num_threads() == 1);
  set_num_threads(before);
  REQUIRE(num_threads() == before);
  REQUIRE_THROWS_WITH(set_num_threads(0), Catch::Contains(">= 1"));
}

TEST_CASE("denormal floats are flushed to zero on the CPU backend's threads", "[threads]") {
  Tensor tiny = Tensor::full({4}, 1e-30);
  Tensor product = tiny * 1e-15;  // 1e-45 is a float denormal: flushed to 0
  for (double v : product.to_vector()) REQUIRE(v == 0.0);
  Tensor normal = tiny * 1e-5;  // 1e-35 is a normal float: kept
  for (double v : normal.to_vector()) REQUIRE(v > 0.0);
}

TEST_CASE("OpenBLAS runs the widest kernels the CPU has", "[threads]") {
  __builtin_cpu_init();
  const bool avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                      __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl");
  const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  const char* chosen = std::getenv("OPENBLAS_CORETYPE");
  const std::string kernel = blas_kernel_name();
  INFO("CPU has AVX-512: " << avx512 << ", AVX2: " << avx2 << ", OpenBLAS kernels: " << kernel
                           << ", OPENBLAS_CORETYPE=" << (chosen ? chosen : "(unset)"));
  // The runner's main re-executes itself with OPENBLAS_CORETYPE=SkylakeX (or Haswell)
  // when OpenBLAS chose less; a value the user set is left alone.
  const bool user_choice =
      chosen != nullptr && std::string(chosen) != "SkylakeX" && std::string(chosen) != "Haswell";
  if (user_choice) return;
  if (avx512) {
    REQUIRE((kernel == "SkylakeX" || kernel == "Cooperlake" || kernel == "SapphireRapids"));
  } else if (avx2) {
    REQUIRE((kernel == "Haswell" || kernel == "Zen"));
  }
}
