#include "autograd/blas_kernel.h"

#include <cblas.h>
#include <unistd.h>

#include <cstdlib>
#include <string_view>

namespace relpos {

const char* blas_kernel_name() { return openblas_get_corename(); }

namespace {

// Whether a kernel set named by OpenBLAS uses AVX-512 (SkylakeX and newer), or at
// least AVX2 with FMA (Haswell, Zen, and the AVX-512 ones).
bool is_avx512_blas_kernel(std::string_view name) {
  return name == "SkylakeX" || name == "Cooperlake" || name == "SapphireRapids";
}

bool is_avx2_blas_kernel(std::string_view name) {
  return is_avx512_blas_kernel(name) || name == "Haswell" || name == "Zen";
}

}  // namespace

void use_best_blas_kernel(char** argv) {
  if (std::getenv("OPENBLAS_CORETYPE") != nullptr) return;
  __builtin_cpu_init();
  const bool avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                      __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl");
  const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  const std::string_view chosen = blas_kernel_name();
  const char* better = nullptr;
  if (avx512 && !is_avx512_blas_kernel(chosen)) {
    better = "SkylakeX";
  } else if (avx2 && !is_avx2_blas_kernel(chosen)) {
    better = "Haswell";
  }
  if (better == nullptr) return;
  setenv("OPENBLAS_CORETYPE", better, 1);
  execv("/proc/self/exe", argv);  // returns only on failure: then keep running as we are
}

}  // namespace relpos
