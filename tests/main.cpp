// The test runner: Catch2's main, after picking OpenBLAS's kernels as the
// relpos executable does (autograd/blas_kernel.h), so tests run what users run.
#define CATCH_CONFIG_RUNNER
// Catch2's implementation compiles std::regex (its Matches matcher), where GCC 12 under
// -fsanitize=address reports a false -Wmaybe-uninitialized inside libstdc++'s <regex>.
// Silenced for this third-party header only, so -Werror stays on.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <catch2/catch.hpp>
#pragma GCC diagnostic pop

#include "autograd/blas_kernel.h"

int main(int argc, char** argv) {
  relpos::use_best_blas_kernel(argv);
  return Catch::Session().run(argc, argv);
}
