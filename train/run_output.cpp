#include "train/run_output.h"

#include <fmt/format.h>

#include <algorithm>
#include <iostream>

#include "autograd/allocator.h"
#include "train/device_placement.h"
#include "train/distributed/distributed.h"
#include "train/knn_state.h"
#include "train/store/atomic_file.h"
#include "train/store/checkpoint_folder.h"
#include "train/store/input_output.h"

namespace relpos {
namespace {

// The config_change event for metrics.jsonl (none when nothing changed), after one line
// on stderr.
std::vector<nlohmann::json> record_config_changes(const RunState& run) {
  if (run.config_changes.empty()) return {};
  nlohmann::json changes = nlohmann::json::object();
  std::string listed;
  for (const ConfigChange& change : run.config_changes) {
    changes[change.key] = nlohmann::json::array({change.before, change.after});
    listed += fmt::format("{}{} {} -> {}", listed.empty() ? "" : ", ", change.key, change.before,
                          change.after);
  }
  const bool initialised = !run.initialised_from.empty();
  nlohmann::json event = {{"event", "config_change"}, {"step", run.step}, {"changes", changes}};
  if (initialised) event["init_from"] = run.initialised_from.string();
  std::cerr << fmt::format(
      "relpos: {} with changed settings: {} (recorded in metrics.jsonl and config.{}.yaml)\n",
      initialised ? "initialised from " + run.initialised_from.string()
                  : fmt::format("resuming at step {}", run.step),
      listed, run.step);
  return {event};
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

RunOutput::RunOutput(const RunState& run, RunStart start)
    : config_(run.config),
      root_(is_root()),
      progress_(run.step, run.config.train.steps),
      step_at_start_(run.step),
      tokens_at_start_(run.tokens_seen) {
  const RunConfig& c = run.config;
  run_collectively([&] {
    if (!root_) return;
    // A resume continues the run in out_dir, unless --overwrite asks to move that run
    // aside for a checkpoint from elsewhere.
    const bool resume =
        !run.resumed_from.empty() &&
        (start != RunStart::overwrite || inside_folder(run.resumed_from, c.train.out_dir));
    folder_.emplace(c.train.out_dir, resume ? RunStart::resume : start, run.resumed_from);
    const std::filesystem::path dir = folder_->path();
    if (!folder_->moved_aside().empty())
      std::cerr << fmt::format("relpos: moved the earlier contents of {} to {}\n", dir.string(),
                               folder_->moved_aside().string());
    // The tokenizer model the run reads (a resume's folder holds the same one already: a
    // resume with another model is refused).
    if (!run.tokenizer_model.empty() && !std::filesystem::exists(dir / "tokenizer.model"))
      write_file_atomic(dir / "tokenizer.model", run.tokenizer_model);
    // A resume changes nothing else in the folder before its first checkpoint is saved.
    run_files_.emplace(dir, run.step, to_yaml(c), record_config_changes(run), resume);
  });
  out_ = folder_ ? folder_->path() : std::filesystem::path(c.train.out_dir);
  start_time_ = window_start_ = std::chrono::steady_clock::now();
  summary_.parameters = run.model->parameter_count();
  summary_.world_size = world_size();
  allocator_for(run.device).reset_peak();
  const int ranks = world_size();
  say(fmt::format(
      "relpos: {} parameters on {}, {}, {} steps from step {}, out_dir {}{}", summary_.parameters,
      name_of(run.device), run.data->describe(), c.train.steps, run.step, out_.string(),
      ranks > 1 ? fmt::format(", {} MPI ranks of {} rows", ranks, c.data.batch_size / ranks) : ""));
}

void RunOutput::say(const std::string& line) {
  if (root_) progress_.message(line);
}

void RunOutput::record(const nlohmann::json& record) {
  if (run_files_) run_files_->write(record);
}

void RunOutput::rewind_metrics(std::int64_t step) {
  if (run_files_) run_files_->truncate_after(step, true);
}

void RunOutput::step_done(const RunState& run, double lr, const StepResult& step, bool log) {
  window_tokens_ += step.tokens;
  window_all_reduce_seconds_ += step.all_reduce_seconds;
  all_reduce_seconds_ += step.all_reduce_seconds;
  ++window_steps_;
  if (!log) return;
  const double tps =
      static_cast<double>(window_tokens_) / std::max(seconds_since(window_start_), 1e-9);
  nlohmann::json line = {
      {"step", run.step},    {"loss", step.loss},        {"lr", lr}, {"grad_norm", step.grad_norm},
      {"tokens_per_s", tps}, {"tokens", run.tokens_seen}};
  // The kNN layer's gates, one per head: their trajectory (tools/plot.py knn-gates).
  if (const std::vector<double> gates = knn_gates(*run.model); !gates.empty())
    line["knn_gate"] = gates;
  if (summary_.world_size > 1) {
    line["world_size"] = summary_.world_size;
    line["all_reduce_s_per_step"] = window_all_reduce_seconds_ / static_cast<double>(window_steps_);
  }
  record(line);
  if (root_) progress_.update(run.step, step.loss, lr, tps);
  window_start_ = std::chrono::steady_clock::now();
  window_tokens_ = 0;
  window_all_reduce_seconds_ = 0.0;
  window_steps_ = 0;
}

void RunOutput::evaluated(std::int64_t step, const EvalPoint& p, bool record_it) {
  const bool has_answers = !std::isnan(p.accuracy);  // a task (train/answer_accuracy.h)
  if (record_it) {
    nlohmann::json line = {{"step", step},
                           {"val_loss", p.loss},
                           {"val_bpb", p.bits_per_byte},
                           {"val_ppl", p.perplexity}};
    if (has_answers) {
      line["val_accuracy"] = p.accuracy;
      line["val_exact_match"] = p.exact_match;
    }
    record(line);
  }
  say(fmt::format(
      "step {}: val loss {:.4f} ({:.3f} bits/byte){}", step, p.loss, p.bits_per_byte,
      has_answers ? fmt::format(", accuracy {:.4f}, exact match {:.4f}", p.accuracy, p.exact_match)
                  : ""));
  summary_.final_val_loss = p.loss;
  summary_.final_val_bits_per_byte = p.bits_per_byte;
}

std::filesystem::path RunOutput::save_checkpoint(const Checkpoint& state, std::int64_t step) {
  const std::filesystem::path path = checkpoint_path(checkpoints(), step);
  if (root_) {
    run_files_->save_checkpoint([&] { relpos::save_checkpoint(path, state); },
                                [&](const std::string& line) { say(line); });
    keep_last_checkpoints(checkpoints(), static_cast<int>(config_.train.keep_checkpoints));
  }
  barrier();  // every rank may read it back (a rollback) once it is complete
  return path;
}

TrainSummary RunOutput::finish(const RunState& run, double loss) {
  if (root_) progress_.finish();
  summary_.steps = run.step;
  summary_.final_train_loss = loss;
  summary_.wall_seconds = seconds_since(start_time_);
  summary_.tokens_per_second = static_cast<double>(run.tokens_seen - tokens_at_start_) /
                               std::max(summary_.wall_seconds, 1e-9);
  summary_.peak_rss_bytes = peak_rss_bytes();
  summary_.peak_tensor_bytes = allocator_for(run.device).stats().peak_bytes;
  const std::int64_t steps_run = run.step - step_at_start_;
  summary_.all_reduce_seconds_per_step =
      steps_run > 0 ? all_reduce_seconds_ / static_cast<double>(steps_run) : 0.0;
  if (root_) write_summary(out_, summary_);
  return summary_;
}

}  // namespace relpos
