// The config files that ship: docs/config.md's tables are the schema's and the
// registry's, and every file under configs/ loads.
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <filesystem>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "layers/position/registry.h"
#include "tests/fixture.h"
#include "tests/test_files.h"
#include "train/config/config.h"

namespace relpos {

namespace fs = std::filesystem;
using Catch::Contains;
using testing::slurp;
using testing::TempDir;

// docs/config.md documents every key in a table row of its "## Keys" chapter,
// | `path` | type | `default` | meaning |, with an enum's values in its type cell.
TEST_CASE("config: docs/config.md documents every key with its type and default", "[config]") {
  const std::string docs = slurp(testing::source_dir() / "docs" / "config.md");
  std::map<std::string, std::vector<std::string>> rows;  // path -> cells
  std::istringstream lines(docs);
  bool in_keys = false;  // inside the "## Keys" chapter
  for (std::string line; std::getline(lines, line);) {
    if (line.starts_with("## ")) in_keys = line == "## Keys";
    if (!in_keys || !line.starts_with("| `")) continue;
    std::vector<std::string> cells;
    std::istringstream split(line.substr(1));
    for (std::string cell; std::getline(split, cell, '|');) {
      const auto begin = cell.find_first_not_of(' ');
      const auto end = cell.find_last_not_of(' ');
      cells.push_back(begin == std::string::npos ? "" : cell.substr(begin, end - begin + 1));
    }
    REQUIRE(cells.size() >= 4);
    rows[cells[0].substr(1, cells[0].size() - 2)] = cells;
  }
  std::vector<std::string> paths;
  for (const ConfigKeyInfo& key : config_keys()) {
    INFO(key.path);
    paths.push_back(key.path);
    const auto row = rows.find(key.path);
    REQUIRE(row != rows.end());
    const std::vector<std::string>& cells = row->second;
    CHECK(cells[1].starts_with(key.type));
    for (const std::string& choice : key.choices) {
      CHECK(cells[1].find("`" + choice + "`") != std::string::npos);
    }
    CHECK(cells[2] == "`" + key.default_value + "`");
    CHECK(!cells[3].empty());
  }
  for (const auto& [path, cells] : rows) {
    INFO(path);
    CHECK(std::find(paths.begin(), paths.end(), path) != paths.end());  // no stale keys
  }
}

// The model.position table of docs/config.md, as the registry generates it.
std::string position_keys_table() {
  std::string table = "| key | type | default | meaning |\n|---|---|---|---|\n";
  for (const ConfigKeyInfo& key : config_keys()) {
    if (!key.path.starts_with("model.position.")) continue;
    std::string type = key.type;
    for (std::size_t i = 0; i < key.choices.size(); ++i)
      type += (i == 0 ? ": `" : ", `") + key.choices[i] + "`";
    table +=
        fmt::format("| `{}` | {} | `{}` | {} |\n", key.path, type, key.default_value, key.meaning);
  }
  return table;
}

TEST_CASE("config: docs/config.md's model.position table is the registry's", "[config][docs]") {
  const fs::path file = testing::source_dir() / "docs" / "config.md";
  const std::string docs = slurp(file);
  const std::string begin_mark = "<!-- generated from the scheme registry:";
  const std::string end_mark = "<!-- end of generated table -->";
  const auto begin = docs.find('\n', docs.find(begin_mark)) + 1;
  const auto end = docs.find(end_mark);
  REQUIRE(docs.find(begin_mark) != std::string::npos);
  REQUIRE(end != std::string::npos);
  const std::string expected = position_keys_table();
  if (std::getenv("RELPOS_UPDATE_DOCS")) {
    std::ofstream(file, std::ios::binary) << docs.substr(0, begin) << expected << docs.substr(end);
    return;
  }
  INFO("regenerate with: RELPOS_UPDATE_DOCS=1 build/tests/relpos_tests \"[docs]\"");
  CHECK(docs.substr(begin, end - begin) == expected);
}

TEST_CASE("config: the scheme overlays in configs/schemes load", "[config]") {
  const fs::path root = testing::source_dir() / "configs";
  const ConfigKeyInfo scheme = [] {
    for (const ConfigKeyInfo& key : config_keys()) {
      if (key.path == "model.position.scheme") return key;
    }
    FAIL("no model.position.scheme key");
    return ConfigKeyInfo{};
  }();
  const bool has_quickstart = fs::exists(root / "quickstart.yaml");
  for (const std::string& name : scheme.choices) {
    INFO(name);
    const fs::path file = root / "schemes" / (name + ".yaml");
    REQUIRE(fs::exists(file));
    // Only model.position settings, so the file works as an overlay.
    const YAML::Node node = YAML::LoadFile(file.string());
    REQUIRE(node.size() == 1);
    REQUIRE(node["model"].size() == 1);
    REQUIRE(node["model"]["position"].IsMap());
    const RunConfig c = load_config({file.string()}, {});
    CHECK(c.model.position.scheme == name);
    if (has_quickstart) {
      CHECK_NOTHROW(load_config({(root / "quickstart.yaml").string(), file.string()}, {}));
    }
  }
  const RunConfig shaw = load_config({(root / "schemes" / "shaw.yaml").string()}, {});
  CHECK(shaw.model.position.get<std::int64_t>("max_relative") == 16);
  const RunConfig t5 = load_config({(root / "schemes" / "t5.yaml").string()}, {});
  CHECK(t5.model.position.get<std::int64_t>("num_buckets") == 32);
  CHECK(t5.model.position.get<std::int64_t>("max_distance") == 128);
  const RunConfig learned = load_config({(root / "schemes" / "learned.yaml").string()}, {});
  CHECK(learned.model.position.get<std::int64_t>("max_len") == 2048);
}

TEST_CASE("config: every run config under configs/ loads", "[config]") {
  for (const auto& entry : fs::recursive_directory_iterator(testing::source_dir() / "configs")) {
    if (entry.path().extension() != ".yaml") continue;
    // Sweep files (a top-level `variants:` list) are checked by tests/test_ablation.cpp.
    if (YAML::LoadFile(entry.path().string())["variants"]) continue;
    INFO(entry.path().string());
    CHECK_NOTHROW(load_config({entry.path().string()}, {}));
  }
}

}  // namespace relpos
