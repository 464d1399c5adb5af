// GEMM through cuBLAS (cublasGemmStridedBatchedEx). cuBLAS is column-major;
// a row-major C = op(A) op(B) is the column-major C^T = op(B)^T op(A)^T, so the
// operands are passed swapped with the same leading dimensions. f32 runs with
// f32 compute unless TF32 is allowed; f64 with f64 compute.
#include <cublas_v2.h>

#include <algorithm>
#include <limits>

#include "autograd/cuda/check.h"
#include "autograd/cuda/cuda_backend.h"
#include "autograd/error.h"

namespace relpos {
namespace {

// cuBLAS's recommended workspace for Hopper. Handing it a fixed workspace keeps
// its choice of algorithm, and so its results, the same from call to call.
constexpr std::size_t kWorkspaceBytes = std::size_t{32} << 20;
// Batches above this are split, as some cuBLAS versions limit the grid's batch axis.
constexpr std::int64_t kMaxBatch = 65535;

cublasHandle_t cublas_handle(Allocator& allocator) {
  // Created once, never destroyed: destroying it at exit can run after the CUDA
  // runtime has been torn down.
  static const cublasHandle_t handle = [&allocator] {
    cublasHandle_t h = nullptr;
    RELPOS_CUDA_CHECK(cublasCreate(&h));
    RELPOS_CUDA_CHECK(cublasSetWorkspace(h, allocator.allocate(kWorkspaceBytes), kWorkspaceBytes));
    return h;
  }();
  return handle;
}

int as_int(std::int64_t value, const char* what) {
  require(value >= 0 && value <= std::numeric_limits<int>::max(),
          "CUDA gemm: {} = {} does not fit cuBLAS's 32-bit int", what, value);
  return static_cast<int>(value);
}

}  // namespace

void CudaBackend::gemm(const GemmArgs& g) {
  if (g.m == 0 || g.n == 0 || g.batch == 0) return;
  const bool f32 = g.dtype == DType::f32;
  const cudaDataType_t type = f32 ? CUDA_R_32F : CUDA_R_64F;
  const cublasComputeType_t compute =
      f32 ? (allow_tf32_ ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F) : CUBLAS_COMPUTE_64F;
  const float alpha32 = static_cast<float>(g.alpha), beta32 = static_cast<float>(g.beta);
  const void* alpha = f32 ? static_cast<const void*>(&alpha32) : &g.alpha;
  const void* beta = f32 ? static_cast<const void*>(&beta32) : &g.beta;
  const auto op_a = g.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  const auto op_b = g.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  const int m = as_int(g.m, "m"), n = as_int(g.n, "n"), k = as_int(g.k, "k");
  const int lda = as_int(g.lda, "lda"), ldb = as_int(g.ldb, "ldb"), ldc = as_int(g.ldc, "ldc");
  const auto element = static_cast<std::int64_t>(element_size(g.dtype));
  const cublasHandle_t handle = cublas_handle(allocator());
  for (std::int64_t first = 0; first < g.batch; first += kMaxBatch) {
    const int count = static_cast<int>(std::min(kMaxBatch, g.batch - first));
    const auto* a = static_cast<const char*>(g.a) + first * g.stride_a * element;
    const auto* b = static_cast<const char*>(g.b) + first * g.stride_b * element;
    auto* c = static_cast<char*>(g.c) + first * g.stride_c * element;
    RELPOS_CUDA_CHECK(cublasGemmStridedBatchedEx(
        handle, op_b, op_a, n, m, k, alpha, b, type, ldb, g.stride_b, a, type, lda, g.stride_a,
        beta, c, type, ldc, g.stride_c, count, compute, CUBLAS_GEMM_DEFAULT));
  }
}

}  // namespace relpos
