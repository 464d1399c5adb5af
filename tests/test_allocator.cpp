// The CPU caching allocator: a training step that repeats the previous step's
// allocations is served from the cache, without a system allocation.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cstring>
#include <fstream>
#include <string>

#include "autograd/allocator.h"
#include "train/config/config.h"
#include "train/run_state.h"
#include "train/train_step.h"

using namespace relpos;

namespace {

// One optimizer step of the trainer's loop: its loss and gradients (train/train_step.h:
// forward, loss, backward, clip), then AdamW.
void train_step(RunState& run) {
  TrainStep(run).compute();
  run.optimizer->step(run.config.optim.lr);
}

}  // namespace

TEST_CASE("allocator: a warm training step makes no system allocation", "[allocator]") {
  const std::string scheme = GENERATE("none", "t5", "shaw");
  INFO("scheme " << scheme);
  RunState run = build_run(
      load_config({}, {"model.d_model=32", "model.n_layers=2", "model.n_heads=2", "model.d_ff=64",
                       "model.position.scheme=" + scheme, "data.seq_len=24", "data.batch_size=3",
                       "optim.name=adamw", "train.threads=2"}));
  run.model->set_training(true);
  Allocator& allocator = allocator_for(Device::cpu);
  for (int step = 0; step < 2; ++step) train_step(run);
  const AllocatorStats warm = allocator.stats();
  for (int step = 0; step < 3; ++step) train_step(run);
  const AllocatorStats after = allocator.stats();
  // The steps did allocate (from the cache), so a cache that kept nothing would
  // show up as system allocations.
  REQUIRE(after.allocations > warm.allocations + 100);
  CHECK(after.system_allocations == warm.system_allocations);
}

TEST_CASE("allocator: freed blocks of every size are reused", "[allocator]") {
  Allocator& allocator = allocator_for(Device::cpu);
  for (const std::size_t bytes :
       {std::size_t{4}, std::size_t{1000}, std::size_t{100000}, std::size_t{3} << 20}) {
    INFO(bytes << " bytes");
    allocator.deallocate(allocator.allocate(bytes), bytes);  // now cached
    const std::uint64_t before = allocator.stats().system_allocations;
    void* p = allocator.allocate(bytes);
    CHECK(allocator.stats().system_allocations == before);
    CHECK(reinterpret_cast<std::uintptr_t>(p) % 64 == 0);
    allocator.deallocate(p, bytes);
  }
}

// AddressSanitizer's build: GCC defines __SANITIZE_ADDRESS__, clang has the feature test.
#if defined(__SANITIZE_ADDRESS__)
#define RELPOS_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define RELPOS_ASAN 1
#endif
#endif
#ifndef RELPOS_ASAN
#define RELPOS_ASAN 0
#endif

namespace {

// Resident memory of this process (VmRSS), in bytes.
std::size_t resident_bytes() {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);)
    if (line.rfind("VmRSS:", 0) == 0) return std::stoull(line.substr(6)) * 1024;
  return 0;
}

}  // namespace

TEST_CASE("allocator: freed blocks of ever new sizes do not pile up in the cache",
          "[allocator][memory]") {
#if RELPOS_ASAN
  // AddressSanitizer keeps freed memory in its quarantine: resident memory then says
  // nothing of the allocator's cache.
  WARN("SKIPPED: resident memory is AddressSanitizer's under -fsanitize=address");
  return;
#endif
  Allocator& allocator = allocator_for(Device::cpu);
  const std::size_t before = resident_bytes();
  // 400 blocks of 1 MiB + n pages, one alive at a time, each written (resident): the
  // sizes sampling or evaluation at 400 new lengths would free. Before, all 400 MiB stayed
  // cached (up to 4 GiB); now the cache keeps at most max(64 MiB, 2 x the most in use).
  for (std::size_t n = 0; n < 400; ++n) {
    const std::size_t bytes = (std::size_t{1} << 20) + n * 4096;
    void* block = allocator.allocate(bytes);
    std::memset(block, 1, bytes);
    allocator.deallocate(block, bytes);
  }
  const std::size_t grown = resident_bytes() - std::min(before, resident_bytes());
  INFO("resident memory grew by " << grown / (1 << 20) << " MiB");
  REQUIRE(grown < (std::size_t{200} << 20));
}
