// Pinned values: T5 buckets (docs/position-schemes.md §2), Shaw's index matrix, rel_shift.
#include <catch2/catch.hpp>
#include <set>

#include "autograd/error.h"
#include "autograd/ops/relative.h"
#include "layers/position/scheme.h"
#include "layers/position/t5_buckets.h"
#include "test_helpers.h"

using namespace relpos;

TEST_CASE("T5 buckets, 32 buckets, max_distance 128, bidirectional", "[positions][t5]") {
  const T5BucketConfig c{32, 128, true};
  const std::vector<std::pair<std::int64_t, std::int64_t>> pinned = {
      {0, 0},    {-1, 1},   {1, 17},   {-7, 7},   {7, 23},   {-8, 8},   {8, 24},
      {-15, 9},  {-16, 10}, {16, 26},  {-31, 11}, {-32, 12}, {32, 28},  {-63, 13},
      {-64, 14}, {64, 30},  {-90, 14}, {-91, 15}, {91, 31},  {128, 31}, {-1000, 15}};
  for (auto [rel, bucket] : pinned) {
    INFO("rel=" << rel);
    REQUIRE(t5_bucket(rel, c) == bucket);
  }
  std::set<std::int64_t> used;
  for (std::int64_t rel = -2000; rel <= 2000; ++rel) used.insert(t5_bucket(rel, c));
  REQUIRE(used.count(16) == 0);  // +0 goes to bucket 0, so the upper half never uses 16
  REQUIRE(used.size() == 31);
  // Saturation starts exactly at |rel| = 91 on both sides.
  for (std::int64_t n = 91; n < 400; ++n) {
    REQUIRE(t5_bucket(-n, c) == 15);
    REQUIRE(t5_bucket(n, c) == 31);
  }
}

TEST_CASE("T5 buckets, unidirectional: the future and self share bucket 0", "[positions][t5]") {
  const T5BucketConfig c{32, 128, false};
  for (std::int64_t rel = 0; rel <= 50; ++rel) REQUIRE(t5_bucket(rel, c) == 0);
  for (std::int64_t n = 1; n < 16; ++n) REQUIRE(t5_bucket(-n, c) == n);  // exact below 16
  // 16 + trunc(log(n/16) / log(8) * 16): 32 -> 16 + 5, 64 -> 16 + 10.
  REQUIRE(t5_bucket(-16, c) == 16);
  REQUIRE(t5_bucket(-32, c) == 21);
  REQUIRE(t5_bucket(-64, c) == 26);
  REQUIRE(t5_bucket(-112, c) == 30);
  // Unidirectional saturation: bucket 31 from n = 113 (log(113/16)/log(8) * 16 > 15).
  std::int64_t first_last = 0;
  for (std::int64_t n = 1; n < 1000 && first_last == 0; ++n)
    if (t5_bucket(-n, c) == 31) first_last = n;
  REQUIRE(first_last == 113);
  REQUIRE(t5_bucket(-10000, c) == 31);
}

TEST_CASE("T5 rejects degenerate bucket configs", "[positions][t5]") {
  REQUIRE_THROWS_WITH(validate({2, 128, true}), Catch::Contains("max_exact=0"));
  REQUIRE_THROWS_WITH(validate({1, 128, false}), Catch::Contains("max_exact=0"));
  REQUIRE_THROWS_WITH(validate({32, 8, true}),
                      Catch::Contains("max_distance=8") && Catch::Contains("max_exact=8"));
  REQUIRE_NOTHROW(validate({32, 9, true}));
  Rng rng(1);
  PositionConfig p;
  p.scheme = "t5";
  p.set("num_buckets", std::int64_t{32});
  p.set("max_distance", std::int64_t{4});
  REQUIRE_THROWS_AS(make_position_scheme(p, {16, 2, 1, true}, rng), UsageError);
}

TEST_CASE("Shaw's clipped index matrix, k = 2, Lq = 4 queries after 2 memory keys",
          "[positions][shaw]") {
  // Gather the bin index itself: row values 0..2k, so out[i][j] = clip(j - qpos(i), -k, k) + k.
  const std::int64_t k = 2, lq = 4, lk = 6;
  std::vector<double> index_row(2 * k + 1);
  for (std::int64_t c = 0; c <= 2 * k; ++c) index_row[c] = static_cast<double>(c);
  std::vector<double> rows;
  for (std::int64_t i = 0; i < lq; ++i) rows.insert(rows.end(), index_row.begin(), index_row.end());
  Tensor idx = clipped_gather(Tensor::from_data(rows, {lq, 2 * k + 1}, DType::f64), lk, k);
  const std::vector<double> expected = {
      0, 1, 2, 3, 4, 4,   // query at position 2: keys 0..5 at rel -2..3
      0, 0, 1, 2, 3, 4,   // position 3
      0, 0, 0, 1, 2, 3,   // position 4
      0, 0, 0, 0, 1, 2};  // position 5
  REQUIRE(idx.to_vector() == expected);
}

TEST_CASE("rel_shift identity on a small pinned example", "[positions][xl]") {
  // raw[i][c] = 10 i + c; Lq = 2, Lk = 3: row 0 shifts by 1, row 1 by 0.
  Tensor raw = Tensor::from_data(std::vector<double>{0, 1, 2, 10, 11, 12}, {2, 3}, DType::f64);
  REQUIRE(rel_shift(raw).to_vector() == std::vector<double>{1, 2, 0, 10, 11, 12});
  // The shifted column of key j for query i holds distance qpos(i) - j.
  const std::int64_t lq = 3, lk = 5;
  std::vector<double> distance_rows;
  for (std::int64_t i = 0; i < lq; ++i)
    for (std::int64_t c = 0; c < lk; ++c) distance_rows.push_back(static_cast<double>(lk - 1 - c));
  const auto shifted =
      rel_shift(Tensor::from_data(distance_rows, {lq, lk}, DType::f64)).to_vector();
  for (std::int64_t i = 0; i < lq; ++i)
    for (std::int64_t j = 0; j <= lk - lq + i; ++j)
      REQUIRE(shifted[i * lk + j] == (lk - lq + i) - j);
}
