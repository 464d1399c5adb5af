#include "train/ablation/differences.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <numbers>
#include <set>
#include <tuple>

namespace relpos {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

std::string name_of(PairedMetric m, std::int64_t mem_len, std::int64_t knn_size) {
  if (mem_len >= 0) return "bits_per_byte_" + memory_label(mem_len, knn_size);
  return m == PairedMetric::bits_per_byte ? "bits_per_byte" : "exact_match";
}

// A run's value of `measure`; NaN where it has none.
double value_at(const VariantResult& r, const PairedMeasure& measure) {
  if (measure.with_memory())
    return memory_loss(r, measure.mem_len, measure.knn_size) / std::numbers::ln2;
  for (const LengthLoss& p : r.extrapolation)
    if (p.length == measure.length)
      return measure.metric == PairedMetric::bits_per_byte ? p.loss / std::numbers::ln2
                                                           : p.exact_match;
  return kNaN;
}

std::map<std::uint64_t, double> by_seed(const VariantStats& v, const PairedMeasure& measure) {
  std::map<std::uint64_t, double> values;
  for (const VariantResult* r : v.runs) values[r->seed] = value_at(*r, measure);
  return values;
}

Stat stat_at(const VariantStats& v, const PairedMeasure& measure) {
  std::vector<double> values;
  for (const VariantResult* r : v.runs) values.push_back(value_at(*r, measure));
  return stat_of(values);
}

bool same_group(const VariantStats& a, const VariantStats& b) {
  return a.first->data_source == b.first->data_source &&
         a.first->train_length == b.first->train_length;
}

// What a variant was evaluated at, for `metric`: its lengths on windows, then (bits per
// byte only) its memory points.
std::vector<PairedMeasure> measures_of(const VariantStats& v, PairedMetric metric) {
  std::vector<PairedMeasure> out;
  for (const LengthStats& p : v.lengths) out.push_back({metric, p.length});
  if (metric == PairedMetric::bits_per_byte)
    for (const MemoryStats& p : v.memory)
      out.push_back({metric, v.first->train_length, p.mem_len, p.knn_size});
  return out;
}

bool same_measure(const PairedMeasure& a, const PairedMeasure& b) {
  return a.metric == b.metric && a.length == b.length && a.mem_len == b.mem_len &&
         a.knn_size == b.knn_size;
}

std::string signed_cell(const Stat& d) {
  if (d.n == 0) return "n/a";
  std::string cell = std::isfinite(d.ci95) ? fmt::format("{:+.4f} ± {:.4f}", d.mean, d.ci95)
                                           : fmt::format("{:+.4f} (n=1)", d.mean);
  return d.excludes_zero() ? "**" + cell + "**" : cell;
}

std::string row(const std::vector<std::string>& cells) {
  std::string out = "|";
  for (const std::string& c : cells) out += " " + c + " |";
  return out + "\n";
}

std::string heading_of(const PairedMeasure& m) {
  if (!m.with_memory()) return fmt::format("@{}", m.length);
  return m.knn_size > 0 ? fmt::format("mem {}, kNN {}", m.mem_len, m.knn_size)
                        : fmt::format("mem {}", m.mem_len);
}

// One table: every variant of the group against the best mean at each of `measures`.
std::string group_table(const std::vector<const VariantStats*>& group,
                        const std::vector<PairedMeasure>& measures) {
  std::vector<std::string> header = {"variant"};
  for (const PairedMeasure& m : measures) header.push_back(heading_of(m));
  std::string out = row(header) + row(std::vector<std::string>(header.size(), "---"));
  std::vector<const VariantStats*> best(measures.size(), nullptr);  // the best mean of each
  for (std::size_t k = 0; k < measures.size(); ++k)
    for (const VariantStats* v : group) {
      const double mean = stat_at(*v, measures[k]).mean;
      if (!std::isfinite(mean)) continue;
      const double current = best[k] ? stat_at(*best[k], measures[k]).mean : kNaN;
      const bool better =
          measures[k].metric == PairedMetric::bits_per_byte ? mean < current : mean > current;
      if (!best[k] || better) best[k] = v;
    }
  for (const VariantStats* v : group) {
    std::vector<std::string> cells = {v->first->name};
    for (std::size_t k = 0; k < measures.size(); ++k) {
      if (!best[k]) {
        cells.push_back("n/a");
      } else if (best[k] == v) {
        cells.push_back("best");
      } else {
        cells.push_back(signed_cell(
            paired_difference(by_seed(*v, measures[k]), by_seed(*best[k], measures[k]))));
      }
    }
    out += row(cells);
  }
  return out;
}

// The measures of any variant of the group, windows first (by length), then memory points.
std::vector<PairedMeasure> group_measures(const std::vector<const VariantStats*>& group,
                                          PairedMetric metric, bool with_memory) {
  std::set<std::tuple<std::int64_t, std::int64_t, std::int64_t>> keys;
  for (const VariantStats* v : group)
    for (const PairedMeasure& m : measures_of(*v, metric))
      if (m.with_memory() == with_memory) keys.emplace(m.mem_len, m.knn_size, m.length);
  std::vector<PairedMeasure> out;
  for (const auto& key : keys)
    out.push_back({metric, std::get<2>(key), std::get<0>(key), std::get<1>(key)});
  return out;
}

}  // namespace

