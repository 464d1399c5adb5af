// `relpos export --format safetensors`: the file layout (header, offsets, f32 and bf16
// bytes), its atomic write, the command's errors, and the round trip through the
// PyTorch twin (tools/relpos_torch.py) for every scheme variant: the same loss as
// `relpos eval` and the same greedy bytes as `relpos sample --temperature 0`.
#include <fmt/format.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "autograd/error.h"
#include "layers/position/registry.h"
#include "tests/test_command.h"
#include "tests/test_files.h"
#include "tests/test_helpers.h"
#include "train/store/safetensors.h"

namespace fs = std::filesystem;
using relpos::testing::slurp;
using relpos::testing::TempDir;

namespace {

struct Parsed {
  nlohmann::json header;
  std::uint64_t header_size = 0;
  std::string data;  // the bytes after the header
};

// Reads a safetensors image back by the format's definition.
Parsed parse(const std::string& file) {
  REQUIRE(file.size() >= 8);
  Parsed p;
  for (int i = 7; i >= 0; --i) p.header_size = p.header_size << 8 | std::uint8_t(file[i]);
  REQUIRE(8 + p.header_size <= file.size());
  p.header = nlohmann::json::parse(file.substr(8, p.header_size));
  p.data = file.substr(8 + p.header_size);
  return p;
}

std::vector<float> floats_at(const Parsed& p, const std::string& name) {
  const auto offsets = p.header.at(name).at("data_offsets").get<std::vector<std::size_t>>();
  REQUIRE(offsets[1] <= p.data.size());
  std::vector<float> out((offsets[1] - offsets[0]) / 4);
  std::memcpy(out.data(), p.data.data() + offsets[0], out.size() * 4);
  return out;
}

std::vector<std::uint16_t> halves_at(const Parsed& p, const std::string& name) {
  const auto offsets = p.header.at(name).at("data_offsets").get<std::vector<std::size_t>>();
  std::vector<std::uint16_t> out((offsets[1] - offsets[0]) / 2);
  std::memcpy(out.data(), p.data.data() + offsets[0], out.size() * 2);
  return out;
}

using Result = relpos::testing::CommandResult;
constexpr auto run_in = relpos::testing::run_command;

std::string relpos_cli(const std::string& args) { return std::string(RELPOS_CLI) + " " + args; }

void require_one_line_error(const Result& r, const std::string& needle) {
  INFO("stderr: " << r.err << "\nstdout: " << r.out);
  REQUIRE(r.exit_code == 2);
  REQUIRE(r.err.find(needle) != std::string::npos);
  REQUIRE(std::count(r.err.begin(), r.err.end(), '\n') == 1);
}

const char* kTiny =
    "model: {d_model: 32, n_layers: 2, n_heads: 4, d_ff: 64}\n"
    "data: {seq_len: 12, batch_size: 8}\n"
    "optim: {lr: 0.02}\n"
    "schedule: {warmup_steps: 1}\n"
    "train: {steps: 300, eval_every: 300, eval_batches: 2, checkpoint_every: 300, log_every: 300, "
    "threads: 1}\n";

// Trains kTiny with `overrides` into dir/run and returns its last checkpoint.
fs::path train_tiny(const TempDir& dir, const std::string& overrides) {
  const fs::path config = dir.write("tiny.yaml", kTiny);
  const Result r =
      run_in(dir.path(), relpos_cli(fmt::format("train {} train.out_dir={} {}", config.string(),
                                                (dir.path() / "run").string(), overrides)));
  INFO("overrides: " << overrides << "\nstderr: " << r.err);
  REQUIRE(r.exit_code == 0);
  return dir.path() / "run" / "checkpoints" / "ckpt_00000300.h5";
}

std::string option_text(const relpos::OptionValue& value) {
  return std::visit(
      [](const auto& v) -> std::string {
        if constexpr (std::is_same_v<std::decay_t<decltype(v)>, bool>) return v ? "true" : "false";
        return fmt::format("{}", v);
      },
      value);
}

// The Python the round trip runs: $RELPOS_TORCH_PYTHON, else Debian's /usr/bin/python3
// (python3-torch, installed by tools/install-deps.sh).
std::string torch_python() {
  const char* env = std::getenv("RELPOS_TORCH_PYTHON");
  return env != nullptr && *env != '\0' ? env : "/usr/bin/python3";
}

bool has_torch(const std::string& python) {
  const std::string probe = python + " -c 'import torch' > /dev/null 2>&1";
  return std::system(probe.c_str()) == 0;
}

}  // namespace

