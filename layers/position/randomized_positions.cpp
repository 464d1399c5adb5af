#include "layers/position/randomized_positions.h"

#include <algorithm>
#include <numeric>

#include "autograd/counter_hash.h"
#include "autograd/error.h"

namespace relpos {
namespace {

constexpr std::uint64_t kPositionStream = 0x706f73;  // "pos"

}  // namespace

SchemeKey randomized_max_len_key() {
  return {"randomized_max_len",
          std::int64_t{0},
          "randomized positions in training: a sorted random subset of [0, value) (0 = off)",
          {}};
}

void validate_randomized_max_len(const PositionConfig& config, const SchemeContext& context,
                                 std::string_view scheme) {
  const auto value = config.get<std::int64_t>("randomized_max_len");
  require(value == 0 || (value >= context.seq_len && value >= 1 && value <= kMaxRandomizedLen),
          "model.position.randomized_max_len must be 0 (off) or in [data.seq_len, 2^24] = [{}, {}] "
          "(scheme {}), got {}",
          std::max<std::int64_t>(context.seq_len, 1), kMaxRandomizedLen, scheme, value);
}

std::vector<std::int64_t> sorted_random_positions(std::int64_t count, std::int64_t max_len,
                                                  Rng& rng) {
  require(count >= 0 && count <= max_len,
          "randomized positions: cannot draw {} distinct positions of [0, {})", count, max_len);
  std::vector<std::int64_t> positions;
  positions.reserve(static_cast<std::size_t>(count));
  for (std::int64_t p = 0; p < max_len && std::ssize(positions) < count; ++p) {
    const auto needed = static_cast<std::uint64_t>(count - std::ssize(positions));
    if (rng.below(static_cast<std::uint64_t>(max_len - p)) < needed) positions.push_back(p);
  }
  return positions;
}

std::vector<std::int64_t> window_positions(std::int64_t start, std::int64_t len,
                                           std::int64_t max_len, bool randomized,
                                           std::uint64_t seed) {
  std::vector<std::int64_t> positions(static_cast<std::size_t>(len));
  if (!randomized || max_len == 0) {
    std::iota(positions.begin(), positions.end(), start);
    return positions;
  }
  require(start + len <= max_len,
          "randomized positions: a training window ending at position {} needs "
          "model.position.randomized_max_len >= {}, got {}",
          start + len - 1, start + len, max_len);
  Rng rng(mix64(seed, kPositionStream));
  const std::vector<std::int64_t> all = sorted_random_positions(start + len, max_len, rng);
  std::copy(all.begin() + start, all.end(), positions.begin());
  return positions;
}

}  // namespace relpos
