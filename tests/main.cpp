// The test runner: Catch2's main, after picking OpenBLAS's kernels as the
// relpos executable does (autograd/blas_kernel.h), so tests run what users run.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include "autograd/blas_kernel.h"

int main(int argc, char** argv) {
  relpos::use_best_blas_kernel(argv);
  return Catch::Session().run(argc, argv);
}