TEST_CASE("safetensors: header, aligned offsets and f32 bytes", "[export]") {
  using relpos::Tensor;
  const std::map<std::string, Tensor> tensors = {
      {"b.weight", Tensor::from_data(std::vector<float>{1, 2, 3, 4, 5, 6}, {2, 3})},
      {"a", Tensor::from_data(std::vector<double>{0.5}, {}, relpos::DType::f64)},
      {"c", Tensor::from_data(std::vector<float>{-1, 7, 0.25}, {3})}};
  const std::string file =
      relpos::safetensors_bytes(tensors, {{"config", "{}"}}, relpos::ExportDType::f32);
  const Parsed p = parse(file);
  CHECK(p.header_size % 8 == 0);
  CHECK(p.header.at("__metadata__") == nlohmann::json({{"config", "{}"}}));
  CHECK(p.header.at("a").at("shape") == nlohmann::json::array());
  CHECK(p.header.at("b.weight").at("shape") == nlohmann::json({2, 3}));
  CHECK(p.header.at("b.weight").at("dtype") == "F32");
  // In name order, each tensor on an 8-byte boundary of the data: a [0,4), b [8,32), c [32,44).
  CHECK(p.header.at("a").at("data_offsets") == nlohmann::json({0, 4}));
  CHECK(p.header.at("b.weight").at("data_offsets") == nlohmann::json({8, 32}));
  CHECK(p.header.at("c").at("data_offsets") == nlohmann::json({32, 44}));
  CHECK(p.data.size() == 44);
  CHECK(floats_at(p, "a") == std::vector<float>{0.5f});
  CHECK(floats_at(p, "b.weight") == std::vector<float>{1, 2, 3, 4, 5, 6});
  CHECK(floats_at(p, "c") == std::vector<float>{-1, 7, 0.25f});
}

TEST_CASE("safetensors: bf16 rounds to nearest, ties to even", "[export]") {
  using relpos::Tensor;
  // 1 + 2^-8 lies halfway between bf16 1.0 (0x3f80) and 1 + 2^-7 (0x3f81): to even, 0x3f80.
  // 1 + 3·2^-8 lies halfway between 0x3f81 and 0x3f82: to even, 0x3f82. 1 + 2^-8 + 2^-20
  // is above the half: 0x3f81. -2 is exact: 0xc000.
  const std::vector<float> values{1.0f, 1.00390625f, 1.01171875f, 1.00390625f + 0x1p-20f, -2.0f};
  const std::string file = relpos::safetensors_bytes({{"x", Tensor::from_data(values, {5})}}, {},
                                                     relpos::ExportDType::bf16);
  const Parsed p = parse(file);
  CHECK_FALSE(p.header.contains("__metadata__"));
  CHECK(p.header.at("x").at("dtype") == "BF16");
  CHECK(p.header.at("x").at("data_offsets") == nlohmann::json({0, 10}));
  CHECK(halves_at(p, "x") == std::vector<std::uint16_t>{0x3f80, 0x3f80, 0x3f82, 0x3f81, 0xc000});
}

TEST_CASE("safetensors: a failed write leaves the old file and no .tmp", "[export]") {
  const TempDir dir("export_atomic");
  const fs::path path = dir.write("model.safetensors", "old contents");
  const std::map<std::string, relpos::Tensor> big = {
      {"w", relpos::Tensor::zeros({1 << 16})}};  // 256 KiB
  {
    const relpos::testing::FileSizeLimit limit(4096);
    REQUIRE_THROWS_AS(relpos::write_safetensors(path, big, {}, relpos::ExportDType::f32),
                      relpos::UsageError);
  }
  CHECK(slurp(path) == "old contents");
  CHECK_FALSE(fs::exists(path.string() + ".tmp"));
  REQUIRE_THROWS_WITH(relpos::write_safetensors(dir.path() / "no" / "such" / "m.safetensors", big,
                                                {}, relpos::ExportDType::f32),
                      Catch::Contains("cannot write") && Catch::Contains("no/such/m.safetensors"));
}

