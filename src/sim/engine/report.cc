// morpheus-sim report files (layout after
// Morpheus OSDI'16 §9, Fig. 9-10).
//
// Files written into the report directory:
//   summary.json                     summaryJson(): sorted keys, %.6f doubles
//   strategies.csv                   one row per strategy (the summary table)
//   <strategy>/instances.csv         one row per evaluated periodic instance
//   <strategy>/adhoc.csv             one row per ad-hoc job
//   <strategy>/utilisation.csv       cluster utilisation per plan step
//   <strategy>/utilisation_binned.csv  its means over kUtilisationBins bins (plotted)
//   <strategy>/provisioned_used_cdf.csv, <strategy>/adhoc_jct_cdf.csv  plot data
//   report.gp, *.png, gnuplot.log    the plots (PNG only when gnuplot runs)
//   report.md                        tables and plots, reading like §9
// <strategy> is the strategy name with characters outside [A-Za-z0-9._-]
// replaced by '_'. Everything is a function of the SimSummary, so equal
// input gives equal files (gnuplot's PNGs aside).
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include "sim/engine/report.h"

namespace morpheus::sim {

namespace {

namespace fs = std::filesystem;

std::string fixed(double v, int precision = 6) {
  if (!std::isfinite(v)) return "null";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", precision, v);
  return buf;
}

std::string quoted(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

// A JSON object from already-rendered values; std::map sorts the keys.
std::string renderObject(const std::map<std::string, std::string>& fields, int depth) {
  if (fields.empty()) return "{}";
  const std::string pad(static_cast<size_t>(2 * (depth + 1)), ' ');
  std::string out = "{\n";
  size_t i = 0;
  for (const auto& [key, value] : fields) {
    out += pad + quoted(key) + ": " + value + (++i < fields.size() ? ",\n" : "\n");
  }
  return out + std::string(static_cast<size_t>(2 * depth), ' ') + "}";
}

const StrategyResult* baselineOf(const SimSummary& s) {
  for (const auto& r : s.strategies) {
    if (r.name == "baseline") return &r;
  }
  return nullptr;
}

// Baseline rate over the strategy's: how many times fewer violations (the
// paper's "5-13x fewer"); +inf when the strategy has none and the baseline
// some (rendered null in JSON), nullopt without a baseline or instances.
std::optional<double> ratioOver(double base_rate, double rate, const StrategyResult* base,
                                const StrategyResult& r) {
  if (base == nullptr || base->periodic_instances == 0 || r.periodic_instances == 0) {
    return std::nullopt;
  }
  if (rate == 0) return base_rate == 0 ? 1.0 : HUGE_VAL;
  return base_rate / rate;
}
std::optional<double> worstCaseRatio(const StrategyResult& r, const StrategyResult* base) {
  return base ? ratioOver(base->worst_case_violation_rate, r.worst_case_violation_rate, base, r)
              : std::nullopt;
}
std::optional<double> withAdhocRatio(const StrategyResult& r, const StrategyResult* base) {
  return base ? ratioOver(base->violation_rate, r.violation_rate, base, r) : std::nullopt;
}

// The paper's metric first (Morpheus OSDI'16 §8 counts worst-case misses):
// per strategy, worst-case violations next to the violations with the ad-hoc
// load, and both ratios over the baseline.
std::string renderHeadline(const SimSummary& s, int depth) {
  const StrategyResult* base = baselineOf(s);
  std::map<std::string, std::string> strategies;
  for (const auto& r : s.strategies) {
    std::map<std::string, std::string> f = {
        {"worst_case_violations", std::to_string(r.worst_case_violations)},
        {"worst_case_violation_rate", fixed(r.worst_case_violation_rate)},
        {"violations_with_adhoc_load", std::to_string(r.deadline_violations)},
        {"violation_rate_with_adhoc_load", fixed(r.violation_rate)},
        {"periodic_instances", std::to_string(r.periodic_instances)},
    };
    if (auto x = worstCaseRatio(r, base)) f["worst_case_baseline_over_strategy"] = fixed(*x);
    if (auto x = withAdhocRatio(r, base)) f["baseline_over_strategy_with_adhoc_load"] = fixed(*x);
    strategies.emplace(r.name, renderObject(f, depth + 2));
  }
  std::map<std::string, std::string> h = {
      {"metric", quoted("worst_case_violations")},
      {"definition",
       quoted("worst case (Morpheus OSDI'16 section 8): an instance is judged on its reserved "
              "capacity only (its placement and DRA grants), as if no opportunistic (fair-share, "
              "ad-hoc) capacity existed; with_adhoc_load: judged on the capacity it actually got "
              "in the simulated cluster, ad-hoc load included. Ratios: the baseline's rate over "
              "the strategy's (null: the strategy has none left)")},
      {"strategies", renderObject(strategies, depth + 1)},
  };
  return renderObject(h, depth);
}

std::string renderStrategy(const StrategyResult& r, int depth) {
  std::map<std::string, std::string> f = {
      {"periodic_instances", std::to_string(r.periodic_instances)},
      {"deadline_violations", std::to_string(r.deadline_violations)},
      {"violation_rate", fixed(r.violation_rate)},
      {"worst_case_violations", std::to_string(r.worst_case_violations)},
      {"worst_case_violation_rate", fixed(r.worst_case_violation_rate)},
      {"utilisation", fixed(r.utilisation)},
      {"adhoc_jct_median_s", fixed(r.adhoc_jct_median_s)},
      {"adhoc_jct_p95_s", fixed(r.adhoc_jct_p95_s)},
  };
  if (r.min_nodes_at_baseline_rate) {
    f["min_nodes_at_baseline_rate"] = std::to_string(*r.min_nodes_at_baseline_rate);
  }
  if (!r.min_cluster_search.empty()) {
    // An array in search order, one object per size evaluated.
    const std::string pad(static_cast<size_t>(2 * (depth + 2)), ' ');
    std::string steps = "[\n";
    for (size_t i = 0; i < r.min_cluster_search.size(); i++) {
      const SearchStep& st = r.min_cluster_search[i];
      steps += pad + renderObject({{"matches", st.matches ? "true" : "false"},
                                   {"nodes", std::to_string(st.nodes)},
                                   {"rate", fixed(st.rate)}},
                                  depth + 2);
      steps += i + 1 < r.min_cluster_search.size() ? ",\n" : "\n";
    }
    f["min_cluster_search"] = steps + std::string(static_cast<size_t>(2 * (depth + 1)), ' ') + "]";
  }
  if (!r.extra.empty()) {
    std::map<std::string, std::string> extra;
    for (const auto& [k, v] : r.extra) extra[k] = fixed(v);
    f["extra"] = renderObject(extra, depth + 1);
  }
  return renderObject(f, depth);
}

std::string dirName(const std::string& strategy) {
  std::string out = strategy;
  for (char& c : out) {
    const bool ok = std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-';
    if (!ok) c = '_';
  }
  if (out.find_first_not_of('.') == std::string::npos) out = "_" + out;
  return out;
}

Status checkNames(const SimSummary& s) {
  std::set<std::string> dirs;
  for (size_t i = 0; i < s.strategies.size(); i++) {
    const std::string& name = s.strategies[i].name;
    const std::string field = "strategies[" + std::to_string(i) + "].name";
    if (name.empty()) return invalidArgument(field, "must not be empty");
    if (!dirs.insert(dirName(name)).second) {
      return invalidArgument(field, "'" + name + "' repeats the directory of an earlier strategy");
    }
  }
  return Status::ok();
}

Status writeFile(const fs::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  out.close();
  if (!out) return unavailable("report: cannot write '" + path.string() + "'");
  return Status::ok();
}

double provisionedUsedRatio(const InstanceOutcome& o) {
  return o.used_container_s > 0 ? o.reserved_container_s / o.used_container_s : 0.0;
}

// Empirical CDF rows "value,fraction" of the positive values.
std::string cdfCsv(std::vector<double> values, const char* header) {
  values.erase(std::remove_if(values.begin(), values.end(), [](double v) { return !(v > 0); }),
               values.end());
  std::sort(values.begin(), values.end());
  std::string out = std::string(header) + ",fraction\n";
  for (size_t i = 0; i < values.size(); i++) {
    out += fixed(values[i]) + "," + fixed(static_cast<double>(i + 1) / values.size()) + "\n";
  }
  return out;
}

std::vector<double> ratios(const StrategyResult& r) {
  std::vector<double> v;
  for (const auto& o : r.instances) v.push_back(provisionedUsedRatio(o));
  return v;
}

std::vector<double> finishedJctS(const StrategyResult& r) {
  std::vector<double> v;
  for (const auto& a : r.adhoc) {
    if (a.completion >= Millis(0)) v.push_back(static_cast<double>(a.completion.count()) / 1000.0);
  }
  return v;
}

std::string instancesCsv(const StrategyResult& r) {
  std::string out =
      "job,index,met,failed,worst_case_met,runtime_s,lateness_s,reserved_container_s,"
      "used_container_s,provisioned_used_ratio,dra_grants\n";
  for (const auto& o : r.instances) {
    out += o.job + "," + std::to_string(o.index) + "," + std::to_string(o.met) + "," +
           std::to_string(o.failed) + "," + std::to_string(o.worst_case_met) + "," +
           fixed(o.runtime.count() / 1000.0, 3) + "," + fixed(o.lateness.count() / 1000.0, 3) +
           "," + fixed(o.reserved_container_s, 3) + "," + fixed(o.used_container_s, 3) + "," +
           fixed(provisionedUsedRatio(o)) + "," + std::to_string(o.dra_grants) + "\n";
  }
  return out;
}

std::string adhocCsv(const StrategyResult& r) {
  std::string out = "job,submit_s,completion_s\n";
  for (const auto& a : r.adhoc) {
    out += a.job + "," + fixed(a.submit.count() / 1000.0, 3) + "," +
           fixed(a.completion.count() / 1000.0, 3) + "\n";
  }
  return out;
}

// The utilisation plot shows means over this many equal bins of plan steps:
// thousands of raw steps swinging with every hourly burst are unreadable.
constexpr size_t kUtilisationBins = 120;

std::string binnedUtilisationCsv(const StrategyResult& r) {
  const auto& u = r.utilisation_series;
  const size_t width = std::max<size_t>(1, (u.size() + kUtilisationBins - 1) / kUtilisationBins);
  std::string out = "first_step,mean_utilisation\n";
  for (size_t start = 0; start < u.size(); start += width) {
    const size_t end = std::min(u.size(), start + width);
    double sum = 0;
    for (size_t i = start; i < end; i++) sum += u[i];
    out += std::to_string(start) + "," + fixed(sum / static_cast<double>(end - start)) + "\n";
  }
  return out;
}

std::string utilisationCsv(const StrategyResult& r) {
  std::string out = "step,utilisation\n";
  for (size_t i = 0; i < r.utilisation_series.size(); i++) {
    out += std::to_string(i) + "," + fixed(r.utilisation_series[i]) + "\n";
  }
  return out;
}

// "13.0x" style: baseline violations / this strategy's (Morpheus §8).
std::string ratioText(std::optional<double> x, double base_rate) {
  if (!x) return "-";
  if (!std::isfinite(*x)) return "none left";
  if (base_rate == 0) return "equal (none)";
  return fixed(*x, 1) + "x";
}
std::string vsBaseline(const StrategyResult& r, const StrategyResult* base) {
  return ratioText(withAdhocRatio(r, base), base ? base->violation_rate : 0);
}
std::string vsBaselineWorstCase(const StrategyResult& r, const StrategyResult* base) {
  return ratioText(worstCaseRatio(r, base), base ? base->worst_case_violation_rate : 0);
}

std::string strategiesCsv(const SimSummary& s) {
  const StrategyResult* base = baselineOf(s);
  std::string out =
      "strategy,periodic_instances,deadline_violations,violation_rate,worst_case_violations,"
      "worst_case_violation_rate,utilisation,adhoc_jct_median_s,adhoc_jct_p95_s,"
      "min_nodes_at_baseline_rate,baseline_over_strategy_violation_rate,"
      "baseline_over_strategy_worst_case_violation_rate\n";
  for (const auto& r : s.strategies) {
    const bool ratio = base && r.violation_rate > 0;
    out += dirName(r.name) + "," + std::to_string(r.periodic_instances) + "," +
           std::to_string(r.deadline_violations) + "," + fixed(r.violation_rate) + "," +
           std::to_string(r.worst_case_violations) + "," + fixed(r.worst_case_violation_rate) +
           "," + fixed(r.utilisation) + "," + fixed(r.adhoc_jct_median_s) + "," +
           fixed(r.adhoc_jct_p95_s) + "," +
           (r.min_nodes_at_baseline_rate ? std::to_string(*r.min_nodes_at_baseline_rate) : "") +
           "," + (ratio ? fixed(base->violation_rate / r.violation_rate) : "") + "," +
           (base && r.worst_case_violation_rate > 0
                ? fixed(base->worst_case_violation_rate / r.worst_case_violation_rate)
                : "") +
           "\n";
  }
  return out;
}

// ---- Plots (gnuplot) ----

struct Plot {
  std::string file;   // PNG name in the report directory
  std::string title;  // markdown caption
};

// One line plot with a series per strategy that has data in `csv` (a file
// name under each strategy directory); nothing when no strategy has data.
std::string seriesPlot(const SimSummary& s, const std::string& csv, const std::string& png,
                       const std::string& setup, const std::string& style,
                       const std::function<bool(const StrategyResult&)>& has_data) {
  std::string plots;
  for (const auto& r : s.strategies) {
    if (!has_data(r)) continue;
    if (!plots.empty()) plots += ", \\\n     ";
    plots += "\"" + dirName(r.name) + "/" + csv + "\" every ::1 using 1:2 with " + style +
             " title \"" + dirName(r.name) + "\"";
  }
  if (plots.empty()) return "";
  return "reset\nset datafile separator \",\"\nset key noenhanced outside bottom center "
         "horizontal\nset grid\n" +
         setup + "set output \"" + png + "\"\nplot " + plots + "\n\n";
}

bool anyPositive(const std::vector<double>& v) {
  return std::any_of(v.begin(), v.end(), [](double x) { return x > 0; });
}

// The gnuplot script and the plots it draws (only those with data).
std::string gnuplotScript(const SimSummary& s, std::vector<Plot>& plots) {
  std::string gp =
      "# morpheus-sim report plots (Morpheus OSDI'16 Fig. 9-10); run: gnuplot report.gp\n"
      "set terminal png size 900,540 noenhanced\n\n";
  if (!s.strategies.empty()) {
    gp +=
        "reset\nset datafile separator \",\"\nset key noenhanced\nset style data histograms\n"
        "set style histogram clustered gap 1\nset style fill solid 0.8 border -1\n"
        "set xtics rotate by -30 noenhanced\nset yrange [0:*]\nset grid ytics\n"
        "set ylabel \"periodic instances (%)\"\n"
        "set title \"Deadline violations per strategy (cf. Fig. 10a)\"\n"
        "set output \"violations.png\"\n"
        "plot \"strategies.csv\" every ::1 using ($6*100):xtic(1) title \"worst-case violations "
        "(reserved capacity only)\", \\\n"
        "     \"\" every ::1 using ($4*100) title \"violations with the ad-hoc load\"\n\n";
    plots.push_back(
        {"violations.png", "Worst-case violations and violations with the ad-hoc load"});
  }
  std::string part =
      seriesPlot(s, "provisioned_used_cdf.csv", "provisioned_used_cdf.png",
                 "set logscale x\nset xlabel \"provisioned / used container-seconds\"\n"
                 "set ylabel \"CDF of periodic instances\"\nset yrange [0:1]\n"
                 "set title \"Provisioned over used (cf. Fig. 2a, 9c)\"\n",
                 "steps", [](const StrategyResult& r) { return anyPositive(ratios(r)); });
  if (!part.empty()) plots.push_back({"provisioned_used_cdf.png", "Provisioned / used, CDF"});
  gp += part;
  part = seriesPlot(s, "utilisation_binned.csv", "utilisation.png",
                    "set xlabel \"plan step of the evaluation days (each point: mean of 1/" +
                        std::to_string(kUtilisationBins) +
                        " of them)\"\n"
                        "set ylabel \"cluster utilisation (dominant share)\"\nset yrange [0:1]\n"
                        "set title \"Utilisation over time\"\n",
                    "lines", [](const StrategyResult& r) { return !r.utilisation_series.empty(); });
  if (!part.empty()) plots.push_back({"utilisation.png", "Utilisation over time"});
  gp += part;
  part = seriesPlot(s, "adhoc_jct_cdf.csv", "adhoc_jct_cdf.png",
                    "set logscale x\nset xlabel \"ad-hoc job completion time (s)\"\n"
                    "set ylabel \"CDF of finished ad-hoc jobs\"\nset yrange [0:1]\n"
                    "set title \"Ad-hoc job completion times\"\n",
                    "steps", [](const StrategyResult& r) { return anyPositive(finishedJctS(r)); });
  if (!part.empty()) plots.push_back({"adhoc_jct_cdf.png", "Ad-hoc job completion times, CDF"});
  gp += part;
  return gp;
}

bool gnuplotInstalled() {
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path ? path : "");
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    if (!dir.empty() && ::access((fs::path(dir) / "gnuplot").c_str(), X_OK) == 0) return true;
  }
  return false;
}

// Runs `gnuplot report.gp` in `dir` with output to gnuplot.log; true when it
// exits 0.
bool runGnuplot(const fs::path& dir) {
  const std::string log = (dir / "gnuplot.log").string();
  const std::string cwd = dir.string();
  pid_t pid = ::fork();
  if (pid < 0) return false;
  if (pid == 0) {
    int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0) {
      ::dup2(fd, 1);
      ::dup2(fd, 2);
    }
    if (::chdir(cwd.c_str()) != 0) ::_exit(126);
    ::execlp("gnuplot", "gnuplot", "report.gp", static_cast<char*>(nullptr));
    ::_exit(127);
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return false;
  }
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

// ---- report.md ----

std::string percent(double rate) { return fixed(100.0 * rate, 2) + "%"; }

double quantile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const auto i = static_cast<size_t>(std::ceil(q * static_cast<double>(v.size()))) - 1;
  return v[std::min(i, v.size() - 1)];
}

