// Host <-> device transfers (Tensor::to, copy_ in both directions, with dtype
// conversion and strided views on either side) and the caching allocator:
// statistics, block reuse, and no cudaMalloc in a repeated training step.
#include <catch2/catch.hpp>

#include "autograd/ops/elementwise.h"
#include "autograd/ops/loss.h"
#include "autograd/ops/matmul.h"
#include "autograd/ops/norm.h"
#include "autograd/tape.h"
#include "cuda_test_helpers.h"

using namespace relpos;
using namespace relpos::cuda_testing;

TEST_CASE("to(cuda) and back round-trips every dtype", "[cuda]") {
  Rng rng(61);
  for (DType dtype : {DType::f32, DType::f64, DType::i64, DType::u8}) {
    INFO(name_of(dtype));
    Tensor host = integer_pair({13, 17}, rng, 0, 255, dtype).host;
    Tensor device = host.to(Device::cuda);
    REQUIRE(device.device() == Device::cuda);
    REQUIRE(device.dtype() == dtype);
    Tensor back = device.to(Device::cpu);
    REQUIRE(back.device() == Device::cpu);
    require_identical(back, host);
  }
  Rng values(62);
  Tensor x = randn({1 << 20}, values);  // 4 MiB of random bits
  require_identical(x.to(Device::cuda).to(Device::cpu), x);
}

TEST_CASE("host -> device copies convert dtypes and follow strides", "[cuda]") {
  Rng rng(63);
  Tensor host = randn({6, 5}, rng, DType::f64);
  Tensor host_t = Tensor::view_of(host, {5, 6}, {1, 5}, 0);  // transposed, f64
  SECTION("into a contiguous f32 tensor") {
    Tensor device = Tensor::empty({5, 6}, DType::f32, Device::cuda);
    device.copy_(host_t);
    require_identical(device, host_t.to(DType::f32));
  }
  SECTION("into a strided f32 view") {
    Tensor base = Tensor::zeros({6, 5}, DType::f32, Device::cuda);
    Tensor device_t = Tensor::view_of(base, {5, 6}, {1, 5}, 0);
    device_t.copy_(host_t);
    require_identical(base, host.to(DType::f32));
  }
}

TEST_CASE("device -> host copies convert dtypes and follow strides", "[cuda]") {
  Rng rng(64);
  Tensor expected = randn({6, 5}, rng);  // f32
  Tensor device = expected.to(Device::cuda);
  Tensor device_t = Tensor::view_of(device, {5, 6}, {1, 5}, 0);
  SECTION("a strided device view to the host") {
    require_identical(device_t.to(Device::cpu), Tensor::view_of(expected, {5, 6}, {1, 5}, 0));
  }
  SECTION("into a strided f64 host view") {
    Tensor host_base = Tensor::zeros({5, 6}, DType::f64);
    Tensor host_t = Tensor::view_of(host_base, {6, 5}, {1, 6}, 0);
    host_t.copy_(device);
    require_identical(host_t, expected);
  }
  SECTION("item() and to_vector() read through the device") {
    REQUIRE(device_t.to_vector() == Tensor::view_of(expected, {5, 6}, {1, 5}, 0).to_vector());
    REQUIRE(Tensor::view_of(device, {}, {}, 7).item() == expected.to_vector()[7]);
  }
}

TEST_CASE("allocator statistics count current, peak, largest and allocations", "[cuda]") {
  Allocator& allocator = gpu().allocator();
  allocator.reset_peak();
  const AllocatorStats before = allocator.stats();
  REQUIRE(before.allocations == 0);
  {
    Tensor big = Tensor::empty({1 << 18}, DType::f32, Device::cuda);   // 1 MiB
    Tensor small = Tensor::empty({3, 100}, DType::f64, Device::cuda);  // 2400 B
    const AllocatorStats during = allocator.stats();
    REQUIRE(during.current_bytes == before.current_bytes + (1 << 20) + 2400);
    REQUIRE(during.peak_bytes >= during.current_bytes);
    REQUIRE(during.largest_block == (1 << 20));
    REQUIRE(during.allocations == 2);
  }
  REQUIRE(allocator.stats().current_bytes == before.current_bytes);
}

TEST_CASE("a freed block is reused; release_cached_memory gives it back", "[cuda]") {
  void* first = nullptr;
  {
    Tensor t = Tensor::empty({12345}, DType::f32, Device::cuda);
    first = t.raw_data();
  }
  const std::uint64_t mallocs = gpu().memory_stats().device_mallocs;
  REQUIRE(gpu().memory_stats().cached_bytes > 0);
  {
    Tensor again = Tensor::empty({12345}, DType::f32, Device::cuda);
    REQUIRE(again.raw_data() == first);
  }
  REQUIRE(gpu().memory_stats().device_mallocs == mallocs);
  gpu().release_cached_memory();
  REQUIRE(gpu().memory_stats().cached_bytes == 0);
  Tensor fresh = Tensor::empty({12345}, DType::f32, Device::cuda);
  REQUIRE(gpu().memory_stats().device_mallocs == mallocs + 1);
}

namespace {

// One step of a small MLP classifier on the GPU: forward, loss, backward.
void training_step(const Tensor& x, const Tensor& targets, const Tensor& w1, const Tensor& w2,
                   const Tensor& gamma, const Tensor& beta) {
  for (const Tensor& p : {w1, w2, gamma, beta}) p.zero_grad();
  Tensor h = gelu(layer_norm(matmul(x, w1), gamma, beta));  // (B, H)
  Tensor logits = matmul(h, w2);                            // (B, C)
  Tensor loss = cross_entropy(logits, targets);
  backward(loss);
}

}  // namespace

TEST_CASE("a repeated training step makes no new cudaMalloc", "[cuda]") {
  Rng rng(65);
  const std::int64_t batch = 64, in = 32, hidden = 128, classes = 10;
  auto param = [&](const Shape& shape, double scale) {
    Tensor p = randn(shape, rng, DType::f32, scale).to(Device::cuda);
    p.set_requires_grad(true);
    return p;
  };
  Tensor w1 = param({in, hidden}, 0.2), w2 = param({hidden, classes}, 0.1);
  Tensor gamma = param({hidden}, 1.0), beta = param({hidden}, 0.1);
  Tensor x = randn({batch, in}, rng).to(Device::cuda);
  Tensor targets = integer_pair({batch}, rng, 0, classes - 1, DType::i64).device;

  training_step(x, targets, w1, w2, gamma, beta);  // warm-up: fills the cache
  const CudaMemoryStats warm = gpu().memory_stats();
  const std::size_t in_use = gpu().allocator().stats().current_bytes;
  training_step(x, targets, w1, w2, gamma, beta);
  gpu().synchronize();  // any fault in the queued kernels surfaces here
  REQUIRE(gpu().memory_stats().device_mallocs == warm.device_mallocs);
  REQUIRE(gpu().memory_stats().reserved_bytes == warm.reserved_bytes);
  REQUIRE(gpu().allocator().stats().current_bytes == in_use);
  REQUIRE(w1.grad().defined());
  REQUIRE(w1.grad().device() == Device::cuda);
}