TEST_CASE("relpos export: parameters by name, the config as metadata, one-line errors",
          "[export][cli][slow]") {
  const TempDir dir("export_cli");
  const fs::path ckpt = train_tiny(dir, "model.position.scheme=t5");
  const fs::path out = dir.path() / "model.safetensors";
  const Result r = run_in(dir.path(), relpos_cli(fmt::format("export {} --format safetensors -o {}",
                                                             ckpt.string(), out.string())));
  INFO("stderr: " << r.err);
  REQUIRE(r.exit_code == 0);
  const Parsed p = parse(slurp(out));
  const nlohmann::json& meta = p.header.at("__metadata__");
  CHECK(meta.at("format") == "relpos");
  CHECK(meta.at("step") == "300");
  const auto config = nlohmann::json::parse(meta.at("config").get<std::string>());
  CHECK(config.at("model").at("d_model") == 32);
  CHECK(config.at("model").at("position").at("scheme") == "t5");
  CHECK(config.at("model").at("position").at("bidirectional_buckets") == false);
  CHECK(config.at("data").at("val_fraction").is_number_float());
  CHECK(meta.at("config_yaml").get<std::string>().find("scheme: t5") != std::string::npos);
  CHECK(p.header.contains("position.table"));
  CHECK(p.header.contains("blocks.1.attn.q.weight"));
  CHECK(p.header.at("blocks.1.mlp.fc1.weight").at("shape") == nlohmann::json({64, 32}));
  CHECK_FALSE(fs::exists(out.string() + ".tmp"));

  require_one_line_error(run_in(dir.path(), relpos_cli(fmt::format("export {} --dtype f16 -o {}",
                                                                   ckpt.string(), out.string()))),
                         "--dtype: expected f32 or bf16, got 'f16'");
  require_one_line_error(run_in(dir.path(), relpos_cli(fmt::format("export {} --format onnx -o {}",
                                                                   ckpt.string(), out.string()))),
                         "--format: expected safetensors, got 'onnx'");
  require_one_line_error(
      run_in(dir.path(), relpos_cli(fmt::format("export {}/missing.h5 -o {}", dir.path().string(),
                                                out.string()))),
      "no such file");
  const Result bf16 =
      run_in(dir.path(),
             relpos_cli(fmt::format("export {} --dtype bf16 -o {}", ckpt.string(), out.string())));
  REQUIRE(bf16.exit_code == 0);
  CHECK(parse(slurp(out)).header.at("embed.weight").at("dtype") == "BF16");
}

