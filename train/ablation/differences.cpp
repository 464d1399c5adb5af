#include "train/ablation/differences.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <numbers>
#include <set>

namespace relpos {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

const char* name_of(PairedMetric m) {
  return m == PairedMetric::bits_per_byte ? "bits_per_byte" : "exact_match";
}

// A run's value of `metric` at `length`; NaN where it has none.
double value_at(const VariantResult& r, PairedMetric metric, std::int64_t length) {
  for (const LengthLoss& p : r.extrapolation)
    if (p.length == length)
      return metric == PairedMetric::bits_per_byte ? p.loss / std::numbers::ln2 : p.exact_match;
  return kNaN;
}

std::map<std::uint64_t, double> by_seed(const VariantStats& v, PairedMetric metric,
                                        std::int64_t length) {
  std::map<std::uint64_t, double> values;
  for (const VariantResult* r : v.runs) values[r->seed] = value_at(*r, metric, length);
  return values;
}

Stat stat_at(const VariantStats& v, PairedMetric metric, std::int64_t length) {
  std::vector<double> values;
  for (const VariantResult* r : v.runs) values.push_back(value_at(*r, metric, length));
  return stat_of(values);
}

bool same_group(const VariantStats& a, const VariantStats& b) {
  return a.first->data_source == b.first->data_source &&
         a.first->train_length == b.first->train_length;
}

std::vector<std::int64_t> lengths_of(const VariantStats& v) {
  std::vector<std::int64_t> out;
  for (const LengthStats& p : v.lengths) out.push_back(p.length);
  return out;
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

// One table: every variant of the group against the best mean at each length.
std::string group_table(const std::vector<const VariantStats*>& group, PairedMetric metric) {
  std::set<std::int64_t> all;
  for (const VariantStats* v : group)
    for (const std::int64_t l : lengths_of(*v)) all.insert(l);
  std::vector<std::string> header = {"variant"};
  for (const std::int64_t l : all) header.push_back(fmt::format("@{}", l));
  std::string out = row(header) + row(std::vector<std::string>(header.size(), "---"));
  std::map<std::int64_t, const VariantStats*> best;  // the best mean at each length
  for (const std::int64_t l : all)
    for (const VariantStats* v : group) {
      const double mean = stat_at(*v, metric, l).mean;
      if (!std::isfinite(mean)) continue;
      const auto it = best.find(l);
      const double current = it == best.end() ? kNaN : stat_at(*it->second, metric, l).mean;
      const bool better = metric == PairedMetric::bits_per_byte ? mean < current : mean > current;
      if (it == best.end() || better) best[l] = v;
    }
  for (const VariantStats* v : group) {
    std::vector<std::string> cells = {v->first->name};
    for (const std::int64_t l : all) {
      const auto b = best.find(l);
      if (b == best.end()) {
        cells.push_back("n/a");
      } else if (b->second == v) {
        cells.push_back("best");
      } else {
        cells.push_back(
            signed_cell(paired_difference(by_seed(*v, metric, l), by_seed(*b->second, metric, l))));
      }
    }
    out += row(cells);
  }
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
        const std::vector<std::int64_t> la = lengths_of(a), lb = lengths_of(b);
        for (const std::int64_t l : la) {
          if (std::find(lb.begin(), lb.end(), l) == lb.end()) continue;
          const Stat d = paired_difference(by_seed(a, metric, l), by_seed(b, metric, l));
          if (d.n == 0) continue;
          out.push_back({metric, a.first->data_source, a.first->train_length, l, &a, &b, d});
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
      out += group_table(group, metric);
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
    out +=
        fmt::format("{},{},{},{},{},{},{},{},{},{},{},{}\n", name_of(d.metric), csv_field(d.data),
                    d.train_length, d.length, csv_field(d.a->first->name),
                    csv_field(d.b->first->name), d.difference.n, number(d.difference.mean),
                    number(d.difference.ci95), number(d.difference.low()),
                    number(d.difference.high()), d.difference.excludes_zero() ? "true" : "false");
  return out;
}

}  // namespace relpos
