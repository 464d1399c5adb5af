#pragma once
// Loads the JSON fixtures written by tools/reference/positions_reference.py (folder
// "positions") and tools/reference/temperature_reference.py ("temperature").
#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "autograd/error.h"
#include "autograd/tensor.h"

namespace relpos::testing {

inline std::filesystem::path source_dir() {
  if (const char* env = std::getenv("RELPOS_SOURCE_DIR")) return env;
  return RELPOS_SOURCE_DIR;
}

struct Fixture {
  std::string scheme;
  nlohmann::json config;
  std::vector<std::string> params;        // attention cases: the scheme's parameters, in order
  std::map<std::string, Tensor> tensors;  // floating data as f64, integer data as i64

  const Tensor& at(const std::string& name) const {
    auto it = tensors.find(name);
    require(it != tensors.end(), "fixture has no tensor '{}'", name);
    return it->second;
  }
  // A fresh f64 leaf requiring grad, or a converted constant.
  Tensor leaf(const std::string& name, DType dtype = DType::f64) const {
    Tensor t = at(name).to(dtype).clone();
    t.set_requires_grad(true);
    return t;
  }
};

inline std::filesystem::path fixture_dir(const std::string& folder = "positions") {
  return source_dir() / "tests" / "fixtures" / folder;
}

inline Fixture load_fixture(const std::string& name, const std::string& folder = "positions") {
  const auto path = fixture_dir(folder) / (name + ".json");
  std::ifstream in(path);
  require(in.good(), "cannot open fixture {}", path.string());
  const nlohmann::json j = nlohmann::json::parse(in);
  Fixture f;
  f.scheme = j.value("scheme", "");
  f.config = j.value("config", nlohmann::json::object());
  f.params = j.value("params", std::vector<std::string>{});
  for (const auto& [key, value] : j.at("tensors").items()) {
    Shape shape = value.at("shape").get<Shape>();
    const auto& data = value.at("data");
    const bool integral = !data.empty() && data.front().is_number_integer();
    std::vector<double> values;
    values.reserve(data.size());
    for (const auto& x : data) values.push_back(x.get<double>());
    f.tensors[key] = Tensor::from_data(values, shape, integral ? DType::i64 : DType::f64);
  }
  return f;
}

// The attention cases (those with a "params" list), by name, sorted.
inline std::vector<std::string> attention_fixtures(const std::string& folder = "positions") {
  std::vector<std::string> names;
  for (const auto& file : std::filesystem::directory_iterator(fixture_dir(folder))) {
    if (file.path().extension() != ".json") continue;
    std::ifstream in(file.path());
    if (nlohmann::json::parse(in).contains("params")) names.push_back(file.path().stem().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace relpos::testing