std::string strategyTable(const SimSummary& s) {
  const StrategyResult* base = baselineOf(s);
  std::string md =
      "| strategy | instances | worst-case violations | worst-case rate | baseline / strategy "
      "(worst case) | violations with ad-hoc load | rate | baseline / strategy | utilisation | "
      "ad-hoc JCT median (s) | p95 (s) |\n"
      "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n";
  for (const auto& r : s.strategies) {
    md += "| " + r.name + " | " + std::to_string(r.periodic_instances) + " | " +
          std::to_string(r.worst_case_violations) + " | " + percent(r.worst_case_violation_rate) +
          " | " + vsBaselineWorstCase(r, base) + " | " + std::to_string(r.deadline_violations) +
          " | " + percent(r.violation_rate) + " | " + vsBaseline(r, base) + " | " +
          percent(r.utilisation) + " | " + fixed(r.adhoc_jct_median_s, 1) + " | " +
          fixed(r.adhoc_jct_p95_s, 1) + " |\n";
  }
  return md;
}

std::string ratioTable(const SimSummary& s) {
  std::string md =
      "| strategy | median | p90 | instances over-provisioned (> 1.1) |\n"
      "|---|---:|---:|---:|\n";
  for (const auto& r : s.strategies) {
    std::vector<double> v = ratios(r);
    v.erase(std::remove_if(v.begin(), v.end(), [](double x) { return !(x > 0); }), v.end());
    const auto over = std::count_if(v.begin(), v.end(), [](double x) { return x > 1.1; });
    md += "| " + r.name + " | " + fixed(quantile(v, 0.5), 2) + " | " + fixed(quantile(v, 0.9), 2) +
          " | " + (v.empty() ? "-" : percent(static_cast<double>(over) / v.size())) + " |\n";
  }
  return md;
}

