// oneDNN primitives are cached per shape, but not forever: after more distinct shapes
// than the cache holds (sampling or evaluating at many lengths), it stays at its bound
// and every product is still right.
#include <catch2/catch.hpp>
#include <vector>

#include "autograd/cpu/onednn_gemm.h"

using namespace relpos;

TEST_CASE("onednn: the primitive cache keeps at most 256 shapes", "[onednn][memory]") {
  if (!cpu::onednn_built()) {
    WARN("SKIPPED: this build has no oneDNN");
    return;
  }
  // C (1, n) = A (1, 2) * B (2, n) for 300 widths n: A = [1, 2], B's columns (j, 1).
  for (std::int64_t n = 1; n <= 300; ++n) {
    const std::vector<float> a = {1, 2};
    std::vector<float> b(static_cast<std::size_t>(2 * n)), c(static_cast<std::size_t>(n), -1);
    for (std::int64_t j = 0; j < n; ++j) {
      b[static_cast<std::size_t>(j)] = static_cast<float>(j);
      b[static_cast<std::size_t>(n + j)] = 1;
    }
    GemmArgs g;
    g.m = 1, g.n = n, g.k = 2;
    g.a = a.data(), g.lda = 2;
    g.b = b.data(), g.ldb = n;
    g.c = c.data(), g.ldc = n;
    cpu::onednn_gemm(g);
    for (std::int64_t j = 0; j < n; ++j) REQUIRE(c[static_cast<std::size_t>(j)] == j + 2);
    REQUIRE(cpu::onednn_cached_primitives() <= 256);
  }
  REQUIRE(cpu::onednn_cached_primitives() == 256);
}