// Every scheme with every test variant of the registry, plus RMSNorm with an untied head,
// each trained for 300 steps (about a second) so that greedy samples are not one repeated byte:
// relpos -> safetensors -> the PyTorch twin (float64) gives relpos eval's loss within
// 1e-5 nats/byte at the training length and twice it, and relpos sample's greedy bytes.
TEST_CASE("export round trip: the PyTorch twin matches relpos eval and sample",
          "[export][torch][slow]") {
  const std::string python = torch_python();
  static const bool usable = has_torch(python);  // once: each section reruns the case
  if (!usable) {
    WARN("SKIPPED: PyTorch is not installed for "
         << python << " (apt-get install python3-torch, or set RELPOS_TORCH_PYTHON)");
    return;
  }
  const std::string twin = std::string(RELPOS_SOURCE_DIR) + "/tools/relpos_torch.py";
  const std::string corpus = std::string(RELPOS_SOURCE_DIR) + "/data/corpus/kjv.txt";
  // A kNN layer: without --knn-size, relpos evaluates and samples it with its local
  // attention only, which is what the twin computes.
  // Per-layer schemes with sliding windows: two T5 groups (shared and per-layer tables),
  // and the every rule with RoPE + window layers and a global NoPE layer. The attention
  // temperature: log_length (evaluated at twice L_train too) and learned.
  std::vector<std::string> variants{
      "model.norm=rmsnorm model.tie_embeddings=false",
      "model.position.scheme=t5 model.knn_memory.layer=1 model.knn_memory.size=48 "
      "model.knn_memory.top_k=4",
      "'model.position=[t5, {scheme: t5, per_layer: true}]' 'model.attention_window=[3, 0]'",
      "'model.position={every: 2, scheme: none, else: rope}' 'model.attention_window=[5, 0]'",
      "model.position.scheme=none model.attention_temperature.kind=log_length",
      "model.position.scheme=rope model.attention_temperature.kind=learned"};
  for (const relpos::PositionSchemeEntry& entry : relpos::position_schemes()) {
    std::vector<std::vector<std::pair<std::string, relpos::OptionValue>>> settings =
        entry.test_variants;
    if (settings.empty()) settings.emplace_back();
    for (const auto& setting : settings) {
      std::string overrides = "model.position.scheme=" + entry.name;
      for (const auto& [key, value] : setting)
        overrides += fmt::format(" model.position.{}={}", key, option_text(value));
      variants.push_back(overrides);
    }
  }
  for (const std::string& overrides : variants) {
    DYNAMIC_SECTION(overrides) {
      const TempDir dir("export_twin");
      const fs::path ckpt = train_tiny(dir, overrides);
      const fs::path model = dir.path() / "model.safetensors";
      const fs::path eval_json = dir.path() / "eval.json";
      REQUIRE(run_in(dir.path(),
                     relpos_cli(fmt::format("export {} -o {}", ckpt.string(), model.string())))
                  .exit_code == 0);
      // The learned table of the test variant holds 16 positions.
      const bool short_table = overrides.find("scheme=learned") != std::string::npos;
      const std::string lengths = short_table ? "12,16" : "12,24";
      const std::string prompt = "And ";
      const int tokens = short_table ? 12 : 40;
      const Result eval =
          run_in(dir.path(), relpos_cli(fmt::format("eval {} --lengths {} --batches 2 --json {}",
                                                    ckpt.string(), lengths, eval_json.string())));
      REQUIRE(eval.exit_code == 0);
      const Result sample = run_in(
          dir.path(), relpos_cli(fmt::format("sample {} --prompt '{}' --temperature 0 --tokens {}",
                                             ckpt.string(), prompt, tokens)));
      REQUIRE(sample.exit_code == 0);
      const Result torch = run_in(
          dir.path(), fmt::format("{} {} {} --text {} --lengths {} --batches 2 --prompt "
                                  "'{}' --tokens {}",
                                  python, twin, model.string(), corpus, lengths, prompt, tokens));
      INFO("twin stderr: " << torch.err);
      REQUIRE(torch.exit_code == 0);
      const auto ours = nlohmann::json::parse(slurp(eval_json)).at("results");
      const auto theirs = nlohmann::json::parse(torch.out);
      REQUIRE(ours.size() == theirs.at("results").size());
      for (std::size_t i = 0; i < ours.size(); ++i) {
        const auto& a = ours[i];
        const auto& b = theirs.at("results")[i];
        INFO("length " << a.at("length") << ": relpos " << a.at("loss") << ", twin "
                       << b.at("loss"));
        CHECK(a.at("length") == b.at("length"));
        CHECK(a.at("tokens") == b.at("tokens"));
        CHECK(std::abs(a.at("loss").get<double>() - b.at("loss").get<double>()) <= 1e-5);
      }
      std::string twin_text = prompt;
      for (const int byte : theirs.at("sample").get<std::vector<int>>())
        twin_text += static_cast<char>(byte);
      CHECK(sample.out == twin_text + "\n");
      if (&overrides == &variants.front()) {
        // bf16: each value is PyTorch's own rounding of the f32 export's.
        const fs::path bf16 = dir.path() / "model.bf16.safetensors";
        REQUIRE(run_in(dir.path(), relpos_cli(fmt::format("export {} --dtype bf16 -o {}",
                                                          ckpt.string(), bf16.string())))
                    .exit_code == 0);
        const Result same =
            run_in(dir.path(),
                   fmt::format("{} -c 'import sys, torch; sys.path.insert(0, \"{}/tools\"); import "
                               "relpos_torch as r; a, _ = r.read_safetensors(\"{}\"); b, _ = "
                               "r.read_safetensors(\"{}\"); print(sorted(a) == sorted(b) and "
                               "all(torch.equal(a[n].to(torch.bfloat16), b[n]) for n in a))'",
                               python, RELPOS_SOURCE_DIR, model.string(), bf16.string()));
        INFO("stderr: " << same.err);
        CHECK(same.out == "True\n");
      }
    }
  }
  SECTION("a file the twin cannot read is one line, exit 2") {
    const TempDir dir("export_twin_error");
    const fs::path bad = dir.write("bad.safetensors", "not a safetensors file");
    const Result r = run_in(dir.path(), fmt::format("{} {} {}", python, twin, bad.string()));
    INFO("stderr: " << r.err);
    CHECK(r.exit_code == 2);
    CHECK(r.err.rfind("relpos_torch: error: ", 0) == 0);
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
  }
}