std::string minClusterSection(const SimSummary& s) {
  std::string md;
  const StrategyResult* base = baselineOf(s);
  for (const auto& r : s.strategies) {
    auto wc = r.extra.find("min_cluster_worst_case");
    const bool worst = wc != r.extra.end() && wc->second > 0;
    auto matches = r.extra.find("matches_baseline_rate");
    auto nodes = r.extra.find("nodes");
    if (!r.min_nodes_at_baseline_rate && matches != r.extra.end() && nodes != r.extra.end()) {
      // `--sizes`: one given size, no search.
      const auto rate = [worst](const StrategyResult& x) {
        return worst ? x.worst_case_violation_rate : x.violation_rate;
      };
      md += "- " + r.name + ": at " + std::to_string(std::llround(nodes->second)) + " nodes its " +
            (worst ? "worst-case violation rate" : "violation rate with the ad-hoc load") + " " +
            percent(rate(r)) + (matches->second > 0 ? " matches" : " is above") +
            " the baseline's" + (base ? " " + percent(rate(*base)) : std::string()) + " at " +
            std::to_string(s.nodes) + " nodes\n";
      continue;
    }
    if (!r.min_nodes_at_baseline_rate) continue;
    const double smaller = 1.0 - static_cast<double>(*r.min_nodes_at_baseline_rate) /
                                     static_cast<double>(std::max<int64_t>(1, s.nodes));
    md += "- " + r.name + ": " + std::to_string(*r.min_nodes_at_baseline_rate) +
          " nodes match the baseline's " +
          (worst ? "worst-case violation rate" : "violation rate with the ad-hoc load") + " at " +
          std::to_string(s.nodes) + " nodes (" + fixed(100.0 * smaller, 1) + "% smaller)\n";
    if (!r.min_cluster_search.empty()) md += "  - searched: " + searchTrail(r) + "\n";
  }
  if (md.empty()) return "";
  return "## Smallest cluster at the baseline's violation rate (cf. Fig. 10b)\n\n" + md + "\n";
}

