#include "autograd/blas_kernel.h"

#include <cblas.h>
#include <unistd.h>

#include <cstdlib>
#include <string_view>

namespace relpos {

const char* blas_kernel_name() { return openblas_get_corename(); }

void use_best_blas_kernel(char** argv) {
  if (std::getenv("OPENBLAS_CORETYPE") != nullptr) return;
  if (std::string_view(blas_kernel_name()) != "Haswell") return;
  __builtin_cpu_init();
  const bool avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                      __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl");
  if (!avx512) return;
  setenv("OPENBLAS_CORETYPE", "SkylakeX", 1);
  execv("/proc/self/exe", argv);  // returns only on failure: then keep running as we are
}

}  // namespace relpos
