#include "train/ablation/report.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <numbers>
#include <set>

#include "autograd/error.h"
#include "train/ablation/differences.h"
#include "train/store/atomic_file.h"

namespace relpos {
namespace fs = std::filesystem;

TurningPoint turning_point(const std::vector<std::pair<std::int64_t, double>>& loss_by_length,
                           std::int64_t train_length) {
  std::vector<std::pair<std::int64_t, double>> curve = loss_by_length;
  std::sort(curve.begin(), curve.end());
  const auto base = std::find_if(curve.begin(), curve.end(),
                                 [&](const auto& p) { return p.first == train_length; });
  if (base == curve.end() || !std::isfinite(base->second)) return {};
  TurningPoint t{train_length, true};
  for (auto p = base + 1; p != curve.end(); ++p) {
    if (!std::isfinite(p->second) || p->second > 1.01 * base->second) {
      t.last_evaluated = false;
      break;
    }
    t.length = p->first;
  }
  return t;
}

double memory_loss(const VariantResult& r, std::int64_t mem_len, std::int64_t knn_size) {
  for (const MemoryLoss& p : r.memory)
    if (p.mem_len == mem_len && p.knn_size == knn_size) return p.loss;
  return std::numeric_limits<double>::quiet_NaN();
}

std::vector<VariantStats> aggregate(const std::vector<VariantResult>& runs) {
  std::vector<VariantStats> out;
  for (const VariantResult& r : runs) {
    auto it = std::find_if(out.begin(), out.end(),
                           [&](const VariantStats& v) { return v.first->name == r.name; });
    if (it == out.end())
      it = out.insert(out.end(), VariantStats{&r, {}, {}, {}, {}, 0, 0, {}, {}, {}, {}});
    it->runs.push_back(&r);
  }
  for (VariantStats& v : out) {
    const auto over_runs = [&](auto value) {
      std::vector<double> values;
      for (const VariantResult* r : v.runs) values.push_back(value(*r));
      return stat_of(values);
    };
    v.final_val_loss = over_runs([](const VariantResult& r) { return r.final_val_loss; });
    v.tokens_per_second = over_runs([](const VariantResult& r) { return r.tokens_per_second; });
    v.wall_seconds = over_runs([](const VariantResult& r) { return r.wall_seconds; });
    std::set<std::int64_t> lengths;
    std::set<std::pair<std::int64_t, std::int64_t>> memory;  // (mem_len, knn_size)
    for (const VariantResult* r : v.runs) {
      v.peak_rss_bytes = std::max(v.peak_rss_bytes, r->peak_rss_bytes);
      v.peak_tensor_bytes = std::max(v.peak_tensor_bytes, r->peak_tensor_bytes);
      for (const LengthLoss& p : r->extrapolation) lengths.insert(p.length);
      for (const MemoryLoss& p : r->memory) memory.emplace(p.mem_len, p.knn_size);
    }
    for (const CopyGain& point : v.first->copy)
      v.copy.push_back({point, over_runs([&](const VariantResult& r) {
                          for (const CopyGain& c : r.copy)
                            if (copy_label(c) == copy_label(point)) return c.gain();
                          return std::numeric_limits<double>::quiet_NaN();
                        })});
    for (const auto& point : memory)
      v.memory.push_back({point.first, point.second, over_runs([&](const VariantResult& r) {
                            return memory_loss(r, point.first, point.second);
                          })});
    std::vector<std::pair<std::int64_t, double>> mean_curve;
    for (const std::int64_t length : lengths) {
      const auto at = [&](auto field) {
        return over_runs([&](const VariantResult& r) {
          for (const LengthLoss& p : r.extrapolation)
            if (p.length == length) return field(p);
          return std::numeric_limits<double>::quiet_NaN();
        });
      };
      LengthStats s{length, at([](const LengthLoss& p) { return p.loss; }),
                    at([](const LengthLoss& p) { return p.accuracy; }),
                    at([](const LengthLoss& p) { return p.exact_match; })};
      v.lengths.push_back(s);
      mean_curve.emplace_back(length, s.loss.mean);
    }
    v.turning = turning_point(mean_curve, v.first->train_length);
  }
  return out;
}

namespace {

std::string duration(double seconds) {
  const auto s = static_cast<std::int64_t>(std::llround(seconds));
  if (s >= 3600) return fmt::format("{}h {:02}m", s / 3600, s % 3600 / 60);
  return s >= 60 ? fmt::format("{}m {:02}s", s / 60, s % 60) : fmt::format("{}s", s);
}

}  // namespace

std::string progress_line(const SweepProgress& p) {
  std::string eta = "ETA n/a";
  if (p.runs_done >= p.runs_total) {
    eta = "finished";
  } else if (p.measured > 0) {
    const double per_run = p.elapsed_seconds / static_cast<double>(p.measured);
    eta = "ETA " + duration(per_run * static_cast<double>(p.runs_total - p.runs_done));
  }
  return fmt::format("progress: {}/{} runs, {}/{} variants done, {} elapsed, {}", p.runs_done,
                     p.runs_total, p.variants_done, p.variants_total, duration(p.elapsed_seconds),
                     eta);
}

namespace {

constexpr double kMiB = 1024.0 * 1024.0;

std::string number(double value, int decimals) {
  return std::isfinite(value) ? fmt::format("{:.{}f}", value, decimals) : "n/a";
}

std::string mib(std::size_t bytes) {
  return bytes > 0 ? fmt::format("{:.1f}", static_cast<double>(bytes) / kMiB) : "n/a";
}

// "mean ± h" over seeds, h the half-width of the 95% t interval of the mean ("mean" alone
// in a sweep without seeds), with "(n=k)" where fewer runs than the variant's gave a value.
std::string stat_cell(const Stat& s, int decimals, const VariantStats& v, bool seeded) {
  if (!seeded) return number(s.mean, decimals);
  std::string cell = number(s.mean, decimals) + " ± " + number(s.ci95, decimals);
  if (s.n == 0) return "n/a";
  return s.n == v.runs.size() ? cell : fmt::format("{} (n={})", cell, s.n);
}

std::string run_folder(const AblationSweep& sweep, const VariantResult& r) {
  return sweep.seeds.empty() ? r.name : fmt::format("{}/seed-{}", r.name, r.seed);
}

// Every evaluation length of any variant, ascending.
std::vector<std::int64_t> all_lengths(const std::vector<VariantStats>& variants) {
  std::set<std::int64_t> lengths;
  for (const VariantStats& v : variants)
    for (const LengthStats& p : v.lengths) lengths.insert(p.length);
  return {lengths.begin(), lengths.end()};
}

const LengthStats* at_length(const VariantStats& v, std::int64_t length) {
  for (const LengthStats& p : v.lengths)
    if (p.length == length) return &p;
  return nullptr;
}

// Every memory point (mem_len, knn_size) of any variant, ordered.
std::vector<std::pair<std::int64_t, std::int64_t>> all_memory_points(
    const std::vector<VariantStats>& variants) {
  std::set<std::pair<std::int64_t, std::int64_t>> points;
  for (const VariantStats& v : variants)
    for (const MemoryStats& p : v.memory) points.emplace(p.mem_len, p.knn_size);
  return {points.begin(), points.end()};
}

const MemoryStats* at_memory(const VariantStats& v, std::pair<std::int64_t, std::int64_t> point) {
  for (const MemoryStats& p : v.memory)
    if (p.mem_len == point.first && p.knn_size == point.second) return &p;
  return nullptr;
}

// The `none` variant ("none", or "none-<suffix>") trained on the same data at the same length.
const VariantStats* baseline_of(const VariantStats& v, const std::vector<VariantStats>& all) {
  for (const VariantStats& b : all)
    if ((b.first->name == "none" || b.first->name.starts_with("none-")) &&
        b.first->data_source == v.first->data_source &&
        b.first->train_length == v.first->train_length)
      return &b;
  return nullptr;
}

std::string turning_cell(const TurningPoint& t) {
  if (t.length == 0) return "n/a";
  return fmt::format("{}{}", t.last_evaluated ? "≥" : "", t.length);
}

std::string markdown_row(const std::vector<std::string>& cells) {
  std::string row = "|";
  for (const std::string& c : cells) row += " " + c + " |";
  return row + "\n";
}

std::string table_head(const std::vector<std::string>& header) {
  return markdown_row(header) + markdown_row(std::vector<std::string>(header.size(), "---"));
}

std::string main_table(const std::vector<VariantStats>& variants,
                       const std::vector<std::int64_t>& lengths, bool seeded) {
  std::vector<std::string> header = {"variant", "scheme", "data", "train L", "params"};
  if (seeded) header.push_back("seeds");
  header.insert(header.end(), {"bits/byte", "final val loss"});
  for (const std::int64_t l : lengths) header.push_back(fmt::format("loss @{}", l));
  for (const char* h : {"turning point", "tokens/s", "peak RSS MiB", "wall s"}) header.push_back(h);
  std::string out = table_head(header);
  for (const VariantStats& v : variants) {
    const VariantResult& r = *v.first;
    std::vector<std::string> row = {r.name, r.scheme, r.data_source, std::to_string(r.train_length),
                                    std::to_string(r.parameters)};
    if (seeded) row.push_back(std::to_string(v.runs.size()));
    Stat bits = v.final_val_loss;
    bits.mean /= std::numbers::ln2, bits.std /= std::numbers::ln2, bits.ci95 /= std::numbers::ln2;
    row.push_back(stat_cell(bits, 4, v, seeded));
    row.push_back(stat_cell(v.final_val_loss, 4, v, seeded));
    for (const std::int64_t l : lengths) {
      const LengthStats* p = at_length(v, l);
      row.push_back(p ? stat_cell(p->loss, 4, v, seeded) : "");
    }
    row.push_back(turning_cell(v.turning));
    row.push_back(stat_cell(v.tokens_per_second, 0, v, seeded));
    row.push_back(mib(v.peak_rss_bytes));
    row.push_back(stat_cell(v.wall_seconds, 1, v, seeded));
    out += markdown_row(row);
  }
  return out;
}

std::string relative_table(const std::vector<VariantStats>& variants,
                           const std::vector<std::int64_t>& lengths) {
  std::vector<std::string> header = {"variant", "baseline", "step time ×", "final val loss ×"};
  for (const std::int64_t l : lengths) header.push_back(fmt::format("loss @{} ×", l));
  std::string out = table_head(header);
  for (const VariantStats& v : variants) {
    const VariantStats* b = baseline_of(v, variants);
    std::vector<std::string> row = {v.first->name, b ? b->first->name : "–"};
    // Time per step relative to the baseline: both process the same tokens per step.
    row.push_back(b ? number(b->tokens_per_second.mean / v.tokens_per_second.mean, 2) : "–");
    row.push_back(b ? number(v.final_val_loss.mean / b->final_val_loss.mean, 3) : "–");
    for (const std::int64_t l : lengths) {
      const LengthStats* p = at_length(v, l);
      const LengthStats* q = b ? at_length(*b, l) : nullptr;
      row.push_back(p && q ? number(p->loss.mean / q->loss.mean, 3) : "–");
    }
    out += markdown_row(row);
  }
  return out;
}

std::string memory_table(const std::vector<VariantStats>& variants,
                         const std::vector<std::pair<std::int64_t, std::int64_t>>& points,
                         bool seeded) {
  std::vector<std::string> header = {"variant", "train L"};
  for (const auto& p : points)
    header.push_back(p.second > 0 ? fmt::format("mem {}, kNN {}", p.first, p.second)
                                  : fmt::format("mem {}", p.first));
  std::string out = table_head(header);
  for (const VariantStats& v : variants) {
    if (v.memory.empty()) continue;
    std::vector<std::string> row = {v.first->name, std::to_string(v.first->train_length)};
    for (const auto& p : points) {
      const MemoryStats* m = at_memory(v, p);
      row.push_back(m ? stat_cell(m->loss, 4, v, seeded) : "");
    }
    out += markdown_row(row);
  }
  return out;
}

// Every copy check column (copy_label) of any variant, in order of first appearance.
std::vector<std::string> all_copy_labels(const std::vector<VariantStats>& variants) {
  std::vector<std::string> labels;
  for (const VariantStats& v : variants)
    for (const CopyStats& c : v.copy)
      if (std::find(labels.begin(), labels.end(), copy_label(c.point)) == labels.end())
        labels.push_back(copy_label(c.point));
  return labels;
}

const CopyStats* at_copy(const VariantStats& v, const std::string& label) {
  for (const CopyStats& c : v.copy)
    if (copy_label(c.point) == label) return &c;
  return nullptr;
}

std::string copy_table(const std::vector<VariantStats>& variants,
                       const std::vector<std::string>& labels, bool seeded) {
  std::vector<std::string> header = {"variant"};
  for (const std::string& l : labels) header.push_back(l.substr(std::string("copy_").size()));
  std::string out = table_head(header);
  for (const VariantStats& v : variants) {
    if (v.copy.empty()) continue;
    std::vector<std::string> row = {v.first->name};
    for (const std::string& l : labels) {
      const CopyStats* c = at_copy(v, l);
      row.push_back(c ? stat_cell(c->gain, 4, v, seeded) : "");
    }
    out += markdown_row(row);
  }
  return out;
}

bool has_accuracy(const VariantStats& v) {
  return std::any_of(v.lengths.begin(), v.lengths.end(),
                     [](const LengthStats& p) { return p.accuracy.n + p.exact_match.n > 0; });
}

std::string accuracy_table(const std::vector<VariantStats>& variants,
                           const std::vector<std::int64_t>& lengths, bool seeded) {
  std::vector<std::string> header = {"variant"};
  for (const std::int64_t l : lengths) header.push_back(fmt::format("accuracy @{}", l));
  for (const std::int64_t l : lengths) header.push_back(fmt::format("exact match @{}", l));
  std::string out = table_head(header);
  for (const VariantStats& v : variants) {
    if (!has_accuracy(v)) continue;
    std::vector<std::string> row = {v.first->name};
    for (const bool exact : {false, true})
      for (const std::int64_t l : lengths) {
        const LengthStats* p = at_length(v, l);
        row.push_back(p ? stat_cell(exact ? p->exact_match : p->accuracy, 3, v, seeded) : "");
      }
    out += markdown_row(row);
  }
  return out;
}

std::string results_markdown(const AblationSweep& sweep, const std::vector<VariantResult>& runs) {
  const std::vector<VariantStats> variants = aggregate(runs);
  const std::vector<std::int64_t> lengths = all_lengths(variants);
  const bool seeded = !sweep.seeds.empty();
  std::string out = fmt::format("# Ablation: {}\n\n", sweep.file.string());
  out += fmt::format(
      "{} variants, each trained in `{}/<variant>{}`. Losses are the final model's validation "
      "cross-entropy in nats per scored token (per byte on text); bits/byte = loss / ln 2. "
      "\"loss @L\" is evaluated at length L (the training length is `train L`). The turning "
      "point is the longest length, going up from the training length, before the loss first "
      "rises more than 1% above its training-length value (≥: it never did). Peak RSS is the "
      "process's high-water mark during the variant's training.\n\n",
      variants.size(), sweep.out_dir.string(), seeded ? "/seed-<k>" : "");
  if (seeded) {
    std::string seeds;
    for (const std::uint64_t s : sweep.seeds)
      seeds += fmt::format("{}{}", seeds.empty() ? "" : ", ", s);
    out += fmt::format(
        "Every variant was trained once per seed ({}; folders `<variant>/seed-<k>`). Each cell "
        "is the mean ± the half-width of its 95% Student t interval over the seeds "
        "(t_0.975,n−1 · s / √n; the sample standard deviation s is in results.csv), `(n=k)` "
        "where only k runs gave a value; n/a where none did (or, for the interval, only one). "
        "The turning point is that of the mean curve; peak RSS the largest run's.\n\n",
        seeds);
  }
  out += main_table(variants, lengths, seeded);
  if (const auto points = all_memory_points(variants); !points.empty()) {
    out +=
        "\n## With memory\n\nThe final model's loss on the validation text read as "
        "data.batch_size contiguous streams, segment by segment at the training length, with "
        "a segment memory of M hidden states per layer (`mem M`, eval_mem_lengths; mem 0: "
        "each segment alone) and, for a model with a kNN layer, a kNN memory of S (key, value) "
        "pairs (`kNN S`, eval_knn_sizes). Every point of one variant scores the same "
        "tokens.\n\n";
    out += memory_table(variants, points, seeded);
  }
  if (const auto labels = all_copy_labels(variants); !labels.empty()) {
    out += fmt::format(
        "\n## In-context copy check\n\nThe gain in nats per token from seeing a span of {} "
        "validation tokens D tokens back: the loss on the span's repeat when its first "
        "occurrence is replaced by other text, minus the loss with it (gain_D; `_mem_M`: read "
        "as segments of the training length with that memory, else as one window of D + {} "
        "tokens). 0: the model does not use it.\n\n",
        variants.front().first->copy_span, variants.front().first->copy_span - 1);
    out += copy_table(variants, labels, seeded);
  }
  if (std::any_of(variants.begin(), variants.end(),
                  [&](const VariantStats& v) { return baseline_of(v, variants) != nullptr; })) {
    out +=
        "\n## Relative to none\n\nEach variant against the `none` variant (named `none` or "
        "`none-<suffix>`) trained on the same data at the same length, from the means: step "
        "time × is its time per step over the baseline's, loss × its loss over the baseline's "
        "(below 1: better).\n\n";
    out += relative_table(variants, lengths);
  }
  if (seeded) {
    const std::string differences = differences_markdown(variants);
    if (!differences.empty())
      out +=
          "\n## Differences paired by seed\n\nEach variant against the best one (by mean) at "
          "each evaluation length, among the variants trained on the same data at the same "
          "length: the mean over the seeds both ran of (its value − the best one's) ± the "
          "half-width of the 95% t interval of that paired difference. **Bold**: the interval "
          "excludes 0, the data separate the two; otherwise they do not. Every pair is in "
          "differences.csv.\n" +
          differences;
  }
  if (std::any_of(variants.begin(), variants.end(), has_accuracy)) {
    out +=
        "\n## Accuracy on the tasks\n\nNext-token accuracy on the answer tokens and the "
        "fraction of sequences whose answer tokens are all right (exact match), at each "
        "evaluation length; variants on data without answer tokens are left out.\n\n";
    out += accuracy_table(variants, lengths, seeded);
  }
  std::vector<std::string> notes;
  for (const VariantStats& v : variants) {
    for (const VariantResult* r : v.runs) {
      notes.insert(notes.end(), r->notes.begin(), r->notes.end());
      // Where a memory point or a copy check could not run (NaN in the tables).
      for (const MemoryLoss& p : r->memory)
        if (!p.note.empty())
          notes.push_back(fmt::format("{} {}: {}", run_folder(sweep, *r),
                                      memory_label(p.mem_len, p.knn_size), p.note));
      for (const CopyGain& p : r->copy)
        if (!p.note.empty())
          notes.push_back(fmt::format("{} {}: {}", run_folder(sweep, *r), copy_label(p), p.note));
    }
    for (const LengthStats& l : v.lengths) {
      // One line for a note that every seed gave alike, else one per run.
      std::vector<std::string> at_length;
      for (const VariantResult* r : v.runs)
        for (const LengthLoss& p : r->extrapolation)
          if (p.length == l.length) at_length.push_back(p.note);
      if (at_length.size() == v.runs.size() && !at_length[0].empty() &&
          std::all_of(at_length.begin(), at_length.end(),
                      [&](const std::string& n) { return n == at_length[0]; })) {
        notes.push_back(fmt::format("{} @{}: {}", v.first->name, l.length, at_length[0]));
        continue;
      }
      for (const VariantResult* r : v.runs)
        for (const LengthLoss& p : r->extrapolation)
          if (p.length == l.length && !p.note.empty())
            notes.push_back(fmt::format("{} @{}: {}", run_folder(sweep, *r), p.length, p.note));
    }
  }
  if (!notes.empty()) {
    out += "\n## Notes\n\n";
    for (const std::string& n : notes) out += "- " + n + "\n";
  }
  return out;
}

std::string csv_number(double value, int decimals) {
  return std::isfinite(value) ? fmt::format("{:.{}f}", value, decimals) : "nan";
}

// <name>,<name>_std,<name>_n,<name>_ci95 (the half-width of the 95% t interval)
std::string stat_columns(const std::string& name) {
  return fmt::format(",{0},{0}_std,{0}_n,{0}_ci95", name);
}

std::string stat_fields(const Stat& s, int decimals) {
  return fmt::format(",{},{},{},{}", csv_number(s.mean, decimals), csv_number(s.std, decimals), s.n,
                     csv_number(s.ci95, decimals));
}

std::string results_csv(const AblationSweep& sweep, const std::vector<VariantResult>& runs) {
  const std::vector<VariantStats> variants = aggregate(runs);
  const std::vector<std::int64_t> lengths = all_lengths(variants);
  std::string out = "variant,scheme,data,train_length,steps,params,seeds,runs";
  out += stat_columns("final_val_loss") + ",final_val_bpb";
  for (const char* metric : {"loss", "accuracy", "exact_match"})
    for (const std::int64_t l : lengths) out += stat_columns(fmt::format("{}_at_{}", metric, l));
  const auto points = all_memory_points(variants);
  for (const auto& p : points) out += stat_columns("loss_" + memory_label(p.first, p.second));
  const std::vector<std::string> copy_labels = all_copy_labels(variants);
  for (const std::string& l : copy_labels) out += stat_columns(l);
  out += ",turning_point,turning_point_last_evaluated";
  out += stat_columns("tokens_per_s") + ",peak_rss_mib,peak_tensor_mib" + stat_columns("wall_s");
  out += "\n";
  for (const VariantStats& v : variants) {
    const VariantResult& r = *v.first;
    std::string seeds, folders;
    for (const VariantResult* run : v.runs) {
      seeds += fmt::format("{}{}", seeds.empty() ? "" : " ", run->seed);
      folders += fmt::format("{}{}", folders.empty() ? "" : " ", run_folder(sweep, *run));
    }
    out += fmt::format("{},{},{},{},{},{},{},{}", csv_field(r.name), csv_field(r.scheme),
                       csv_field(r.data_source), r.train_length, r.steps, r.parameters, seeds,
                       csv_field(folders));
    out += stat_fields(v.final_val_loss, 6);
    out += fmt::format(",{}", csv_number(v.final_val_loss.mean / std::numbers::ln2, 6));
    for (const auto field : {&LengthStats::loss, &LengthStats::accuracy, &LengthStats::exact_match})
      for (const std::int64_t l : lengths) {
        const LengthStats* p = at_length(v, l);
        out += p ? stat_fields(p->*field, 6) : std::string(",,,,");
      }
    for (const auto& p : points) {
      const MemoryStats* m = at_memory(v, p);
      out += m ? stat_fields(m->loss, 6) : std::string(",,,,");
    }
    for (const std::string& l : copy_labels) {
      const CopyStats* c = at_copy(v, l);
      out += c ? stat_fields(c->gain, 6) : std::string(",,,,");
    }
    out += v.turning.length > 0 ? fmt::format(",{},{}", v.turning.length,
                                              v.turning.last_evaluated ? "true" : "false")
                                : std::string(",nan,false");
    const auto bytes_mib = [](std::size_t b) {
      return b > 0 ? csv_number(static_cast<double>(b) / kMiB, 3) : std::string("nan");
    };
    out += stat_fields(v.tokens_per_second, 1);
    out += fmt::format(",{},{}", bytes_mib(v.peak_rss_bytes), bytes_mib(v.peak_tensor_bytes));
    out += stat_fields(v.wall_seconds, 3) + "\n";
  }
  return out;
}

}  // namespace

std::string csv_field(const std::string& text) {
  if (text.find_first_of(",\"\n") == std::string::npos) return text;
  std::string quoted = "\"";
  for (const char c : text) quoted += c == '"' ? std::string("\"\"") : std::string(1, c);
  return quoted + "\"";
}

void write_ablation_report(const AblationSweep& sweep, const std::vector<VariantResult>& results) {
  std::error_code error;
  fs::create_directories(sweep.out_dir, error);
  require(!error, "out_dir '{}': cannot create it: {}", sweep.out_dir.string(), error.message());
  write_file_atomic(sweep.out_dir / "results.md", results_markdown(sweep, results));
  write_file_atomic(sweep.out_dir / "results.csv", results_csv(sweep, results));
  if (!sweep.seeds.empty())
    write_file_atomic(sweep.out_dir / "differences.csv", differences_csv(aggregate(results)));
}

}  // namespace relpos
