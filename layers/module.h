#pragma once
// Module: owns named parameters and child modules. Parameter names are
// hierarchical ("blocks.3.attn.q.weight") and double as checkpoint paths.
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "autograd/random.h"
#include "autograd/tensor.h"
#include "optim/parameter.h"

namespace relpos {

class Module {
 public:
  virtual ~Module() = default;
  Module() = default;
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  // Every parameter of this module and its children, in registration order.
  std::vector<NamedParameter> parameters() const;
  std::int64_t parameter_count() const;
  void set_training(bool training);
  bool training() const { return training_; }

 protected:
  // Registers a leaf tensor as a trainable parameter (sets requires_grad).
  Tensor register_parameter(const std::string& name, Tensor tensor, bool decay = true);
  template <class M>
  M& register_module(const std::string& name, std::unique_ptr<M> module) {
    M& ref = *module;
    children_.emplace_back(name, std::move(module));
    return ref;
  }

 private:
  void collect(const std::string& prefix, std::vector<NamedParameter>& out) const;
  std::vector<NamedParameter> own_;
  std::vector<std::pair<std::string, std::unique_ptr<Module>>> children_;
  bool training_ = true;
};

// The initial standard deviation of embedding-like tables (tokens, learned
// positions, relative-position tables).
inline constexpr double kEmbeddingInitStd = 0.02;

// Weight initialisers (all draw from the given Rng, in f32).
Tensor normal_init(const Shape& shape, Rng& rng, double stddev);

}  // namespace relpos
