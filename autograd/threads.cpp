#include "autograd/threads.h"

#include <cblas.h>
#include <omp.h>

#include "autograd/error.h"

namespace relpos {

void set_num_threads(int threads) {
  require(threads >= 1, "set_num_threads: thread count must be >= 1, got {}", threads);
  omp_set_num_threads(threads);
  openblas_set_num_threads(threads);
}

int num_threads() { return omp_get_max_threads(); }

bool blas_uses_openmp() { return openblas_get_parallel() == 2; }

}  // namespace relpos
