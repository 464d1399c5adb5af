#include "train/distributed/data_parallel.h"

#include <chrono>

#include "autograd/error.h"
#include "autograd/tape.h"
#include "train/distributed/distributed.h"

namespace relpos {

Batch rank_rows(const Batch& global, int rank, int world_size) {
  const std::int64_t rows = global.inputs.size(0), seq_len = global.inputs.size(1);
  require(rows % world_size == 0, "a batch of {} rows cannot be split over {} ranks", rows,
          world_size);
  const std::int64_t mine = rows / world_size, offset = rank * mine * seq_len;
  auto slice = [&](const Tensor& t) {  // (mine, L), a copy of this rank's rows
    return Tensor::view_of(t, {mine, seq_len}, {seq_len, 1}, t.offset() + offset).clone();
  };
  return {slice(global.inputs), slice(global.targets)};
}

std::int64_t scored_targets(const Batch& batch) {
  const std::int64_t* t = batch.targets.data<std::int64_t>();
  std::int64_t scored = 0;
  for (std::int64_t i = 0; i < batch.targets.numel(); ++i) scored += t[i] != kIgnoreTarget;
  return scored;
}

GradientAllReduce::GradientAllReduce(const std::vector<NamedParameter>& parameters,
                                     bool deterministic)
    : deterministic_(deterministic) {
  for (const NamedParameter& p : parameters) elements_ += p.tensor.numel();
}

double GradientAllReduce::sum(const std::vector<NamedParameter>& parameters) {
  NoGradGuard no_grad;
  const Device device = parameters.front().tensor.device();
  const auto count = static_cast<std::int64_t>(parameters.size());
  // [every gradient, flattened in parameter order | one "has a gradient" count per parameter]
  Tensor flat = Tensor::zeros({elements_ + count}, DType::f32, device);
  auto part = [&](std::int64_t offset, const Shape& shape) {
    return Tensor::view_of(flat, shape, contiguous_strides(shape), offset);
  };
  std::int64_t offset = 0;
  for (std::int64_t i = 0; i < count; ++i) {
    const Tensor& tensor = parameters[static_cast<std::size_t>(i)].tensor;
    if (const Tensor grad = tensor.grad(); grad.defined()) {
      part(offset, tensor.shape()).copy_(grad);
      part(elements_ + i, {}).fill_(1.0);
    }
    offset += tensor.numel();
  }
  const auto start = std::chrono::steady_clock::now();
  if (device == Device::cpu) {
    all_reduce_sum(std::span<float>(flat.data<float>(), static_cast<std::size_t>(flat.numel())),
                   deterministic_);
  } else {
    all_reduce_sum_cuda(flat);
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const std::vector<double> has_grad = part(elements_, {count}).to_vector();
  offset = 0;
  for (std::int64_t i = 0; i < count; ++i) {
    const Tensor& tensor = parameters[static_cast<std::size_t>(i)].tensor;
    const Tensor summed = part(offset, tensor.shape());
    offset += tensor.numel();
    if (has_grad[static_cast<std::size_t>(i)] == 0.0) continue;
    if (Tensor grad = tensor.grad(); grad.defined())
      grad.copy_(summed);
    else
      tensor.set_grad(summed.clone());
  }
  return seconds;
}

std::uint64_t state_hash(const std::map<std::string, Tensor>& tensors) {
  std::uint64_t hash = 0xcbf29ce484222325ULL;
  auto add = [&](const void* data, std::size_t bytes) {
    const auto* p = static_cast<const unsigned char*>(data);
    for (std::size_t i = 0; i < bytes; ++i) hash = (hash ^ p[i]) * 0x100000001b3ULL;
  };
  for (const auto& [name, tensor] : tensors) {
    add(name.data(), name.size());
    const Tensor cpu = tensor.to(Device::cpu).contiguous();
    add(cpu.raw_data(), static_cast<std::size_t>(cpu.numel()) * element_size(cpu.dtype()));
  }
  return hash;
}

std::uint64_t require_same_state_on_all_ranks(std::uint64_t local_hash) {
  std::uint64_t root_hash = local_hash;
  broadcast(std::span<char>(reinterpret_cast<char*>(&root_hash), sizeof(root_hash)), 0);
  run_collectively([&] {
    require(local_hash == root_hash,
            "internal: rank {} holds other parameters or optimizer state than rank 0 (hash {:#x} "
            "vs {:#x})",
            rank(), local_hash, root_hash);
  });
  return root_hash;
}

}  // namespace relpos