// "; jobs with an inferred SLO (the paper's population): ..." when the engine
// filled the slo_jobs extras (sim/engine/engine.cc summariseSloJobs).
std::string sloJobsPart(const StrategyResult& r, const StrategyResult& base) {
  auto get = [](const StrategyResult& x, const char* k) -> std::optional<double> {
    auto it = x.extra.find(k);
    return it == x.extra.end() ? std::nullopt : std::optional<double>(it->second);
  };
  auto v = get(r, "slo_jobs_violations"), n = get(r, "slo_jobs_instances");
  auto bv = get(base, "slo_jobs_violations"), rate = get(r, "slo_jobs_violation_rate"),
       brate = get(base, "slo_jobs_violation_rate");
  if (!v || !n || !bv || !rate || !brate || *n <= 0) return "";
  const std::string ratio = *rate > 0    ? fixed(*brate / *rate, 1) + "x"
                            : *brate > 0 ? "none left"
                                         : "equal (none)";
  return "; over the jobs with an inferred SLO (the paper's population): " +
         std::to_string(std::llround(*v)) + " of " + std::to_string(std::llround(*n)) +
         " against the baseline's " + std::to_string(std::llround(*bv)) + " (" + ratio + ")";
}

std::string headline(const SimSummary& s) {
  const StrategyResult* base = baselineOf(s);
  std::string md;
  for (const auto& r : s.strategies) {
    if (base == nullptr || &r == base || r.periodic_instances == 0) continue;
    md += "- " + r.name + ": " + std::to_string(r.worst_case_violations) +
          " worst-case violations of " + std::to_string(r.periodic_instances) +
          " instances against the baseline's " + std::to_string(base->worst_case_violations) +
          " of " + std::to_string(base->periodic_instances) +
          " (baseline / strategy rate: " + vsBaselineWorstCase(r, base) +
          "); with the ad-hoc load " + std::to_string(r.deadline_violations) + " against " +
          std::to_string(base->deadline_violations) + " (" + vsBaseline(r, base) + ")" +
          sloJobsPart(r, *base) + "\n";
  }
  return md.empty() ? "" : md + "\n";
}

