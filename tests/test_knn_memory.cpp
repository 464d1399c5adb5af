// The kNN memory layer (layers/knn_memory.h): exact top-K selection, equality with
// dense attention over the memory when K covers it (values and gradients, fp64),
// fp64 gradchecks of the layer and its gate, and the memory's bookkeeping.
#include <catch2/catch.hpp>
#include <cmath>

#include "autograd/ops/elementwise.h"
#include "autograd/ops/matmul.h"
#include "autograd/ops/reduce.h"
#include "autograd/ops/shape.h"
#include "autograd/ops/top_k.h"
#include "autograd/tape.h"
#include "layers/attention.h"
#include "layers/knn_memory.h"
#include "layers/position/scheme.h"
#include "layers/scaled_attention.h"
#include "scheme_harness.h"
#include "test_helpers.h"

using namespace relpos;
using testing::leaf;

namespace {

constexpr std::int64_t kBatch = 2, kHeads = 2, kHeadDim = 3, kLen = 4, kMemory = 6;
constexpr std::int64_t kModel = kHeads * kHeadDim;

// A T5 attention layer with a kNN branch retrieving top_k, all parameters random f64.
struct KnnLayer {
  std::unique_ptr<PositionScheme> scheme;
  std::unique_ptr<MultiHeadAttention> attention;
  std::vector<Tensor> parameters;  // the attention's, then the scheme's

  KnnLayer(std::int64_t top_k, Rng& rng) {
    PositionConfig config;
    config.scheme = "t5";
    const ModelDims dims{kModel, kHeads, 1, true};
    scheme = make_position_scheme(config, dims, rng);
    attention = std::make_unique<MultiHeadAttention>(dims, 0, *scheme, AttentionPath::flash, rng,
                                                     nullptr, top_k);
    parameters = testing::randomize_parameters(*attention, DType::f64, rng);
    for (const Tensor& p : testing::randomize_parameters(*scheme, DType::f64, rng))
      parameters.push_back(p);
  }
  const Tensor& parameter(const std::string& name) const {
    const auto all = attention->parameters();
    for (std::size_t i = 0; i < all.size(); ++i)
      if (all[i].name == name) return parameters[i];
    FAIL("no parameter " << name);
    return parameters[0];
  }
};

// A memory of `entries` random (key, value) pairs, f64 (B, H, entries, D).
KnnMemory random_memory(std::int64_t size, std::int64_t entries, Rng& rng) {
  KnnMemory memory(size);
  memory.append(randn({kBatch, kHeads, entries, kHeadDim}, rng, DType::f64),
                randn({kBatch, kHeads, entries, kHeadDim}, rng, DType::f64));
  return memory;
}

Tensor heads(const Tensor& x) {  // (B, L, H·D) -> (B, H, L, D)
  return permute(reshape(x, {x.size(0), x.size(1), kHeads, kHeadDim}), {0, 2, 1, 3});
}

// The layer written out by hand: T5 local attention and dense attention over the
// whole memory without position terms, mixed per head by sigmoid(b).
Tensor reference_layer(const KnnLayer& layer, const Tensor& x, const KnnMemory& memory) {
  const Tensor q = heads(matmul(x, transpose(layer.parameter("q.weight"), 0, 1)));
  const Tensor k = heads(matmul(x, transpose(layer.parameter("k.weight"), 0, 1)));
  const Tensor v = heads(matmul(x, transpose(layer.parameter("v.weight"), 0, 1)));
  const Tensor local = scaled_attention(q, k, v, layer.scheme->terms(0, kLen, kLen), true,
                                        AttentionPath::composed);  // (B, H, L, D)
  const Tensor retrieved = scaled_attention(q, memory.keys(), memory.values(), PositionTerms{},
                                            false, AttentionPath::composed);
  const Tensor b = reshape(layer.parameter("knn.gate"), {1, kHeads, 1, 1});
  const Tensor g = pow_scalar(exp(neg(b)) + 1.0, -1.0);
  const Tensor mixed = g * retrieved + (1.0 - g) * local;
  const Tensor merged = reshape(permute(mixed, {0, 2, 1, 3}), {kBatch, kLen, kModel});
  return matmul(merged, transpose(layer.parameter("o.weight"), 0, 1));
}

// <f(inputs), w> and the gradients of every input, for comparing two functions.
std::vector<std::vector<double>> value_and_gradients(const Tensor& out, const Tensor& w,
                                                     const std::vector<Tensor>& inputs) {
  for (const Tensor& t : inputs) t.zero_grad();
  backward(sum(out * w));
  std::vector<std::vector<double>> result{out.to_vector()};
  for (const Tensor& t : inputs) result.push_back(t.grad().to_vector());
  return result;
}

}  // namespace