std::vector<PairedDifference> paired_differences(const std::vector<VariantStats>& variants) {
  std::vector<PairedDifference> out;
  for (const PairedMetric metric : {PairedMetric::bits_per_byte, PairedMetric::exact_match})
    for (std::size_t i = 0; i < variants.size(); ++i)
      for (std::size_t j = i + 1; j < variants.size(); ++j) {
        const VariantStats& a = variants[i];
        const VariantStats& b = variants[j];
        if (!same_group(a, b)) continue;
        const std::vector<PairedMeasure> mb = measures_of(b, metric);
        for (const PairedMeasure& m : measures_of(a, metric)) {
          if (std::none_of(mb.begin(), mb.end(),
                           [&](const PairedMeasure& n) { return same_measure(m, n); }))
            continue;
          const Stat d = paired_difference(by_seed(a, m), by_seed(b, m));
          if (d.n == 0) continue;
          out.push_back({metric, a.first->data_source, a.first->train_length, m.length, m.mem_len,
                         m.knn_size, &a, &b, d});
        }
      }
  return out;
}

std::string differences_markdown(const std::vector<VariantStats>& variants) {
  // Groups of variants on one data set at one training length, in sweep order.
  std::vector<std::vector<const VariantStats*>> groups;
  for (const VariantStats& v : variants) {
    auto g = std::find_if(groups.begin(), groups.end(),
                          [&](const auto& group) { return same_group(*group.front(), v); });
    if (g == groups.end())
      groups.push_back({&v});
    else
      g->push_back(&v);
  }
  std::string out;
  for (const auto& group : groups) {
    if (group.size() < 2) continue;
    for (const PairedMetric metric : {PairedMetric::bits_per_byte, PairedMetric::exact_match}) {
      const bool any = std::any_of(group.begin(), group.end(), [&](const VariantStats* v) {
        for (const LengthStats& p : v->lengths)
          if (std::isfinite(metric == PairedMetric::bits_per_byte ? p.loss.mean
                                                                  : p.exact_match.mean))
            return true;
        return false;
      });
      if (!any) continue;
      out += fmt::format("\n### {} on {} (trained at {})\n\n",
                         metric == PairedMetric::bits_per_byte ? "Bits/byte" : "Exact match",
                         group.front()->first->data_source, group.front()->first->train_length);
      out += group_table(group, group_measures(group, metric, false));
      if (const auto memory = group_measures(group, metric, true); !memory.empty()) {
        out += fmt::format("\n### Bits/byte with memory on {} (trained at {})\n\n",
                           group.front()->first->data_source, group.front()->first->train_length);
        out += group_table(group, memory);
      }
    }
  }
  return out;
}

std::string differences_csv(const std::vector<VariantStats>& variants) {
  std::string out =
      "metric,data,train_length,length,variant_a,variant_b,n,mean,ci95,low,high,excludes_zero\n";
  const auto number = [](double x) {
    return std::isfinite(x) ? fmt::format("{:.6f}", x) : std::string("nan");
  };
  for (const PairedDifference& d : paired_differences(variants))
    out += fmt::format("{},{},{},{},{},{},{},{},{},{},{},{}\n",
                       name_of(d.metric, d.mem_len, d.knn_size), csv_field(d.data), d.train_length,
                       d.length, csv_field(d.a->first->name), csv_field(d.b->first->name),
                       d.difference.n, number(d.difference.mean), number(d.difference.ci95),
                       number(d.difference.low()), number(d.difference.high()),
                       d.difference.excludes_zero() ? "true" : "false");
  return out;
}

}  // namespace relpos
