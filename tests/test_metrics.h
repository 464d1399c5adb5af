#pragma once
// metrics.jsonl as the tests compare it: every record without its wall-clock field.
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace relpos::testing {

// One JSON dump per line of `file`, without tokens_per_s; throws on a broken line.
inline std::vector<std::string> metrics_without_timing(const std::filesystem::path& file) {
  std::ifstream in(file);
  std::vector<std::string> out;
  for (std::string line; std::getline(in, line);) {
    nlohmann::json j = nlohmann::json::parse(line);
    j.erase("tokens_per_s");
    out.push_back(j.dump());
  }
  return out;
}

}  // namespace relpos::testing