TEST_CASE("outside_top_k hides all but the k largest of each row, ties to the lower index",
          "[knn]") {
  const Tensor scores = testing::f64({3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8}, {2, 6});
  CHECK(outside_top_k(scores, 2).to_vector() ==
        std::vector<double>{1, 1, 1, 1, 0, 0, 1, 0, 1, 1, 1, 0});
  // Row 1 has 5 at indices 2 and 4 (after 8 and 6): the lower index wins.
  CHECK(outside_top_k(scores, 3).to_vector() ==
        std::vector<double>{1, 1, 0, 1, 0, 0, 1, 0, 0, 1, 1, 0});
  CHECK(outside_top_k(scores, 6).to_vector() == std::vector<double>(12, 0.0));
  CHECK(outside_top_k(scores, 100).to_vector() == std::vector<double>(12, 0.0));
  CHECK_THROWS_WITH(outside_top_k(scores, 0), Catch::Contains("k must be >= 1"));
}

TEST_CASE("retrieve_top_k with K = 1 returns the value of each query's best key", "[knn]") {
  Rng rng(71);
  const Tensor q = randn({1, 1, 5, 4}, rng, DType::f64),
               keys = randn({1, 1, 7, 4}, rng, DType::f64);
  const Tensor values = randn({1, 1, 7, 4}, rng, DType::f64);
  const std::vector<double> out = retrieve_top_k(q, keys, values, Tensor(), 1).to_vector();
  const std::vector<double> qv = q.to_vector(), kv = keys.to_vector(), vv = values.to_vector();
  for (int i = 0; i < 5; ++i) {
    int best = 0;
    double best_score = -1e300;
    for (int j = 0; j < 7; ++j) {
      double s = 0;
      for (int d = 0; d < 4; ++d) s += qv[i * 4 + d] * kv[j * 4 + d];
      if (s > best_score) best_score = s, best = j;
    }
    for (int d = 0; d < 4; ++d) CHECK(out[i * 4 + d] == Approx(vv[best * 4 + d]).margin(1e-12));
  }
}

TEST_CASE("kNN layer with K >= memory size equals dense attention over the memory (fp64)",
          "[knn]") {
  Rng rng(72);
  for (std::int64_t top_k : {kMemory, kMemory + 3}) {
    INFO("top_k " << top_k);
    KnnLayer layer(top_k, rng);
    const KnnMemory before = random_memory(kMemory, kMemory, rng);
    const Tensor x = leaf({kBatch, kLen, kModel}, rng);
    const Tensor w = randn({kBatch, kLen, kModel}, rng, DType::f64);
    std::vector<Tensor> inputs{x};
    for (const Tensor& p : layer.parameters) inputs.push_back(p);  // q, k, v, o, gate, T5 table

    KnnMemory memory = before;
    const Tensor out = layer.attention->forward(x, 0, Tensor(), nullptr, &memory);
    const auto actual = value_and_gradients(out, w, inputs);
    const auto expected = value_and_gradients(reference_layer(layer, x, before), w, inputs);
    REQUIRE(actual.size() == inputs.size() + 1);
    for (std::size_t i = 0; i < actual.size(); ++i) {
      INFO((i == 0 ? "output" : "gradient of input " + std::to_string(i - 1)));
      testing::require_close(actual[i], expected[i], 1e-10);
    }
    // The gate's gradient is not zero: the test would see a branch that ignored it.
    REQUIRE(std::abs(layer.parameter("knn.gate").grad().to_vector()[0]) > 1e-6);
    // The memory now holds the last kMemory pairs: 2 old ones, then x's 4 content keys.
    REQUIRE(memory.length() == kMemory);
    const Tensor k = heads(matmul(x, transpose(layer.parameter("k.weight"), 0, 1)));
    testing::require_close(slice(memory.keys(), 2, 2, kMemory).contiguous().to_vector(),
                           k.contiguous().to_vector(), 0.0);
    testing::require_close(slice(memory.keys(), 2, 0, 2).contiguous().to_vector(),
                           slice(before.keys(), 2, 4, 6).contiguous().to_vector(), 0.0);
  }
}