std::string markdown(const SimSummary& s, const std::vector<Plot>& plots,
                     const std::string& plot_note) {
  std::string md = "# morpheus-sim report\n\n";
  md += "Command `" + s.command + "`, seed " + std::to_string(s.seed) + ", " +
        std::to_string(s.nodes) + " nodes, " + std::to_string(s.days) + " days (" +
        std::to_string(s.train_days) + " training, " + std::to_string(s.days - s.train_days) +
        " evaluated).";
  if (s.train_segments > 1) {
    md += " Training in " + std::to_string(s.train_segments) +
          " segments, each from a cold cluster after a warm-up of " +
          std::to_string(s.train_warmup_days) + (s.train_warmup_days == 1 ? " day." : " days.");
  }
  if (s.eval_segments > 1) {
    md += " Each evaluation in " + std::to_string(s.eval_segments) +
          " segments, each from a cold cluster after a warm-up of " +
          std::to_string(s.eval_warmup_days) + (s.eval_warmup_days == 1 ? " day." : " days.");
  }
  if (s.interrupted) md += " **Interrupted: partial results, only what finished is shown.**";
  md += "\n\n## Deadline violations, worst case first (cf. Morpheus §8, Fig. 10a)\n\n" +
        headline(s) + strategyTable(s) +
        "\nWorst case (the paper's metric: Morpheus §8's 5-13x fewer violations counts these): "
        "an instance judged on its reserved capacity only (its placement and DRA grants), as if "
        "no opportunistic (fair-share, ad-hoc) capacity were available. With the ad-hoc load: "
        "judged on the capacity it actually got in the simulated cluster, where the ad-hoc "
        "load competes for what reservations leave. Failed runs are not counted in either.\n\n";
  md += "## Provisioned over used container-seconds (cf. Fig. 2a, 9c)\n\n" + ratioTable(s) + "\n";
  md += minClusterSection(s);
  md += "## Plots\n\n";
  if (!plot_note.empty()) md += plot_note + "\n\n";
  for (const auto& p : plots) md += "### " + p.title + "\n\n![" + p.title + "](" + p.file + ")\n\n";
  md +=
      "Data: `summary.json`, `strategies.csv`, and per strategy `instances.csv`, `adhoc.csv`, "
      "`utilisation.csv`.\n";
  return md;
}

