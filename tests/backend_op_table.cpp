// The entries of the op table (backend_ops.h). Tolerances are against the exact
// (f64) result, so they do not depend on the backend: gathers, copies and max are
// exact (0); one rounding per element gives about 1e-7 in f32; sums of n terms
// about sqrt(n) times that. f64 runs on other backends differ from the CPU only
// in the order of their sums.
#include <fmt/format.h>

#include <cmath>
#include <limits>

#include "autograd/ops/dropout.h"
#include "autograd/ops/elementwise.h"
#include "autograd/ops/embedding.h"
#include "autograd/ops/flash_attention.h"
#include "autograd/ops/linear.h"
#include "autograd/ops/loss.h"
#include "autograd/ops/mask.h"
#include "autograd/ops/matmul.h"
#include "autograd/ops/norm.h"
#include "autograd/ops/reduce.h"
#include "autograd/ops/relative.h"
#include "autograd/ops/rotary.h"
#include "autograd/ops/shape.h"
#include "autograd/ops/softmax.h"
#include "optim/adam.h"
#include "optim/clip.h"
#include "optim/sgd.h"
#include "tests/backend_ops.h"

namespace relpos::backend_ops {
namespace {

// ---- input generators: f64 tensors holding f32-representable values ----

Tensor normal(const Shape& shape, Rng& rng, double scale = 1.0) {
  return randn(shape, rng, DType::f32, scale).to(DType::f64);
}

Tensor uniform(const Shape& shape, Rng& rng, double low, double high) {
  return rand_uniform(shape, rng, low, high, DType::f32).to(DType::f64);
}

// Uniform integers in [low, high], stored in `dtype`.
Tensor integers(const Shape& shape, Rng& rng, std::int64_t low, std::int64_t high,
                DType dtype = DType::i64) {
  std::vector<double> values(static_cast<std::size_t>(numel_of(shape)));
  for (double& v : values)
    v = static_cast<double>(
        low + static_cast<std::int64_t>(rng.below(static_cast<std::uint64_t>(high - low + 1))));
  return Tensor::from_data(values, shape, dtype);
}

Input constant(const Tensor& t) { return {t, false}; }

using Inputs = std::vector<Input>;
using Args = const std::vector<Tensor>&;

// ---- elementwise, copies, shapes ----

void add_elementwise(std::vector<OpCase>& table) {
  const struct {
    const char* name;
    Tensor (*op)(const Tensor&, const Tensor&);
  } binaries[] = {{"add", add}, {"sub", sub}, {"mul", mul}, {"div", div}};
  for (const auto& b : binaries) {
    // a: an offset view broadcast over axis 1; b: a transposed view broadcast over axis 0.
    table.push_back(
        {.name = fmt::format("{} (4, 1, 6)[offset 1] . (6, 5)ᵀ", b.name),
         .inputs = [](Rng& rng) -> Inputs {
           return {{normal({4, 1, 7}, rng)}, {uniform({6, 5}, rng, 0.5, 2.0)}};
         },
         .forward = [f = b.op](Args x) { return f(slice(x[0], -1, 1, 7), transpose(x[1], 0, 1)); },
         .f32_tolerance = 1e-6,
         .f64_tolerance = 1e-14});
  }

  const struct {
    const char* name;
    Tensor (*op)(const Tensor&);
    bool positive;  // log, sqrt and pow need x > 0
  } unaries[] = {
      {"neg", [](const Tensor& x) { return neg(x); }, false},
      {"exp", [](const Tensor& x) { return exp(x); }, false},
      {"log", [](const Tensor& x) { return log(x); }, true},
      {"sqrt", [](const Tensor& x) { return sqrt(x); }, true},
      {"tanh", [](const Tensor& x) { return tanh(x); }, false},
      {"relu", [](const Tensor& x) { return relu(x); }, false},
      {"gelu tanh", [](const Tensor& x) { return gelu(x, GeluApproximation::tanh); }, false},
      {"gelu erf", [](const Tensor& x) { return gelu(x, GeluApproximation::erf); }, false},
      {"add_scalar 0.7", [](const Tensor& x) { return add_scalar(x, 0.7); }, false},
      {"mul_scalar -1.3", [](const Tensor& x) { return mul_scalar(x, -1.3); }, false},
      {"pow_scalar 2.5", [](const Tensor& x) { return pow_scalar(x, 2.5); }, true},
  };
  for (const auto& u : unaries) {
    table.push_back(
        {.name = fmt::format("{} (37, 29)", u.name),
         .inputs = [positive = u.positive](Rng& rng) -> Inputs {
           return {{positive ? uniform({37, 29}, rng, 0.25, 3.0) : normal({37, 29}, rng, 2.0)}};
         },
         .forward = [op = u.op](Args x) { return op(x[0]); },
         .f32_tolerance = 1e-6,
         .f64_tolerance = 1e-14});
  }

  table.push_back({.name = "where u8 (4, 1, 6) ? (4, 5, 6) : ()",
                   .inputs = [](Rng& rng) -> Inputs {
                     return {constant(integers({4, 1, 6}, rng, 0, 1, DType::u8)),
                             {normal({4, 5, 6}, rng)},
                             {normal({}, rng)}};
                   },
                   .forward = [](Args x) { return where(x[0], x[1], x[2]); },
                   .f32_tolerance = 1e-6,
                   .f64_tolerance = 1e-14});
  table.push_back({.name = "reshape of permute (4, 5, 6) -> (6, 20): a strided copy",
                   .inputs = [](Rng& rng) -> Inputs {
                     return {{normal({4, 5, 6}, rng)}};
                   },
                   .forward =
                       [](Args x) {
                         return reshape(permute(x[0], {2, 0, 1}), {6, 20});
                       },
                   .f32_tolerance = 0.0,
                   .f64_tolerance = 0.0});
  table.push_back({.name = "concat (3, 4) with slice step 2 of (3, 9)",
                   .inputs = [](Rng& rng) -> Inputs {
                     return {{normal({3, 4}, rng)}, {normal({3, 9}, rng)}};
                   },
                   .forward =
                       [](Args x) {
                         return concat({x[0], slice(x[1], 1, 1, 9, 2)}, 1);  // (3, 8)
                       },
                   .f32_tolerance = 0.0,
                   .f64_tolerance = 0.0});
}

// ---- reductions ----

void add_reductions(std::vector<OpCase>& table) {
  const struct {
    Shape shape;
    std::vector<std::int64_t> axes;
  } sums[] = {{{7, 1000}, {-1}}, {{6, 50, 9}, {1}}, {{2, 1000, 7}, {0, 2}}, {{33, 200}, {0, 1}}};
  for (const auto& s : sums) {
    table.push_back(
        {.name = fmt::format("sum {} over {}", to_string(s.shape), to_string(s.axes)),
         .inputs = [shape = s.shape](Rng& rng) -> Inputs { return {{normal(shape, rng)}}; },
         .forward = [axes = s.axes](Args x) { return sum(x[0], axes); },
         // a sum of n N(0, 1) terms is about sqrt(n) times smaller than
         // the sum of their sizes, which bounds its rounding
         .f32_tolerance = 1e-4,
         .f64_tolerance = 1e-13});
  }
  table.push_back({.name = "mean (6, 50, 9) over [0, 2]",
                   .inputs = [](Rng& rng) -> Inputs {
                     return {{normal({6, 50, 9}, rng)}};
                   },
                   .forward =
                       [](Args x) {
                         return mean(x[0], {0, 2});
                       },
                   .f32_tolerance = 1e-5,
                   .f64_tolerance = 1e-13});

  // Values in {-3, ..., 3}: many ties, so the first maximum must win everywhere.
  const struct {
    Shape shape;
    std::int64_t axis;
  } maxima[] = {{{7, 1000}, -1}, {{40, 3}, 1}, {{6, 50, 9}, 1}, {{1, 130, 33}, 1}};
  for (const auto& m : maxima) {
    table.push_back({.name = fmt::format("max {} over {}, with ties", to_string(m.shape), m.axis),
                     .inputs = [shape = m.shape](Rng& rng) -> Inputs {
                       return {{integers(shape, rng, -3, 3, DType::f64)}};
                     },
                     .forward = [axis = m.axis](Args x) { return max(x[0], axis); },
                     .f32_tolerance = 0.0,
                     .f64_tolerance = 0.0});
  }
  // The CPU's rules: the first NaN wins; a row of -inf gives -inf at index 0.
  table.push_back({.name = "max (8, 40) over 1, with NaN and -inf rows",
                   .inputs = [](Rng&) -> Inputs {
                     const double nan = std::nan(""), inf = std::numeric_limits<double>::infinity();
                     const std::vector<std::vector<double>> heads = {
                         {nan, 1, 2}, {1, nan, 2},  {-inf, -inf, -inf}, {-inf, nan, -inf},
                         {2, 2, 1},   {-inf, 5, 5}, {nan, nan, nan},    {3, 9, nan, 9, nan}};
                     const std::int64_t rows = 8, n = 40;
                     std::vector<double> values(rows * n, -5.0);
                     for (std::int64_t r = 0; r < rows; ++r) {
                       if (r == 2 || r == 3) std::fill_n(values.begin() + r * n, n, -inf);
                       for (std::size_t j = 0; j < heads[r].size(); ++j)
                         values[r * n + j] = heads[r][j];
                     }
                     return {{Tensor::from_data(values, {rows, n}, DType::f64)}};
                   },
                   .forward = [](Args x) { return max(x[0], 1); },
                   .f32_tolerance = 0.0,
                   .f64_tolerance = 0.0});
}

// ---- softmax, loss, norms ----

void add_softmax_loss_norm(std::vector<OpCase>& table) {
  for (const bool log : {false, true}) {
    for (const Shape& shape : {Shape{5, 1}, Shape{9, 7}, Shape{3, 300}, Shape{2, 2049}}) {
      table.push_back(
          {.name = fmt::format("{} {}", log ? "log_softmax" : "softmax", to_string(shape)),
           .inputs = [shape](Rng& rng) -> Inputs { return {{normal(shape, rng, 3.0)}}; },
           .forward = [log](Args x) { return log ? log_softmax(x[0]) : softmax(x[0]); },
           .f32_tolerance = 1e-5,
           .f64_tolerance = 1e-13});
    }
  }
  for (const std::int64_t classes : {1, 10, 257}) {
    for (const Reduction reduction : {Reduction::mean, Reduction::none}) {
      table.push_back(
          {.name = fmt::format("cross_entropy (37, {}), every 5th row ignored, {}", classes,
                               reduction == Reduction::mean ? "mean" : "none"),
           .inputs = [classes](Rng& rng) -> Inputs {
             Tensor targets = integers({37}, rng, 0, classes - 1);
             for (std::int64_t r = 3; r < 37; r += 5) targets.data<std::int64_t>()[r] = -100;
             return {{normal({37, classes}, rng, 2.0)}, constant(targets)};
           },
           .forward = [reduction](Args x) { return cross_entropy(x[0], x[1], -100, reduction); },
           .f32_tolerance = 1e-5,
           .f64_tolerance = 1e-13});
    }
  }
  for (const Shape& shape : {Shape{9, 7}, Shape{4, 33}, Shape{300, 64}}) {
    const std::int64_t n = shape[1];
    table.push_back({.name = fmt::format("layer_norm {} with gamma, beta", to_string(shape)),
                     .inputs = [shape, n](Rng& rng) -> Inputs {
                       return {{normal(shape, rng, 2.0)}, {normal({n}, rng)}, {normal({n}, rng)}};
                     },
                     .forward = [](Args x) { return layer_norm(x[0], x[1], x[2]); },
                     .f32_tolerance = 1e-5,
                     .f64_tolerance = 1e-12});
    table.push_back({.name = fmt::format("layer_norm {} without affine part", to_string(shape)),
                     .inputs = [shape](Rng& rng) -> Inputs { return {{normal(shape, rng, 2.0)}}; },
                     .forward = [](Args x) { return layer_norm(x[0], Tensor(), Tensor()); },
                     .f32_tolerance = 1e-5,
                     .f64_tolerance = 1e-12});
    table.push_back({.name = fmt::format("rms_norm {} with gamma", to_string(shape)),
                     .inputs = [shape, n](Rng& rng) -> Inputs {
                       return {{normal(shape, rng, 2.0)}, {normal({n}, rng)}};
                     },
                     .forward = [](Args x) { return rms_norm(x[0], x[1]); },
                     .f32_tolerance = 1e-5,
                     .f64_tolerance = 1e-12});
  }
}

// ---- embedding, dropout, matmul, linear ----

void add_embedding_dropout_matmul(std::vector<OpCase>& table) {
  const struct {
    std::int64_t vocab, dim;
    Shape indices;
  } embeddings[] = {{50, 24, {3, 40}}, {1, 5, {7}}, {70000, 3, {500}}, {8, 1, {2, 2, 2}}};
  for (const auto& e : embeddings) {
    table.push_back(
        {.name = fmt::format("embedding ({}, {}) by {}", e.vocab, e.dim, to_string(e.indices)),
         .inputs = [e](Rng& rng) -> Inputs {
           return {{normal({e.vocab, e.dim}, rng)},
                   constant(integers(e.indices, rng, 0, e.vocab - 1))};
         },
         .forward = [](Args x) { return embedding(x[0], x[1]); },
         .f32_tolerance = 1e-6,
         .f64_tolerance = 1e-14});
  }
  for (const double p : {0.1, 0.5, 0.9}) {
    table.push_back({.name = fmt::format("dropout (100, 37) p={}", p),
                     .inputs = [](Rng& rng) -> Inputs {
                       return {{normal({100, 37}, rng)}};
                     },
                     .forward = [p](Args x) { return dropout(x[0], p, 1234, 99991, true); },
                     .f32_tolerance = 1e-6,
                     .f64_tolerance = 1e-15});
  }

  const struct {
    const char* name;
    Shape a, b;
    bool trans_a, trans_b;
  } products[] = {{"(17, 31) x (31, 23)", {17, 31}, {31, 23}, false, false},
                  {"(3, 17, 31) x shared (31, 23)", {3, 17, 31}, {31, 23}, false, false},
                  {"(3, 31, 17)ᵀ x (3, 31, 23)", {3, 31, 17}, {3, 31, 23}, true, false},
                  {"(2, 17, 31) x (2, 23, 31)ᵀ", {2, 17, 31}, {2, 23, 31}, false, true},
                  {"(31, 17)ᵀ x (23, 31)ᵀ", {31, 17}, {23, 31}, true, true}};
  for (const auto& m : products) {
    table.push_back({.name = fmt::format("matmul {}", m.name),
                     .inputs = [m](Rng& rng) -> Inputs {
                       return {{normal(m.a, rng)}, {normal(m.b, rng)}};
                     },
                     .forward =
                         [m](Args x) {
                           return matmul(m.trans_a ? transpose(x[0], -1, -2) : x[0],
                                         m.trans_b ? transpose(x[1], -1, -2) : x[1]);
                         },
                     .f32_tolerance = 1e-5,
                     .f64_tolerance = 1e-13});
  }
  for (const Activation activation : {Activation::none, Activation::gelu_tanh}) {
    table.push_back(
        {.name = fmt::format("linear (2, 5, 16) -> 24, bias, {}",
                             activation == Activation::none ? "no activation" : "gelu"),
         .inputs = [](Rng& rng) -> Inputs {
           return {{normal({2, 5, 16}, rng)}, {normal({24, 16}, rng, 0.3)}, {normal({24}, rng)}};
         },
         .forward = [activation](Args x) { return linear(x[0], x[1], x[2], activation); },
         .f32_tolerance = 1e-5,
         .f64_tolerance = 1e-13});
  }
}

// ---- relative positions and attention ----

constexpr std::int64_t kBatch = 2, kHeads = 3;

struct Lengths {
  std::int64_t q_len, k_len, clip;
};

// Lk > Lq is a memory of Lk - Lq earlier keys; clip 0 leaves a single bin.
constexpr Lengths kLengths[] = {{5, 5, 2}, {5, 9, 2}, {4, 11, 0}, {3, 40, 6}};

std::string lengths_name(const Lengths& l) {
  return fmt::format("Lq={} Lk={} k={}", l.q_len, l.k_len, l.clip);
}

void add_relative(std::vector<OpCase>& table) {
  for (const Lengths& l : kLengths) {
    const std::string at = lengths_name(l);
    table.push_back({.name = "distance_expand " + at,
                     .inputs = [l](Rng& rng) -> Inputs {
                       return {{normal({kHeads, l.q_len + l.k_len - 1}, rng)}};
                     },
                     .forward = [l](Args x) { return distance_expand(x[0], l.q_len, l.k_len); },
                     .f32_tolerance = 1e-6,
                     .f64_tolerance = 1e-14});
    table.push_back({.name = "clipped_gather " + at,
                     .inputs = [l](Rng& rng) -> Inputs {
                       return {{normal({kBatch, kHeads, l.q_len, 2 * l.clip + 1}, rng)}};
                     },
                     .forward = [l](Args x) { return clipped_gather(x[0], l.k_len, l.clip); },
                     .f32_tolerance = 1e-6,
                     .f64_tolerance = 1e-14});
    table.push_back({.name = "clipped_bin " + at,
                     .inputs = [l](Rng& rng) -> Inputs {
                       return {{normal({kBatch, kHeads, l.q_len, l.k_len}, rng)}};
                     },
                     .forward = [l](Args x) { return clipped_bin(x[0], l.clip); },
                     .f32_tolerance = 1e-6,
                     .f64_tolerance = 1e-14});
    table.push_back({.name = "rel_shift " + at,
                     .inputs = [l](Rng& rng) -> Inputs {
                       return {{normal({kBatch, kHeads, l.q_len, l.k_len}, rng)}};
                     },
                     .forward = [](Args x) { return rel_shift(x[0]); },
                     .f32_tolerance = 0.0,
                     .f64_tolerance = 0.0});
  }
  table.push_back({.name = "bucket_gather (32, 6) by i64 (77)",
                   .inputs = [](Rng& rng) -> Inputs {
                     return {{normal({32, 6}, rng)}, constant(integers({77}, rng, 0, 27))};
                   },
                   .forward = [](Args x) { return bucket_gather(x[0], x[1]); },
                   .f32_tolerance = 1e-6,
                   .f64_tolerance = 1e-14});

  const struct {
    bool bias, clipped, shifted, causal;
  } term_sets[] = {{false, false, false, false}, {false, false, false, true},
                   {true, false, false, false},  {true, false, false, true},
                   {false, true, false, true},   {false, false, true, false},
                   {true, true, true, true},     {true, true, false, false}};
  for (const Lengths& l : kLengths) {
    for (const auto& t : term_sets) {
      // With k = 0 the clipped term adds one logit to a whole row, which softmax
      // ignores: its exact gradient is 0, so an f32 result is rounding alone.
      if (t.clipped && l.clip == 0) continue;
      table.push_back({.name = fmt::format("relative_softmax {}{}{}{}{}", lengths_name(l),
                                           t.bias ? " bias" : "", t.clipped ? " clipped" : "",
                                           t.shifted ? " shifted" : "", t.causal ? " causal" : ""),
                       .inputs = [l, t](Rng& rng) -> Inputs {
                         Inputs in{{normal({kBatch, kHeads, l.q_len, l.k_len}, rng, 2.0)}};
                         if (t.bias)
                           in.push_back({normal({kHeads, l.q_len + l.k_len - 1}, rng, 2.0)});
                         if (t.clipped)
                           in.push_back({normal({kBatch, kHeads, l.q_len, 2 * l.clip + 1}, rng)});
                         if (t.shifted)
                           in.push_back({normal({kBatch, kHeads, l.q_len, l.k_len}, rng)});
                         return in;
                       },
                       .forward =
                           [l, t](Args x) {
                             RelativeTerms terms;
                             std::size_t next = 1;
                             if (t.bias) terms.distance_bias = x[next++];
                             if (t.clipped) terms.clipped = x[next++];
                             if (t.shifted) terms.shifted = x[next++];
                             terms.clip = l.clip;
                             terms.scale = 0.35;
                             terms.term_scale = 0.7;
                             terms.causal = t.causal;
                             return relative_softmax(x[0], terms);
                           },
                       .f32_tolerance = 1e-5,
                       .f64_tolerance = 1e-13});
    }
  }
}

void add_attention(std::vector<OpCase>& table) {
  constexpr std::int64_t d = 8, clip = 3;
  for (const bool causal : {false, true}) {
    // Lq 13, Lk 21 over 4-query and 8-key tiles: several tiles, the last ones partial.
    table.push_back(
        {.name = fmt::format("flash_attention Lq=13 Lk=21 D={} every term{}, small tiles", d,
                             causal ? " (with XL), causal" : ""),
         .kernel = Kernel::flash_attention,
         .inputs = [causal](Rng& rng) -> Inputs {
           Inputs in{{normal({kBatch, kHeads, 13, d}, rng)},
                     {normal({kBatch, kHeads, 21, d}, rng)},
                     {normal({kBatch, kHeads, 21, d}, rng)},
                     {normal({kHeads, 13 + 21 - 1}, rng)},
                     {normal({kBatch, kHeads, 13, 2 * clip + 1}, rng)}};
           if (causal) {
             in.push_back({normal({kBatch, kHeads, 13, d}, rng)});
             in.push_back({normal({kHeads, 21, d}, rng, 0.5)});
           }
           return in;
         },
         .forward =
             [causal](Args x) {
               FlashTerms terms;
               terms.distance_bias = x[3];
               terms.clipped = x[4];
               terms.clip = clip;
               terms.value_bins = true;
               if (causal) {
                 terms.xl_query = x[5];
                 terms.xl_r = x[6];
               }
               terms.scale = 0.35;
               terms.term_scale = 0.6;
               terms.causal = causal;
               terms.query_tile = 4;
               terms.key_tile = 8;
               return flash_attention(x[0], x[1], x[2], terms);
             },
         .f32_tolerance = 1e-5,
         .f64_tolerance = 1e-12});
  }
  table.push_back({.name = "rotary (2, 3, 7, 8) at positions 5..11",
                   .kernel = Kernel::rotary,
                   .falls_back = true,
                   .inputs = [](Rng& rng) -> Inputs {
                     std::vector<double> c, s;
                     for (int p = 5; p < 12; ++p)
                       for (int m = 0; m < 4; ++m) {
                         const double angle = p * std::pow(10000.0, -m / 4.0);
                         c.push_back(static_cast<float>(std::cos(angle)));
                         s.push_back(static_cast<float>(std::sin(angle)));
                       }
                     return {{normal({2, 3, 7, 8}, rng)},
                             constant(Tensor::from_data(c, {7, 4}, DType::f64)),
                             constant(Tensor::from_data(s, {7, 4}, DType::f64))};
                   },
                   .forward = [](Args x) { return rotary(x[0], x[1], x[2]); },
                   .f32_tolerance = 1e-6,
                   .f64_tolerance = 1e-14});

  // Every op family in one causal attention block, forward and backward.
  constexpr std::int64_t batch = 2, len = 16, vocab = 40, dim = 32;
  table.push_back(
      {.name = "attention block: embedding .. cross_entropy (2, 16), D=32",
       .inputs = [](Rng& rng) -> Inputs {
         Tensor targets = integers({batch, len}, rng, 0, vocab - 1);
         targets.data<std::int64_t>()[3] = targets.data<std::int64_t>()[20] = -100;
         return {{normal({vocab, dim}, rng, 0.5)},
                 {uniform({dim}, rng, 0.5, 1.5)},
                 {normal({dim}, rng, 0.1)},
                 {normal({dim, dim}, rng, 0.2)},
                 {normal({dim, dim}, rng, 0.2)},
                 {uniform({2 * dim}, rng, 0.5, 1.5)},
                 {normal({2 * dim, vocab}, rng, 0.2)},
                 constant(integers({batch, len}, rng, 0, vocab - 1)),
                 constant(targets)};
       },
       .forward =
           [](Args p) {
             const Tensor x = embedding(p[0], p[7]);                 // (B, L, D)
             const Tensor h = layer_norm(x, p[1], p[2]);             // (B, L, D)
             const Tensor q = matmul(h, p[3]), k = matmul(h, p[4]);  // (B, L, D)
             const Tensor scores = matmul(q, transpose(k, -1, -2)) * (1.0 / std::sqrt(double(dim)));
             const Tensor attn = softmax(masked_fill(scores, causal_mask(len, len, x.device()),
                                                     -std::numeric_limits<double>::infinity()));
             const Tensor ctx = matmul(attn, h);  // (B, L, D)
             const Tensor mixed = concat({gelu(ctx), dropout(tanh(ctx), 0.25, 7, 0, true)}, -1);
             const Tensor logits = matmul(rms_norm(mixed, p[5]), p[6]);  // (B, L, V)
             const Tensor peak = mean(max(log_softmax(logits), -1));     // ()
             return cross_entropy(logits, p[8]) - peak * 0.1;
           },
       .f32_tolerance = 1e-5,
       .f64_tolerance = 1e-12});
}

// ---- optimizer steps (forward only) ----

// Two steps of `make`'s optimizer over one parameter; returns the parameter and
// every state tensor, flattened into one vector.
template <class MakeOptimizer>
Tensor two_steps(Args x, const MakeOptimizer& make) {
  Tensor param = x[0].clone();
  param.set_requires_grad(true);
  const std::unique_ptr<Optimizer> optimizer = make(std::vector<NamedParameter>{{"p", param}});
  param.set_grad(x[1]);
  optimizer->step(0.1);
  param.set_grad(x[2]);
  optimizer->step(0.05);
  std::vector<Tensor> parts{reshape(param.detach(), {-1})};
  for (const auto& [key, state] : optimizer->state())
    if (is_floating(state.dtype())) parts.push_back(reshape(state, {-1}));
  return concat(parts, 0);
}

Inputs parameter_and_two_gradients(Rng& rng) {
  return {constant(normal({33, 17}, rng)), constant(normal({33, 17}, rng)),
          constant(normal({33, 17}, rng, 1e-3))};
}

void add_optimizers(std::vector<OpCase>& table) {
  const SgdOptions sgd_options[] = {{0.0, false, 0.01}, {0.9, true, 0.01}, {0.9, false, 0.0}};
  for (const SgdOptions& o : sgd_options) {
    table.push_back({.name = fmt::format("sgd step x2 (33, 17) momentum={}{} weight_decay={}",
                                         o.momentum, o.nesterov ? " nesterov" : "", o.weight_decay),
                     .kernel = Kernel::sgd_update,
                     .inputs = parameter_and_two_gradients,
                     .forward =
                         [o](Args x) {
                           return two_steps(x, [&](std::vector<NamedParameter> p) {
                             return std::make_unique<Sgd>(std::move(p), o);
                           });
                         },
                     .f32_tolerance = 1e-6,
                     .f64_tolerance = 1e-15,
                     .backward = false});
  }
  for (const bool decoupled : {false, true}) {
    table.push_back(
        {.name = fmt::format("{} step x2 (33, 17) weight_decay=0.01", decoupled ? "adamw" : "adam"),
         .kernel = Kernel::adam_update,
         .inputs = parameter_and_two_gradients,
         .forward =
             [decoupled](Args x) {
               const AdamOptions o{0.9, 0.999, 1e-8, 0.01};
               return two_steps(x, [&](std::vector<NamedParameter> p) {
                 return decoupled
                            ? std::unique_ptr<Optimizer>(std::make_unique<AdamW>(std::move(p), o))
                            : std::make_unique<Adam>(std::move(p), o);
               });
             },
         .f32_tolerance = 1e-6,
         .f64_tolerance = 1e-15,
         .backward = false});
  }
  table.push_back(
      {.name = "clip_grad_norm of (33, 17) and (40001) to 0.5",
       .inputs = [](Rng& rng) -> Inputs {
         return {constant(normal({33, 17}, rng)), constant(normal({40001}, rng))};
       },
       .forward =
           [](Args x) {
             std::vector<NamedParameter> params;
             for (const Tensor& g : x) {
               Tensor p = Tensor::zeros(g.shape(), g.dtype(), g.device());
               p.set_grad(g.clone());
               params.push_back({fmt::format("p{}", params.size()), p});
             }
             const double norm = clip_grad_norm(params, 0.5);
             return concat(
                 {Tensor::full({1}, norm, DType::f64).to(x[0].dtype()).to(x[0].device()),
                  reshape(params[0].tensor.grad(), {-1}), reshape(params[1].tensor.grad(), {-1})},
                 0);
           },
       .f32_tolerance = 1e-6,
       .f64_tolerance = 1e-14,
       .backward = false});
}

std::vector<OpCase> build_table() {
  std::vector<OpCase> table;
  add_elementwise(table);
  add_reductions(table);
  add_softmax_loss_norm(table);
  add_embedding_dropout_matmul(table);
  add_relative(table);
  add_attention(table);
  add_optimizers(table);
  return table;
}

}  // namespace

const std::vector<OpCase>& op_table() {
  static const std::vector<OpCase> table = build_table();
  return table;
}

}  // namespace relpos::backend_ops
