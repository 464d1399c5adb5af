#include "layers/position/t5_buckets.h"

#include <algorithm>
#include <cmath>

#include "autograd/error.h"

namespace relpos {

void validate(const T5BucketConfig& c) {
  const std::int64_t side = c.bidirectional ? c.num_buckets / 2 : c.num_buckets;
  const std::int64_t max_exact = side / 2;
  require(max_exact > 0, "t5: num_buckets={} gives max_exact=0 ({}); use at least {} buckets",
          c.num_buckets, c.bidirectional ? "bidirectional" : "unidirectional",
          c.bidirectional ? 4 : 2);
  require(c.max_distance > max_exact,
          "t5: max_distance={} must exceed max_exact={} (num_buckets={}, {})", c.max_distance,
          max_exact, c.num_buckets, c.bidirectional ? "bidirectional" : "unidirectional");
}

std::int64_t t5_bucket(std::int64_t rel, const T5BucketConfig& c) {
  std::int64_t side = c.num_buckets, base = 0, n = 0;
  if (c.bidirectional) {
    side /= 2;
    base = rel > 0 ? side : 0;
    n = rel < 0 ? -rel : rel;
  } else {
    n = rel < 0 ? -rel : 0;  // the future and the present share bucket 0
  }
  const std::int64_t max_exact = side / 2;
  if (n < max_exact) return base + n;  // before any log: log(0) never happens
  // The logarithmic part in float32, one rounded operation at a time, as the reference does.
  const float ratio = static_cast<float>(n) / static_cast<float>(max_exact);
  const float log_ratio = std::log(ratio);
  const auto log_range = static_cast<float>(
      std::log(static_cast<double>(c.max_distance) / static_cast<double>(max_exact)));
  const float scaled = log_ratio / log_range * static_cast<float>(side - max_exact);
  return base + std::min(side - 1, max_exact + static_cast<std::int64_t>(scaled));
}

Tensor t5_distance_buckets(std::int64_t q_len, std::int64_t k_len, const T5BucketConfig& c) {
  const std::int64_t n = q_len + k_len - 1;
  Tensor buckets = Tensor::empty({n}, DType::i64);
  std::int64_t* b = buckets.data<std::int64_t>();
  for (std::int64_t i = 0; i < n; ++i) b[i] = t5_bucket(i - (k_len - 1), c);
  return buckets;
}

}  // namespace relpos
