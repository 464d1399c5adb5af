#include "autograd/threads.h"

#include <cblas.h>
#include <omp.h>
#if defined(__SSE2__)
#include <xmmintrin.h>
#endif

#include "autograd/error.h"

namespace relpos {

void set_num_threads(int threads) {
  require(threads >= 1, "set_num_threads: thread count must be >= 1, got {}", threads);
  omp_set_num_threads(threads);
  openblas_set_num_threads(threads);
  flush_denormals();  // a larger team has new threads
}

void flush_denormals() {
#if defined(__SSE2__)
  constexpr unsigned kFlushToZero = 1u << 15, kDenormalsAreZero = 1u << 6;
  _mm_setcsr(_mm_getcsr() | kFlushToZero | kDenormalsAreZero);
#pragma omp parallel
  _mm_setcsr(_mm_getcsr() | kFlushToZero | kDenormalsAreZero);
#endif
}

int num_threads() { return omp_get_max_threads(); }

bool blas_uses_openmp() { return openblas_get_parallel() == 2; }

}  // namespace relpos
