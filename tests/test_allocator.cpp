// The CPU caching allocator: a training step that repeats the previous step's
// allocations is served from the cache, without a system allocation and without
// faulting in a page.
#include <malloc.h>
#include <sys/resource.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstring>
#include <fstream>
#include <string>

#include "autograd/allocator.h"
#include "test_helpers.h"
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

namespace {

// Minor page faults of this process so far, all its threads (OpenMP's workers too).
long minor_faults() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_minflt;
}

}  // namespace

TEST_CASE("allocator: warm training steps fault in no pages and keep their resident memory",
          "[allocator][memory]") {
#if RELPOS_ASAN
  WARN("SKIPPED: page faults and resident memory are AddressSanitizer's under -fsanitize=address");
  return;
#endif
  const std::string precision = GENERATE("fp32", "bf16");
  const std::string scheme = GENERATE("none", "xl");
  INFO(precision << ", scheme " << scheme);
  if (precision == "bf16" && !testing::bf16_usable()) return;
  // Blocks of up to 512 KiB: batch 8 x L 64 tokens, d_model 64, d_ff 256, vocab 256.
  RunState run = build_run(
      load_config({}, {"model.d_model=64", "model.n_layers=2", "model.n_heads=2", "model.d_ff=256",
                       "model.position.scheme=" + scheme, "data.seq_len=64", "data.batch_size=8",
                       "optim.name=adamw", "train.threads=2", "train.precision=" + precision}));
  run.model->set_training(true);
  // glibc maps a block above its mmap threshold fresh and unmaps it when it is freed, so
  // its pages fault in again on every use. Left to itself, glibc raises that threshold to
  // the largest block freed, up to 32 MiB, and its trim threshold to twice that: blocks of
  // this small model's sizes would then stay in glibc's heap even if relpos's cache kept
  // nothing, and only the bench model's 32 MiB activations fault (every step, 168 k faults,
  // with the cache disabled: bench/results/step-faults.md). Fixing both thresholds puts
  // this model's blocks where the bench model's large ones are. For the rest of this
  // process (ctest runs each test case in a process of its own).
  mallopt(M_MMAP_THRESHOLD, 256 << 10);
  mallopt(M_TRIM_THRESHOLD, 512 << 10);
  Allocator& allocator = allocator_for(Device::cpu);
  // Steps 1 to 3 fault in the step's memory, fill the cache and make oneDNN's primitives.
  for (int step = 0; step < 3; ++step) train_step(run);
  allocator.reset_peak();
  const std::size_t held = allocator.stats().current_bytes;
  const long faults_before = minor_faults();
  const std::size_t resident_before = resident_bytes();
  constexpr int kSteps = 4;  // steps 4 to 7
  for (int step = 0; step < kSteps; ++step) train_step(run);
  const long faults = minor_faults() - faults_before;
  const std::size_t resident_after = resident_bytes();
  const AllocatorStats stats = allocator.stats();
  // Pages of tensor memory a step uses beyond what stays allocated between steps (the
  // parameters, gradients and optimizer state): what a step would fault in again if its
  // blocks went back to the system.
  const long step_pages = static_cast<long>((stats.peak_bytes - held) / 4096);
  // The bound: 16 faults a step. Measured: 2 to 14 in these 4 steps (glibc's heap growing
  // by a page now and then), none to 2 a step on the bench model. A block of 64 KiB taken
  // from the system every step would fault 16 pages; with the cache disabled (freed blocks
  // going back to glibc) these 4 steps faulted 6,180 to 7,264 pages.
  constexpr long kFaultsPerStep = 16;
  INFO(faults << " minor faults in " << kSteps << " steps; a step uses " << step_pages
              << " pages of tensors, its largest block " << stats.largest_block / 1024
              << " KiB; resident memory " << resident_before / 1024 << " -> "
              << resident_after / 1024 << " KiB");
  REQUIRE(step_pages > 20 * kFaultsPerStep);  // a step that faulted its memory would show
  CHECK(stats.system_allocations == 0);
  CHECK(faults <= kSteps * kFaultsPerStep);
  // Resident memory grows only by faulted pages.
  CHECK(resident_after <= resident_before + kSteps * kFaultsPerStep * 4096);
}
