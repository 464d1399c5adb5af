#include "train/ablation/results.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <numbers>

#include "train/store/atomic_file.h"

namespace relpos {
namespace fs = std::filesystem;
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

nlohmann::json number_or_null(double value) {
  return std::isfinite(value) ? nlohmann::json(value) : nlohmann::json(nullptr);
}

double number_or_nan(const nlohmann::json& j) { return j.is_null() ? kNaN : j.get<double>(); }

}  // namespace

std::string memory_label(std::int64_t mem_len, std::int64_t knn_size) {
  return knn_size > 0 ? fmt::format("mem_{}_knn_{}", mem_len, knn_size)
                      : fmt::format("mem_{}", mem_len);
}

std::string copy_label(const CopyGain& p) {
  const std::string gain = fmt::format("copy_gain_{}", p.distance);
  return p.segments ? gain + "_" + memory_label(p.mem_len, p.knn_size) : gain;
}

double last_val_loss(const fs::path& dir) {
  std::map<std::int64_t, double> by_step;
  std::ifstream in(dir / "metrics.jsonl");
  for (std::string line; std::getline(in, line);) {
    const nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
    if (!j.is_object() || !j.contains("step") || !j["step"].is_number_integer()) continue;
    if (j.contains("val_loss") && j["val_loss"].is_number())
      by_step[j["step"].get<std::int64_t>()] = j["val_loss"].get<double>();
  }
  return by_step.empty() ? kNaN : by_step.rbegin()->second;
}

void write_result(const fs::path& file, const VariantResult& r) {
  nlohmann::json curve = nlohmann::json::array();
  for (const LengthLoss& p : r.extrapolation)
    curve.push_back({{"length", p.length},
                     {"loss", number_or_null(p.loss)},
                     {"bits_per_byte", number_or_null(p.loss / std::numbers::ln2)},
                     {"accuracy", number_or_null(p.accuracy)},
                     {"exact_match", number_or_null(p.exact_match)},
                     {"note", p.note}});
  nlohmann::json memory = nlohmann::json::array();
  for (const MemoryLoss& p : r.memory)
    memory.push_back({{"mem_len", p.mem_len},
                      {"knn_size", p.knn_size},
                      {"loss", number_or_null(p.loss)},
                      {"bits_per_byte", number_or_null(p.loss / std::numbers::ln2)},
                      {"note", p.note}});
  nlohmann::json copy = nlohmann::json::array();
  for (const CopyGain& p : r.copy)
    copy.push_back({{"distance", p.distance},
                    {"segments", p.segments},
                    {"mem_len", p.mem_len},
                    {"knn_size", p.knn_size},
                    {"loss_repeat", number_or_null(p.loss_repeat)},
                    {"loss_control", number_or_null(p.loss_control)},
                    {"note", p.note}});
  const nlohmann::json j = {{"name", r.name},
                            {"seed", r.seed},
                            {"scheme", r.scheme},
                            {"data", r.data_source},
                            {"train_length", r.train_length},
                            {"steps", r.steps},
                            {"parameters", r.parameters},
                            {"final_val_loss", number_or_null(r.final_val_loss)},
                            {"final_val_bpb", number_or_null(r.final_val_loss / std::numbers::ln2)},
                            {"tokens_per_second", number_or_null(r.tokens_per_second)},
                            {"wall_seconds", number_or_null(r.wall_seconds)},
                            {"peak_rss_bytes", r.peak_rss_bytes},
                            {"peak_tensor_bytes", r.peak_tensor_bytes},
                            {"eval_batches", r.eval_batches},
                            {"eval_sequences", r.eval_sequences},
                            {"extrapolation", curve},
                            {"memory", memory},
                            {"copy_span", r.copy_span},
                            {"copy_sequences", r.copy_sequences},
                            {"copy", copy},
                            {"notes", r.notes}};
  write_file_atomic(file, j.dump(2) + "\n");
}

