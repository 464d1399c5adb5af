#pragma once
// A small seeded random generator (xoshiro256**) whose whole state is four
// integers, so it can be saved in a checkpoint and restored bit-exactly.
#include <array>
#include <cstdint>

#include "autograd/counter_hash.h"
#include "autograd/tensor.h"

namespace relpos {

class Rng {
 public:
  explicit Rng(std::uint64_t seed = 0);
  std::uint64_t next_u64();
  double uniform();                          // [0, 1)
  double normal();                           // standard normal (Box-Muller, no cached second value)
  std::uint64_t below(std::uint64_t bound);  // uniform integer in [0, bound)

  using State = std::array<std::uint64_t, 4>;
  State state() const { return state_; }
  void set_state(const State& state) { state_ = state; }

 private:
  State state_;
};

Tensor randn(const Shape& shape, Rng& rng, DType dtype = DType::f32, double stddev = 1.0);
Tensor rand_uniform(const Shape& shape, Rng& rng, double low, double high,
                    DType dtype = DType::f32);

}  // namespace relpos
