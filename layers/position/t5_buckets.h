#pragma once
// T5's bucketing of relative positions (HuggingFace's _relative_position_bucket,
// with relative_position = key - query). Exact definition: docs/position-schemes.md §2.
#include <cstdint>

#include "autograd/tensor.h"

namespace relpos {

struct T5BucketConfig {
  std::int64_t num_buckets = 32;
  std::int64_t max_distance = 128;
  bool bidirectional = true;
};

// Throws UsageError for configs where the bucket function degenerates.
void validate(const T5BucketConfig& config);

std::int64_t t5_bucket(std::int64_t relative_position, const T5BucketConfig& config);

// i64 (Lq+Lk-1): the bucket of each relative distance rel = n - (Lk-1).
Tensor t5_distance_buckets(std::int64_t q_len, std::int64_t k_len, const T5BucketConfig& config);

}  // namespace relpos