std::optional<VariantResult> read_result(const fs::path& file) {
  std::ifstream in(file);
  if (!in) return std::nullopt;
  const nlohmann::json j = nlohmann::json::parse(in, nullptr, false);
  try {
    VariantResult r;
    r.name = j.at("name").get<std::string>();
    r.seed = j.at("seed").get<std::uint64_t>();
    r.scheme = j.at("scheme").get<std::string>();
    r.data_source = j.at("data").get<std::string>();
    r.train_length = j.at("train_length").get<std::int64_t>();
    r.steps = j.at("steps").get<std::int64_t>();
    r.parameters = j.at("parameters").get<std::int64_t>();
    r.final_val_loss = number_or_nan(j.at("final_val_loss"));
    r.tokens_per_second = number_or_nan(j.at("tokens_per_second"));
    r.wall_seconds = number_or_nan(j.at("wall_seconds"));
    r.peak_rss_bytes = j.at("peak_rss_bytes").get<std::size_t>();
    r.peak_tensor_bytes = j.at("peak_tensor_bytes").get<std::size_t>();
    r.eval_batches = j.at("eval_batches").get<std::int64_t>();
    r.eval_sequences = j.value("eval_sequences", std::int64_t{0});
    for (const auto& p : j.at("extrapolation"))
      r.extrapolation.push_back({p.at("length").get<std::int64_t>(), number_or_nan(p.at("loss")),
                                 p.at("note").get<std::string>(), number_or_nan(p.at("accuracy")),
                                 number_or_nan(p.at("exact_match"))});
    for (const auto& p : j.value("memory", nlohmann::json::array()))
      r.memory.push_back({p.at("mem_len").get<std::int64_t>(), p.at("knn_size").get<std::int64_t>(),
                          number_or_nan(p.at("loss")), p.at("note").get<std::string>()});
    r.copy_span = j.value("copy_span", std::int64_t{0});
    r.copy_sequences = j.value("copy_sequences", std::int64_t{0});
    for (const auto& p : j.value("copy", nlohmann::json::array()))
      r.copy.push_back({p.at("distance").get<std::int64_t>(), p.at("segments").get<bool>(),
                        p.at("mem_len").get<std::int64_t>(), p.at("knn_size").get<std::int64_t>(),
                        number_or_nan(p.at("loss_repeat")), number_or_nan(p.at("loss_control")),
                        p.at("note").get<std::string>()});
    r.notes = j.at("notes").get<std::vector<std::string>>();
    return r;
  } catch (const nlohmann::json::exception&) {
    return std::nullopt;
  }
}

bool evaluated_with(const VariantResult& r, const VariantResult& planned) {
  const auto same_length = [](const LengthLoss& a, const LengthLoss& b) {
    return a.length == b.length;
  };
  const auto same_point = [](const MemoryLoss& a, const MemoryLoss& b) {
    return a.mem_len == b.mem_len && a.knn_size == b.knn_size;
  };
  const auto same_copy = [](const CopyGain& a, const CopyGain& b) {
    return a.distance == b.distance && a.segments == b.segments && a.mem_len == b.mem_len &&
           a.knn_size == b.knn_size;
  };
  return r.eval_batches == planned.eval_batches &&
         (planned.eval_batches > 0 || r.eval_sequences == planned.eval_sequences) &&
         std::equal(r.extrapolation.begin(), r.extrapolation.end(), planned.extrapolation.begin(),
                    planned.extrapolation.end(), same_length) &&
         std::equal(r.memory.begin(), r.memory.end(), planned.memory.begin(), planned.memory.end(),
                    same_point) &&
         r.copy_span == planned.copy_span && r.copy_sequences == planned.copy_sequences &&
         std::equal(r.copy.begin(), r.copy.end(), planned.copy.begin(), planned.copy.end(),
                    same_copy);
}

}  // namespace relpos
