// GPU vs CPU: fill, strided device copies with dtype conversion, binary ops on
// broadcast (stride-0) and offset views, unary ops and their derivatives, where.
#include <catch2/catch.hpp>

#include "autograd/ops/elementwise.h"
#include "cuda_test_helpers.h"

using namespace relpos;
using namespace relpos::cuda_testing;

namespace {

// The same strided view of a Pair's two tensors.
Pair view_of(const Pair& p, const Shape& shape, const Shape& strides, std::int64_t offset) {
  return {Tensor::view_of(p.host, shape, strides, offset),
          Tensor::view_of(p.device, shape, strides, offset)};
}

Pair broadcast(const Pair& p, const Shape& shape) {
  return {broadcast_view(p.host, shape), broadcast_view(p.device, shape)};
}

}  // namespace

TEST_CASE("fill writes every element of every dtype", "[cuda]") {
  for (DType dtype : {DType::f32, DType::f64, DType::i64, DType::u8}) {
    INFO(name_of(dtype));
    Pair t = poisoned_pair({3, 1001}, dtype);
    cpu().fill(t.host, 5.0);
    gpu().fill(t.device, 5.0);
    require_identical(t.device, t.host);
  }
}

TEST_CASE("device copy follows strides, offsets and broadcast sources", "[cuda]") {
  Rng rng(11);
  Pair src = randn_pair({4, 5, 6}, rng);  // 120 elements
  SECTION("transposed source") {
    Pair view = view_of(src, {6, 5, 4}, {1, 6, 30}, 0);
    Pair out = poisoned_pair({6, 5, 4});
    cpu().copy(out.host, view.host);
    gpu().copy(out.device, view.device);
    require_identical(out.device, out.host);
  }
  SECTION("offset source with a stride-0 axis") {
    Pair view = view_of(src, {3, 4, 6}, {0, 30, 1}, 5);
    Pair out = poisoned_pair({3, 4, 6});
    cpu().copy(out.host, view.host);
    gpu().copy(out.device, view.device);
    require_identical(out.device, out.host);
  }
  SECTION("transposed destination") {
    Pair base = poisoned_pair({6, 5, 4});
    Pair dst = view_of(base, {4, 5, 6}, {1, 4, 20}, 0);
    cpu().copy(dst.host, src.host);
    gpu().copy(dst.device, src.device);
    require_identical(base.device, base.host);
  }
}

TEST_CASE("device copy converts between every pair of dtypes", "[cuda]") {
  Rng rng(12);
  const DType all[] = {DType::f32, DType::f64, DType::i64, DType::u8};
  for (DType from : all) {
    for (DType to : all) {
      INFO(name_of(from) << " -> " << name_of(to));
      Pair src = integer_pair({7, 9}, rng, 0, 200, from);  // exact in every dtype
      Pair src_t = view_of(src, {9, 7}, {1, 9}, 0);
      Pair out = poisoned_pair({9, 7}, to);
      cpu().copy(out.host, src_t.host);
      gpu().copy(out.device, src_t.device);
      require_identical(out.device, out.host);
    }
  }
}

TEST_CASE("binary ops on broadcast, transposed and offset views", "[cuda]") {
  Rng rng(13);
  const Shape shape{4, 5, 6};
  Pair a_storage = randn_pair({1 + 4 * 6}, rng);
  Pair a = view_of(a_storage, {4, 1, 6}, {6, 6, 1}, 1);  // offset 1, broadcast over axis 1
  Pair b_storage = uniform_pair({6, 5}, rng, 0.5, 2.0);   // away from 0 for div
  Pair b = view_of(b_storage, {5, 6}, {1, 5}, 0);         // transposed
  for (BinaryOp op : {BinaryOp::add, BinaryOp::sub, BinaryOp::mul, BinaryOp::div}) {
    INFO("op " << static_cast<int>(op));
    Pair va = broadcast(a, shape), vb = broadcast(b, shape);
    Pair out = poisoned_pair(shape);
    cpu().binary(op, va.host, vb.host, out.host);
    gpu().binary(op, va.device, vb.device, out.device);
    require_match(out);
  }
}

