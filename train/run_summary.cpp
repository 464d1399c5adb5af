#include "train/run_summary.h"

#include <fmt/format.h>

#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>

#include "autograd/error.h"
#include "train/metrics.h"
#include "train/store/atomic_file.h"

namespace relpos {

void write_summary(const std::filesystem::path& out_dir, const TrainSummary& s) {
  const nlohmann::json j = {{"steps", s.steps},
                            {"final_train_loss", s.final_train_loss},
                            {"final_val_loss", s.final_val_loss},
                            {"tokens_per_second", s.tokens_per_second},
                            {"wall_seconds", s.wall_seconds},
                            {"peak_rss_bytes", s.peak_rss_bytes},
                            {"peak_tensor_bytes", s.peak_tensor_bytes},
                            {"parameters", s.parameters},
                            {"world_size", s.world_size},
                            {"all_reduce_seconds_per_step", s.all_reduce_seconds_per_step}};
  write_file_atomic(out_dir / "summary.json", j.dump(2) + "\n");
}

std::optional<TrainSummary> read_summary(const std::filesystem::path& out_dir) {
  std::ifstream in(out_dir / "summary.json");
  if (!in) return std::nullopt;
  const nlohmann::json j = nlohmann::json::parse(in, nullptr, false);
  if (j.is_discarded()) return std::nullopt;
  // A NaN written by nlohmann::json reads back as null: treat it as NaN.
  auto number = [&](const char* key) {
    const auto it = j.find(key);
    return it != j.end() && it->is_number() ? it->get<double>()
                                            : std::numeric_limits<double>::quiet_NaN();
  };
  TrainSummary s;
  s.steps = j.value("steps", 0);
  s.final_train_loss = number("final_train_loss");
  s.final_val_loss = number("final_val_loss");
  s.tokens_per_second = number("tokens_per_second");
  s.wall_seconds = number("wall_seconds");
  s.peak_rss_bytes = j.value("peak_rss_bytes", std::size_t{0});
  s.peak_tensor_bytes = j.value("peak_tensor_bytes", std::size_t{0});
  s.parameters = j.value("parameters", 0);
  s.world_size = j.value("world_size", 1);
  s.all_reduce_seconds_per_step = j.value("all_reduce_seconds_per_step", 0.0);
  return s;
}

std::string format_summary(const TrainSummary& s) {
  return fmt::format(
      "summary: {} steps, train loss {:.4f}, val loss {:.4f} nats/token ({:.3f} bits/byte), "
      "{:.0f} tokens/s, wall {:.1f} s, peak RSS {:.1f} MiB, peak tensors {:.1f} MiB, {} "
      "parameters\n",
      s.steps, s.final_train_loss, s.final_val_loss, s.final_val_loss / 0.6931471805599453,
      s.tokens_per_second, s.wall_seconds, static_cast<double>(s.peak_rss_bytes) / 1048576.0,
      static_cast<double>(s.peak_tensor_bytes) / 1048576.0, s.parameters);
}

}  // namespace relpos
