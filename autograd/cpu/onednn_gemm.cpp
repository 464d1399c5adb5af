#include "autograd/cpu/onednn_gemm.h"

#include "autograd/cpu/cpu_features.h"
#include "autograd/error.h"

#if RELPOS_HAVE_ONEDNN
#include <algorithm>
#include <cstdint>
#include <dnnl.hpp>
#include <map>
#include <mutex>
#include <optional>
#include <tuple>

#include "autograd/cpu/bf16_round.h"
#include "autograd/cpu/onednn_matmul_primitive.h"
#include "autograd/storage.h"
#endif

namespace relpos {

std::string bf16_unavailable_reason() {
  if (!cpu::onednn_built())
    return "this build has no oneDNN (install libdnnl-dev and configure with -DRELPOS_ONEDNN=ON)";
  if (!cpu::has_avx512_bf16() && !cpu::has_amx_bf16())
    return "this CPU has neither AVX-512-BF16 nor AMX";
  return "";
}

namespace cpu {

#if RELPOS_HAVE_ONEDNN

bool onednn_built() { return true; }

namespace {

using dnnl::memory;

// One operand as stored in memory: `rows` x `cols` (before op()), rows `ld` apart,
// `stride` apart in the batch (0: one matrix shared by the whole batch).
struct Stored {
  std::int64_t rows = 0, cols = 0, ld = 0, stride = 0;
};

Stored stored_a(const GemmArgs& g) {
  return {g.trans_a ? g.k : g.m, g.trans_a ? g.m : g.k, g.lda, g.batch == 1 ? 0 : g.stride_a};
}
Stored stored_b(const GemmArgs& g) {
  return {g.trans_b ? g.n : g.k, g.trans_b ? g.k : g.n, g.ldb, g.batch == 1 ? 0 : g.stride_b};
}

// The (batch, rows of op(x), cols of op(x)) descriptor of a stored operand; a shared
// operand has batch 1, which the matmul broadcasts.
memory::desc operand_desc(const Stored& s, bool transposed, std::int64_t batch,
                          memory::data_type type) {
  const memory::dim b = s.stride == 0 ? 1 : batch;
  const memory::dim bs = s.stride == 0 ? s.rows * s.ld : s.stride;
  if (transposed) return memory::desc({b, s.cols, s.rows}, type, {bs, 1, s.ld});
  return memory::desc({b, s.rows, s.cols}, type, {bs, s.ld, 1});
}

// The same operand rounded to bf16 and packed densely: rows `cols` apart, matrices
// rows*cols apart.
Stored packed(const Stored& s) {
  return {s.rows, s.cols, s.cols, s.stride == 0 ? 0 : s.rows * s.cols};
}

void round_to_bf16(const float* src, const Stored& s, std::int64_t batch, std::uint16_t* dst) {
  const std::int64_t matrices = s.stride == 0 ? 1 : batch;
  const std::int64_t rows = matrices * s.rows, cols = s.cols;
#pragma omp parallel for schedule(static)
  for (std::int64_t r = 0; r < rows; ++r)
    round_row_to_bf16(src + (r / s.rows) * s.stride + (r % s.rows) * s.ld, cols, dst + r * cols);
}

// Everything a primitive depends on.
using Key = std::tuple<bool, bool, bool, std::int64_t, std::int64_t, std::int64_t, std::int64_t,
                       std::int64_t, std::int64_t, std::int64_t, std::int64_t, std::int64_t,
                       std::int64_t, double, double>;

struct Entry {
  dnnl::matmul primitive;
  memory::desc a, b, c;
  std::uint64_t last_use = 0;  // State::uses when it last ran
};

// At most this many primitives are kept: a training step uses a few dozen shapes,
// but sampling or evaluating at many lengths makes new ones for every length, each
// holding memory until the process ends.
constexpr std::size_t kMaxPrimitives = 256;

struct State {
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  dnnl::stream stream{engine};
  std::map<Key, Entry> primitives;
  std::uint64_t uses = 0;
  std::uint64_t made = 0;  // primitives created: one per miss
  std::mutex mutex;
};

// The cached primitive for `key`, made (and the least recently used one dropped when
// the cache is full) on a miss.
template <class Make>
Entry& cached_entry(State& st, const Key& key, Make make) {
  auto found = st.primitives.find(key);
  if (found == st.primitives.end()) {
    if (st.primitives.size() >= kMaxPrimitives)
      st.primitives.erase(std::min_element(
          st.primitives.begin(), st.primitives.end(),
          [](const auto& x, const auto& y) { return x.second.last_use < y.second.last_use; }));
    found = st.primitives.emplace(key, make()).first;
    ++st.made;
  }
  found->second.last_use = ++st.uses;
  return found->second;
}

State& state() {
  static State s;
  return s;
}

thread_local std::uint64_t operand_roundings = 0;

// A bf16 operand of the primitive: `data` itself when it is bf16 already, else its rounding,
// written to `out` when given and otherwise to `scratch`, a block of the tensor allocator
// that lives as long as the caller keeps it. Rounding packs the operand, so `s` becomes
// the packed layout.
const void* bf16_operand(const void* data, bool is_bf16, std::uint16_t* out, Stored& s,
                         std::int64_t batch, std::optional<Storage>& scratch) {
  if (is_bf16) return data;
  if (out == nullptr) {
    const std::int64_t size = (s.stride == 0 ? 1 : batch) * s.rows * s.cols;
    scratch.emplace(static_cast<std::size_t>(size) * sizeof(std::uint16_t), Device::cpu);
    out = static_cast<std::uint16_t*>(scratch->data());
  }
  round_to_bf16(static_cast<const float*>(data), s, batch, out);
  ++operand_roundings;
  s = packed(s);
  return out;
}

Entry make_entry(State& st, const GemmArgs& g, const Stored& a, const Stored& b, bool bf16) {
  const auto in_type = bf16 ? memory::data_type::bf16 : memory::data_type::f32;
  Entry e;
  e.a = operand_desc(a, g.trans_a, g.batch, in_type);
  e.b = operand_desc(b, g.trans_b, g.batch, in_type);
  const memory::dim cs = g.batch == 1 ? g.m * g.ldc : g.stride_c;
  e.c = memory::desc({g.batch, g.m, g.n}, memory::data_type::f32, {cs, g.ldc, 1});
  e.primitive = make_onednn_matmul(st.engine, e.a, e.b, e.c, static_cast<float>(g.alpha),
                                   static_cast<float>(g.beta));
  return e;
}

}  // namespace

std::size_t onednn_cached_primitives() {
  State& st = state();
  const std::lock_guard lock(st.mutex);
  return st.primitives.size();
}

std::uint64_t onednn_primitives_made() {
  State& st = state();
  const std::lock_guard lock(st.mutex);
  return st.made;
}

std::uint64_t onednn_operand_roundings() { return operand_roundings; }

void onednn_gemm(const GemmArgs& g) {
  if (g.dtype != DType::f32) throw InternalError("onednn_gemm: expected f32 operands");
  const bool bf16 = g.precision == Precision::bf16;
  if (bf16) {
    const std::string why = bf16_unavailable_reason();
    require(why.empty(), "train.precision=bf16 is not available: {}", why);
  } else if (g.a_is_bf16 || g.b_is_bf16 || g.a_bf16_out != nullptr || g.b_bf16_out != nullptr) {
    throw InternalError("onednn_gemm: bf16 operands given to an fp32 product");
  }
  Stored a = stored_a(g), b = stored_b(g);
  const void* a_data = g.a;
  const void* b_data = g.b;
  std::optional<Storage> a_scratch, b_scratch;  // freed when the call returns
  if (bf16) {
    a_data = bf16_operand(g.a, g.a_is_bf16, g.a_bf16_out, a, g.batch, a_scratch);
    b_data = bf16_operand(g.b, g.b_is_bf16, g.b_bf16_out, b, g.batch, b_scratch);
  }
  State& st = state();
  const std::lock_guard lock(st.mutex);
  const Key key{bf16,     g.trans_a, g.trans_b, g.batch, g.m,        g.n,     g.k,   a.ld,
                a.stride, b.ld,      b.stride,  g.ldc,   g.stride_c, g.alpha, g.beta};
  const Entry& e = cached_entry(st, key, [&] { return make_entry(st, g, a, b, bf16); });
  memory ma(e.a, st.engine, const_cast<void*>(a_data));
  memory mb(e.b, st.engine, const_cast<void*>(b_data));
  memory mc(e.c, st.engine, g.c);
  e.primitive.execute(st.stream, {{DNNL_ARG_SRC, ma}, {DNNL_ARG_WEIGHTS, mb}, {DNNL_ARG_DST, mc}});
  st.stream.wait();
}

#else

bool onednn_built() { return false; }

std::size_t onednn_cached_primitives() { return 0; }

std::uint64_t onednn_primitives_made() { return 0; }

std::uint64_t onednn_operand_roundings() { return 0; }

void onednn_gemm(const GemmArgs&) {
  fail("train.precision=bf16 is not available: {}", bf16_unavailable_reason());
}

#endif

}  // namespace cpu
}  // namespace relpos
