// relpos_compare_runs RUN_A RUN_B STEP TOLERANCE [PARAMETER_TOLERANCE]: compares two run
// folders, the training loss of every metrics.jsonl record and every parameter and
// optimizer tensor of checkpoints/ckpt_<STEP>.h5. Prints the largest relative differences
// (a loss against its value, a tensor's elements against the tensor's largest magnitude)
// and exits 1 when the losses' or the optimizer state's exceeds TOLERANCE or the
// parameters' exceeds PARAMETER_TOLERANCE (default TOLERANCE; 0: bit-identical), 2 on bad
// input.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>

#include "train/store/checkpoint.h"
#include "train/store/checkpoint_folder.h"

namespace {

std::vector<double> losses(const std::filesystem::path& run) {
  std::ifstream in(run / "metrics.jsonl");
  std::vector<double> out;
  for (std::string line; std::getline(in, line);) {
    const auto record = nlohmann::json::parse(line);
    if (record.contains("loss")) out.push_back(record["loss"].get<double>());
  }
  return out;
}

// The largest |a − b| over the tensors' elements, relative to the largest |a|.
double tensor_difference(const relpos::Tensor& a, const relpos::Tensor& b) {
  const std::vector<double> x = a.to_vector(), y = b.to_vector();
  double scale = 0.0, diff = 0.0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    scale = std::max(scale, std::abs(x[i]));
    diff = std::max(diff, std::abs(x[i] - y[i]));
  }
  return diff == 0.0 ? 0.0 : diff / std::max(scale, 1e-30);
}

double maps_difference(const std::map<std::string, relpos::Tensor>& a,
                       const std::map<std::string, relpos::Tensor>& b, std::string& worst) {
  if (a.size() != b.size()) throw std::runtime_error("the checkpoints hold other tensors");
  double most = 0.0;
  for (const auto& [name, tensor] : a) {
    const double d = tensor_difference(tensor, b.at(name));
    if (d >= most) worst = name;
    most = std::max(most, d);
  }
  return most;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 5 && argc != 6) {
    std::cerr << "usage: relpos_compare_runs RUN_A RUN_B STEP TOLERANCE [PARAMETER_TOLERANCE]\n";
    return 2;
  }
  try {
    const std::filesystem::path a = argv[1], b = argv[2];
    const std::int64_t step = std::stoll(argv[3]);
    const double tolerance = std::stod(argv[4]);
    const double parameter_tolerance = argc == 6 ? std::stod(argv[5]) : tolerance;
    const std::vector<double> la = losses(a), lb = losses(b);
    if (la.empty() || la.size() != lb.size()) {
      std::cerr << fmt::format("loss records: {} vs {}\n", la.size(), lb.size());
      return 1;
    }
    double loss_diff = 0.0;
    for (std::size_t i = 0; i < la.size(); ++i)
      loss_diff = std::max(loss_diff, std::abs(la[i] - lb[i]) / std::abs(la[i]));
    const auto ca = relpos::load_checkpoint(relpos::checkpoint_path(a / "checkpoints", step));
    const auto cb = relpos::load_checkpoint(relpos::checkpoint_path(b / "checkpoints", step));
    std::string worst_param, worst_state;
    const double param_diff = maps_difference(ca.params, cb.params, worst_param);
    const double state_diff = maps_difference(ca.optim, cb.optim, worst_state);
    std::cout << fmt::format(
        "{} losses: max relative difference {:.3g}; parameters at step {}: {:.3g} ({}); "
        "optimizer state: {:.3g} ({}); tolerances {:.3g}, parameters {:.3g}\n",
        la.size(), loss_diff, step, param_diff, worst_param, state_diff, worst_state, tolerance,
        parameter_tolerance);
    const bool ok =
        loss_diff <= tolerance && state_diff <= tolerance && param_diff <= parameter_tolerance;
    return ok ? 0 : 1;
  } catch (const std::exception& e) {
    std::cerr << "relpos_compare_runs: " << e.what() << "\n";
    return 2;
  }
}