TEST_CASE("binary ops in f64 and on rank-0 operands", "[cuda]") {
  Rng rng(14);
  Pair a = randn_pair({3, 8}, rng, 1.0, DType::f64);
  Pair s = randn_pair({}, rng, 1.0, DType::f64);
  Pair vs = broadcast(s, {3, 8});
  Pair out = poisoned_pair({3, 8}, DType::f64);
  cpu().binary(BinaryOp::mul, a.host, vs.host, out.host);
  gpu().binary(BinaryOp::mul, a.device, vs.device, out.device);
  require_match(out, 1.0, 1e-15);
}

namespace {

struct UnaryCase {
  UnaryOp op;
  double param;
  bool positive_input;  // log, sqrt and pow need x > 0
};

const UnaryCase kUnaryCases[] = {
    {UnaryOp::neg, 0.0, false},       {UnaryOp::exp, 0.0, false},
    {UnaryOp::log, 0.0, true},        {UnaryOp::sqrt, 0.0, true},
    {UnaryOp::tanh, 0.0, false},      {UnaryOp::relu, 0.0, false},
    {UnaryOp::gelu_tanh, 0.0, false}, {UnaryOp::gelu_erf, 0.0, false},
    {UnaryOp::add_scalar, 0.7, false}, {UnaryOp::mul_scalar, -1.3, false},
    {UnaryOp::pow_scalar, 2.5, true},
};

Pair unary_input(const UnaryCase& c, Rng& rng, DType dtype) {
  return c.positive_input ? uniform_pair({37, 29}, rng, 0.25, 3.0, dtype)
                          : randn_pair({37, 29}, rng, 2.0, dtype);
}

}  // namespace

TEST_CASE("unary ops and their derivatives", "[cuda]") {
  Rng rng(15);
  for (DType dtype : {DType::f32, DType::f64}) {
    const double rtol = dtype == DType::f32 ? kRtol : 1e-13;
    for (const UnaryCase& c : kUnaryCases) {
      INFO(name_of(dtype) << " op " << static_cast<int>(c.op));
      Pair x = unary_input(c, rng, dtype);
      Pair y = poisoned_pair(x.host.shape(), dtype);
      cpu().unary(c.op, x.host, y.host, c.param);
      gpu().unary(c.op, x.device, y.device, c.param);
      require_match(y, 1.0, rtol);

      Pair y_ref = pair_of(y.host);  // the same y on both sides
      Pair grad_y = randn_pair(x.host.shape(), rng, 1.0, dtype);
      Pair grad_x = poisoned_pair(x.host.shape(), dtype);
      cpu().unary_backward(c.op, x.host, y_ref.host, grad_y.host, grad_x.host, c.param);
      gpu().unary_backward(c.op, x.device, y_ref.device, grad_y.device, grad_x.device, c.param);
      require_match(grad_x, 1.0, rtol);
    }
  }
}

TEST_CASE("unary in place (out aliases x), as mean() uses it", "[cuda]") {
  Rng rng(16);
  Pair x = randn_pair({1000}, rng);
  cpu().unary(UnaryOp::mul_scalar, x.host, x.host, 0.25);
  gpu().unary(UnaryOp::mul_scalar, x.device, x.device, 0.25);
  require_identical(x.device, x.host);
}

TEST_CASE("where with a broadcast mask and a broadcast scalar", "[cuda]") {
  Rng rng(17);
  const Shape shape{4, 5, 6};
  Pair mask = integer_pair({4, 1, 6}, rng, 0, 1, DType::u8);
  Pair a = randn_pair(shape, rng);
  Pair b = randn_pair({}, rng);
  Pair vm = broadcast(mask, shape), va = broadcast(a, shape), vb = broadcast(b, shape);
  Pair out = poisoned_pair(shape);
  cpu().where(vm.host, va.host, vb.host, out.host);
  gpu().where(vm.device, va.device, vb.device, out.device);
  require_identical(out.device, out.host);
}
