// Optimizer kernels on the CPU: the Adam/AdamW and SGD updates and global-norm clipping.
// Each call runs one parallel region over the elements of all its tensors together (a
// step's many small parameters would otherwise start one region each, or none): the
// concatenated element range is cut into one contiguous piece per thread. Every element is
// independent (update, scaling) or summed in fixed chunks (norm), so results do not depend
// on the thread count. The FMAs are written out (std::fma) where GCC used to contract
// them, so these bits are both the CPU's historical ones and the ones the CUDA kernels
// reproduce.
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "autograd/cpu/cpu_backend.h"

namespace relpos {
namespace {

// Below this many elements a parallel region costs more than it saves.
constexpr std::int64_t kParallelThreshold = 32768;
// The squares of a gradient are summed in chunks of this many elements.
constexpr std::int64_t kSquaresChunk = 8192;

// Calls body(tensor, begin, end) on pieces of the elements [0, sizes[t]) of every tensor
// t, in one parallel region when there are more than kParallelThreshold elements in all:
// thread k of K takes the k-th K-th of the concatenated range.
template <class Body>
void for_all_elements(const std::vector<std::int64_t>& sizes, Body&& body) {
  std::int64_t total = 0;
  for (std::int64_t n : sizes) total += n;
  const auto run_piece = [&](std::int64_t begin, std::int64_t end) {
    std::int64_t offset = 0;  // of tensor t in the concatenated range
    for (std::size_t t = 0; t < sizes.size() && offset < end; offset += sizes[t], ++t) {
      const std::int64_t lo = std::max(begin, offset), hi = std::min(end, offset + sizes[t]);
      if (lo < hi) body(t, lo - offset, hi - offset);
    }
  };
  if (total <= kParallelThreshold) {
    run_piece(0, total);
    return;
  }
#pragma omp parallel
  {
    const std::int64_t k = omp_get_thread_num(), threads = omp_get_num_threads();
    run_piece(total * k / threads, total * (k + 1) / threads);
  }
}

// The Adam/AdamW update of elements [begin, end) of one tensor.
template <class T>
void adam_range(const Backend::AdamUpdate& u, std::int64_t begin, std::int64_t end) {
  T* p = u.param.data<T>();
  const T* g = u.grad.data<T>();
  T* m = u.exp_avg.data<T>();
  T* v = u.exp_avg_sq.data<T>();
  const T l2 = static_cast<T>(u.l2), shrink = static_cast<T>(u.shrink);
  const T beta1 = static_cast<T>(u.beta1), beta2 = static_cast<T>(u.beta2);
  const T one_minus_beta1 = static_cast<T>(1.0 - u.beta1);
  const T one_minus_beta2 = static_cast<T>(1.0 - u.beta2);
  const T neg_step_size = -static_cast<T>(u.step_size);
  const T bias_correction2_sqrt = static_cast<T>(u.bias_correction2_sqrt);
  const T eps = static_cast<T>(u.eps);
  for (std::int64_t i = begin; i < end; ++i) {
    T grad = g[i];
    if (l2 != T(0)) grad = std::fma(l2, p[i], grad);
    if (shrink != T(1)) p[i] = p[i] * shrink;
    m[i] = std::fma(m[i], beta1, one_minus_beta1 * grad);
    v[i] = std::fma(v[i], beta2, one_minus_beta2 * grad * grad);
    const T denom = std::sqrt(v[i]) / bias_correction2_sqrt + eps;
    p[i] = std::fma(neg_step_size, m[i] / denom, p[i]);
  }
}

// The SGD update as written in Backend::SgdUpdate, on elements [begin, end); buf is null
// without momentum.
template <class T>
void sgd_range(const Backend::SgdUpdate& u, std::int64_t begin, std::int64_t end) {
  T* p = u.param.data<T>();
  const T* g = u.grad.data<T>();
  T* buf = u.momentum_buffer.defined() ? u.momentum_buffer.data<T>() : nullptr;
  const T lr = static_cast<T>(u.lr), weight_decay = static_cast<T>(u.weight_decay);
  const T momentum = static_cast<T>(u.momentum);
  const bool nesterov = u.nesterov;
  // The FMAs are written out: left to GCC, the vectorised loop contracted them and its
  // scalar remainder did not, so an element's bits depended on where a piece ended.
  for (std::int64_t i = begin; i < end; ++i) {
    T d = g[i];
    if (weight_decay != T(0)) d = std::fma(weight_decay, p[i], d);
    if (buf != nullptr) {
      buf[i] = std::fma(buf[i], momentum, d);
      d = nesterov ? std::fma(momentum, buf[i], d) : buf[i];
    }
    p[i] = std::fma(-lr, d, p[i]);
  }
}

template <class Update>
std::vector<std::int64_t> sizes_of(const std::vector<Update>& updates) {
  std::vector<std::int64_t> sizes;
  sizes.reserve(updates.size());
  for (const Update& u : updates) sizes.push_back(u.param.numel());
  return sizes;
}

// One chunk of kSquaresChunk elements (the last of a tensor may be shorter).
struct SquaresChunk {
  std::size_t tensor;
  std::int64_t begin, end;
};

// The sum of squares of all grads in double: fixed chunks per tensor, summed in one
// parallel region; then each tensor's chunk sums in order, and the tensors' sums in order.
double sum_of_squares(const std::vector<Tensor>& grads) {
  std::vector<SquaresChunk> chunks;
  std::int64_t total = 0;
  for (std::size_t t = 0; t < grads.size(); ++t) {
    const std::int64_t n = grads[t].numel();
    total += n;
    for (std::int64_t c = 0; c < n; c += kSquaresChunk)
      chunks.push_back({t, c, std::min(n, c + kSquaresChunk)});
  }
  std::vector<double> partial(chunks.size());
  const auto n_chunks = static_cast<std::int64_t>(chunks.size());
#pragma omp parallel for schedule(static) if (total > kParallelThreshold)
  for (std::int64_t c = 0; c < n_chunks; ++c) {
    const SquaresChunk& chunk = chunks[static_cast<std::size_t>(c)];
    partial[static_cast<std::size_t>(c)] =
        dispatch_floating(grads[chunk.tensor].dtype(), [&](auto zero) {
          const auto* g = grads[chunk.tensor].data<decltype(zero)>();
          double s = 0.0;
          for (std::int64_t i = chunk.begin; i < chunk.end; ++i) {
            const double x = static_cast<double>(g[i]);
            s = std::fma(x, x, s);
          }
          return s;
        });
  }
  double sum = 0.0, tensor_sum = 0.0;
  for (std::size_t c = 0; c < chunks.size(); ++c) {
    tensor_sum += partial[c];
    if (c + 1 == chunks.size() || chunks[c + 1].tensor != chunks[c].tensor) {
      sum += tensor_sum;
      tensor_sum = 0.0;
    }
  }
  return sum;
}

}  // namespace

void CpuBackend::adam_update(const std::vector<AdamUpdate>& updates) {
  for_all_elements(sizes_of(updates), [&](std::size_t t, std::int64_t begin, std::int64_t end) {
    const AdamUpdate& u = updates[t];
    dispatch_floating(u.param.dtype(),
                      [&](auto zero) { adam_range<decltype(zero)>(u, begin, end); });
  });
}

void CpuBackend::sgd_update(const std::vector<SgdUpdate>& updates) {
  for_all_elements(sizes_of(updates), [&](std::size_t t, std::int64_t begin, std::int64_t end) {
    const SgdUpdate& u = updates[t];
    dispatch_floating(u.param.dtype(),
                      [&](auto zero) { sgd_range<decltype(zero)>(u, begin, end); });
  });
}

double CpuBackend::clip_grad_norm(const std::vector<Tensor>& grads, double max_norm, double eps) {
  const double norm = std::sqrt(sum_of_squares(grads));
  const double coef = max_norm / (norm + eps);
  if (!std::isfinite(norm) || coef >= 1.0) return norm;
  std::vector<std::int64_t> sizes;
  for (const Tensor& g : grads) sizes.push_back(g.numel());
  for_all_elements(sizes, [&](std::size_t t, std::int64_t begin, std::int64_t end) {
    dispatch_floating(grads[t].dtype(), [&](auto zero) {
      using T = decltype(zero);
      T* g = grads[t].data<T>();
      const T scale = static_cast<T>(coef);
      for (std::int64_t i = begin; i < end; ++i) g[i] = g[i] * scale;
    });
  });
  return norm;
}

}  // namespace relpos