Status writeStrategyFiles(const fs::path& dir, const StrategyResult& r) {
  const fs::path sub = dir / dirName(r.name);
  std::error_code ec;
  fs::create_directories(sub, ec);
  if (ec) return unavailable("report: cannot create '" + sub.string() + "': " + ec.message());
  MORPHEUS_RETURN_IF_ERROR(writeFile(sub / "instances.csv", instancesCsv(r)));
  MORPHEUS_RETURN_IF_ERROR(writeFile(sub / "adhoc.csv", adhocCsv(r)));
  MORPHEUS_RETURN_IF_ERROR(writeFile(sub / "utilisation.csv", utilisationCsv(r)));
  MORPHEUS_RETURN_IF_ERROR(writeFile(sub / "utilisation_binned.csv", binnedUtilisationCsv(r)));
  MORPHEUS_RETURN_IF_ERROR(
      writeFile(sub / "provisioned_used_cdf.csv", cdfCsv(ratios(r), "provisioned_used")));
  return writeFile(sub / "adhoc_jct_cdf.csv", cdfCsv(finishedJctS(r), "jct_s"));
}

// Draws the plots when gnuplot is installed. Returns the note report.md
// shows above the plots (empty when all went well) and clears `plots` when
// none were drawn, so report.md links no missing image.
std::string drawPlots(const fs::path& dir, std::vector<Plot>& plots) {
  if (plots.empty()) return "No data to plot.";
  if (!gnuplotInstalled()) {
    plots.clear();
    return "gnuplot is not installed, so no PNG plots were drawn (Debian: `apt-get install "
           "gnuplot-nox`, then run `gnuplot report.gp` in this directory).";
  }
  if (!runGnuplot(dir)) return "gnuplot failed; see `gnuplot.log`. Plots may be missing.";
  return "";
}

}  // namespace

