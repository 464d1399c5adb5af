#pragma once
// A position scheme built from a PyTorch reference fixture (tools/reference/): its config
// through the registry, the fixture's parameters loaded as leaves, and the comparison of
// an attention output computed from them with the fixture's, for
// test_position_reference.cpp and test_attention_temperature.cpp.
#include <map>
#include <memory>
#include <set>
#include <string>

#include "autograd/tape.h"
#include "fixture.h"
#include "layers/position/registry.h"
#include "scheme_harness.h"
#include "test_helpers.h"

namespace relpos::testing {

struct ReferenceScheme {
  std::unique_ptr<PositionScheme> scheme;
  ModelDims dims;
  std::map<std::string, Tensor> leaves;  // q, k, v and the scheme's parameters, reference names
};

// Fixture config keys that are not the scheme's: the shapes and the attention's options.
inline bool is_attention_key(const std::string& name) {
  static const std::set<std::string> keys{
      "B", "H", "D", "Lq", "Lk", "causal", "d_model", "window", "temperature", "train_len"};
  return keys.count(name) == 1;
}

inline ReferenceScheme reference_scheme(const Fixture& f, DType dtype) {
  const PositionSchemeEntry* entry = find_position_scheme(f.scheme);
  require(entry != nullptr, "fixture scheme '{}' is not registered", f.scheme);
  // Our name for a name of the reference's (PositionSchemeEntry::reference_names).
  auto ours = [&](const std::string& name) {
    for (const auto& [theirs, mine] : entry->reference_names)
      if (theirs == name) return mine;
    return name;
  };
  const nlohmann::json& c = f.config;
  const std::int64_t heads = c["H"], d = c["D"];
  ReferenceScheme out{nullptr, {c.value("d_model", heads * d), heads, 1, c["causal"], d}, {}};
  PositionConfig config;
  config.scheme = entry->name;
  for (const auto& item : c.items()) {
    if (is_attention_key(item.key())) continue;
    const nlohmann::json& value = item.value();  // not a structured binding: clang 14 captures it
    OptionValue& option = config.at(ours(item.key()));  // throws for an unknown key
    std::visit([&](auto& v) { v = value.get<std::decay_t<decltype(v)>>(); }, option);
  }
  Rng rng(1);
  out.scheme = make_position_scheme(config, out.dims, rng);
  for (const char* input : {"q", "k", "v"}) out.leaves[input] = f.leaf(input, dtype);
  std::vector<std::string> names;  // the reference's names of our parameters
  std::vector<Tensor> values;
  for (const NamedParameter& p : out.scheme->parameters()) {
    names.push_back(p.name);
    for (const auto& [theirs, mine] : entry->reference_names)
      if (mine == p.name) names.back() = theirs;
    values.push_back(f.at(names.back()));
  }
  const auto parameters = set_parameters(*out.scheme, values, dtype);
  for (std::size_t i = 0; i < parameters.size(); ++i) out.leaves[names[i]] = parameters[i];
  return out;
}

// `out`, computed from r's leaves, against the fixture: every reference parameter is
// one of r's leaves and no other is, the output is the fixture's, and after
// back-propagating the fixture's grad_out every leaf's gradient is the fixture's, each
// to `tol`.
inline void require_matches_fixture(const Fixture& f, const ReferenceScheme& r, const Tensor& out,
                                    DType dtype, double tol) {
  std::set<std::string> params;
  for (const auto& [leaf, tensor] : r.leaves)
    if (leaf != "q" && leaf != "k" && leaf != "v") params.insert(leaf);
  REQUIRE(params == std::set<std::string>(f.params.begin(), f.params.end()));
  require_close(out.to_vector(), f.at("out").to_vector(), tol);
  backward(out, f.at("grad_out").to(dtype));
  for (const auto& [leaf, tensor] : r.leaves) {
    INFO("gradient of " << leaf);
    REQUIRE(tensor.grad().defined());
    require_close(tensor.grad().to_vector(), f.at("grad_" + leaf).to_vector(), tol);
  }
}

}  // namespace relpos::testing