TEST_CASE("gradcheck: kNN layer, its gate and parameters, K < M and K >= M",
          "[knn][gradcheck][slow]") {
  for (std::int64_t top_k : {std::int64_t{2}, kMemory}) {
    Rng rng(73);
    KnnLayer layer(top_k, rng);
    const KnnMemory memory = random_memory(kMemory, kMemory, rng);
    std::vector<Tensor> inputs{leaf({kBatch, kLen, kModel}, rng)};
    for (const Tensor& p : layer.parameters) inputs.push_back(p);
    INFO("top_k " << top_k);
    testing::require_gradcheck(
        [&](const std::vector<Tensor>& in) {
          KnnMemory copy = memory;  // each evaluation starts from the same memory
          return layer.attention->forward(in[0], 0, Tensor(), nullptr, &copy);
        },
        inputs);
  }
}

TEST_CASE("gradcheck: the gate mix of a local result and retrieval", "[knn][gradcheck][slow]") {
  Rng rng(74);
  KnnRetrieval retrieval(kHeads, 3);
  std::vector<Tensor> inputs{leaf({kBatch, kHeads, kLen, kHeadDim}, rng),
                             leaf({kBatch, kHeads, kLen, kHeadDim}, rng)};
  for (const Tensor& p : testing::randomize_parameters(retrieval, DType::f64, rng))
    inputs.push_back(p);
  const KnnMemory memory = random_memory(kMemory, kMemory, rng);
  testing::require_gradcheck(
      [&](const std::vector<Tensor>& in) { return retrieval.mix(in[0], in[1], memory); }, inputs);
}

TEST_CASE("kNN memory keeps the last S pairs and forgets a row at a document boundary", "[knn]") {
  Rng rng(75);
  KnnRetrieval retrieval(kHeads, kMemory);
  testing::randomize_parameters(retrieval, DType::f64, rng);
  const Tensor q = randn({kBatch, kHeads, kLen, kHeadDim}, rng, DType::f64);
  const Tensor local = randn({kBatch, kHeads, kLen, kHeadDim}, rng, DType::f64);

  KnnMemory memory(kMemory);
  CHECK(retrieval.mix(q, local, memory).to_vector() == local.to_vector());  // empty: local
  const Tensor old_k = randn({kBatch, kHeads, 4, kHeadDim}, rng, DType::f64);
  const Tensor old_v = randn({kBatch, kHeads, 4, kHeadDim}, rng, DType::f64);
  memory.append(old_k, old_v);
  // A new document starts in row 0: row 0 retrieves nothing, row 1 is unchanged.
  const std::vector<double> both = retrieval.mix(q, local, memory).to_vector();
  memory.forget_row(0);
  CHECK(memory.valid_from() == std::vector<std::int64_t>{4, 0});
  const std::vector<double> forgotten = retrieval.mix(q, local, memory).to_vector();
  const std::vector<double> local_values = local.to_vector();
  const std::size_t row = static_cast<std::size_t>(kHeads * kLen * kHeadDim);
  for (std::size_t i = 0; i < row; ++i) CHECK(forgotten[i] == local_values[i]);
  for (std::size_t i = row; i < 2 * row; ++i) CHECK(forgotten[i] == both[i]);

  // 4 more pairs: the memory keeps the last 6; row 0 may retrieve only the 4 new ones.
  const Tensor new_k = randn({kBatch, kHeads, 4, kHeadDim}, rng, DType::f64);
  const Tensor new_v = randn({kBatch, kHeads, 4, kHeadDim}, rng, DType::f64);
  memory.append(new_k, new_v);
  CHECK(memory.length() == kMemory);
  CHECK(memory.valid_from() == std::vector<std::int64_t>{2, 0});
  const std::vector<double> mixed = retrieval.mix(q, local, memory).to_vector();
  KnnMemory only_new(kMemory);
  only_new.append(new_k, new_v);
  const std::vector<double> expected = retrieval.mix(q, local, only_new).to_vector();
  for (std::size_t i = 0; i < row; ++i) CHECK(mixed[i] == Approx(expected[i]).margin(1e-12));

  memory.clear();
  CHECK(memory.length() == 0);
  CHECK(memory.valid_from().empty());
  memory.append(new_k, new_v);
  CHECK_THROWS_WITH(memory.append(randn({1, kHeads, 4, kHeadDim}, rng, DType::f64),
                                  randn({1, kHeads, 4, kHeadDim}, rng, DType::f64)),
                    Catch::Contains("batch size must stay the same"));
}