std::string searchTrail(const StrategyResult& r) {
  std::string out;
  for (const SearchStep& st : r.min_cluster_search) {
    if (!out.empty()) out += ", ";
    out += std::to_string(st.nodes) + " nodes " + percent(st.rate) +
           (st.matches ? " (matches)" : " (above)");
  }
  return out;
}

std::string summaryJson(const SimSummary& summary) {
  // Strategy names are unique (writeReport refuses repeats); were one
  // repeated, the first result is kept.
  std::map<std::string, std::string> strategies;
  for (const auto& r : summary.strategies) strategies.emplace(r.name, renderStrategy(r, 2));
  std::map<std::string, std::string> top = {
      {"seed", std::to_string(summary.seed)},
      {"nodes", std::to_string(summary.nodes)},
      {"days", std::to_string(summary.days)},
      {"train_days", std::to_string(summary.train_days)},
      {"command", quoted(summary.command)},
      {"interrupted", summary.interrupted ? "true" : "false"},
      {"strategies", renderObject(strategies, 1)},
      {"headline", renderHeadline(summary, 1)},
  };
  if (summary.train_segments > 1) {
    top.emplace("train_segments", std::to_string(summary.train_segments));
    top.emplace("train_warmup_days", std::to_string(summary.train_warmup_days));
  }
  if (summary.eval_segments > 1) {
    top.emplace("eval_segments", std::to_string(summary.eval_segments));
    top.emplace("eval_warmup_days", std::to_string(summary.eval_warmup_days));
  }
  return renderObject(top, 0) + "\n";
}

Status writeReport(const std::string& dir, const SimSummary& summary) {
  MORPHEUS_RETURN_IF_ERROR(checkNames(summary));
  const fs::path root(dir);
  std::error_code ec;
  fs::create_directories(root, ec);
  if (ec) return unavailable("report: cannot create '" + dir + "': " + ec.message());
  MORPHEUS_RETURN_IF_ERROR(writeFile(root / "summary.json", summaryJson(summary)));
  MORPHEUS_RETURN_IF_ERROR(writeFile(root / "strategies.csv", strategiesCsv(summary)));
  for (const auto& r : summary.strategies) {
    MORPHEUS_RETURN_IF_ERROR(writeStrategyFiles(root, r));
  }
  std::vector<Plot> plots;
  MORPHEUS_RETURN_IF_ERROR(writeFile(root / "report.gp", gnuplotScript(summary, plots)));
  const std::string note = drawPlots(root, plots);
  return writeFile(root / "report.md", markdown(summary, plots, note));
}

}  // namespace morpheus::sim
