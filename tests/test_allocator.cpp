// The CPU caching allocator: a training step that repeats the previous step's
// allocations is served from the cache, without a system allocation.
#include <catch2/catch.hpp>

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
