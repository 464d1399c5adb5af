// The test runner: Catch2's main, after picking OpenBLAS's kernels as the
// relpos executable does (autograd/blas_kernel.h), so tests run what users run.
#define CATCH_CONFIG_RUNNER
// Catch2's implementation compiles std::regex (its Matches matcher), where GCC 12 under
// -fsanitize=address reports a false -Wmaybe-uninitialized inside libstdc++'s <regex>.
// Silenced for this third-party header only, so -Werror stays on.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <catch2/catch.hpp>
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

#include <unistd.h>

#include <cstdlib>

#include "autograd/blas_kernel.h"

int main(int argc, char** argv) {
  // OpenMP threads that wait for work sleep instead of spinning (unless the environment
  // says otherwise), in the runner and in the relpos processes tests start. The tests run
  // many small parallel regions, often two processes at once (ctest -j2) on two cores,
  // where a spinning thread holds the core its partner needs: on a loaded 2-core Xeon the
  // chunked-attention sweep took 97 s spinning, 18 s sleeping. libgomp reads the variable
  // when it loads, hence the re-execution (use_best_blas_kernel's, or else our own).
  if (std::getenv("OMP_WAIT_POLICY") == nullptr) {
    setenv("OMP_WAIT_POLICY", "passive", 1);
    relpos::use_best_blas_kernel(argv);
    execv("/proc/self/exe", argv);  // returns only on failure: then run as we are
  }
  relpos::use_best_blas_kernel(argv);
  return Catch::Session().run(argc, argv);
}
