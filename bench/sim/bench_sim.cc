// bench_sim: runs one morpheus-sim experiment (generator + SWIM ad-hoc load)
// and reports wall time, simulated events per second and peak RSS, per
// strategy and in total, ending with one JSON line. The issue #13 target is
// 50,000 nodes, 30 days, >= 10,000 periodic jobs plus ad-hoc load in <= 15
// min on 2 cores:
//   bench_sim --nodes 50000 --days 30 --periodic-jobs 10000 --strategy morpheus
#include <sys/resource.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include "inference/skyline_fit.h"
#include "report/bench_report.h"
#include "sim/engine.h"
#include "sim/strategy.h"
#include "sim/workload.h"

using namespace morpheus;

namespace {

double peakRssMib() {
  struct rusage ru {};
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<double>(ru.ru_maxrss) / 1024.0;
}

double since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

}  // namespace

int main(int argc, char** argv) {
  morpheus::bench::BenchReport report("sim", &argc, argv);
  CLI::App app{"bench_sim: morpheus-sim engine scale"};
  int64_t nodes = 500, days = 7, jobs = 500;
  double adhoc_load = 0.3, periodic_load = 0.4;
  std::string trace = "../shared/data/swim-fb2009-24h.tsv";
  std::vector<std::string> strategies;
  uint64_t seed = 1;
  app.add_option("--nodes", nodes)->capture_default_str();
  app.add_option("--days", days)->capture_default_str();
  app.add_option("--periodic-jobs", jobs)->capture_default_str();
  app.add_option("--periodic-load", periodic_load)->capture_default_str();
  app.add_option("--adhoc-load", adhoc_load)->capture_default_str();
  app.add_option("--adhoc-trace", trace, "SWIM trace; '' for none")->capture_default_str();
  app.add_option("--strategy", strategies, "Strategies (default: baseline, morpheus)");
  app.add_option("--seed", seed)->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  if (strategies.empty()) strategies = {"baseline", "morpheus"};

  const Resource node_size(65536, 16);
  auto t0 = std::chrono::steady_clock::now();
  sim::GeneratorOptions g;
  g.periodic_jobs = jobs;
  g.days = days;
  g.seed = seed;
  g.node_size = node_size;
  g.nodes = nodes;
  g.periodic_load = periodic_load;
  auto w = sim::generatePeriodic(g);
  if (!w.isOk()) {
    std::cerr << "bench_sim: " << w.status().message() << "\n";
    return 2;
  }
  if (!trace.empty() && adhoc_load > 0) {
    sim::AdhocOptions a;
    a.trace_path = trace;
    a.days = days;
    a.load = adhoc_load;
    a.seed = seed;
    a.node_size = node_size;
    a.nodes = nodes;
    auto adhoc = sim::loadAdhoc(a);
    if (!adhoc.isOk()) {
      std::cerr << "bench_sim: " << adhoc.status().message() << "\n";
      return 2;
    }
    w->adhoc = std::move(*adhoc);
  }
  const double gen_s = since(t0);
  auto specs = sim::parseStrategies(strategies, {}, inference::FitParams{}.alpha);
  if (!specs.isOk()) {
    std::cerr << "bench_sim: " << specs.status().message() << "\n";
    return 2;
  }
  sim::ExperimentOptions o;
  o.nodes = nodes;
  o.node_size = node_size;
  o.days = days;
  o.seed = seed;
  o.realize = sim::drawInstance;
  auto t1 = std::chrono::steady_clock::now();
  std::string last_phase;
  auto s = sim::runExperiment(*w, o, *specs, [&](const std::string& p, int64_t d, int64_t t) {
    if (p != last_phase || d == t) {
      std::fprintf(stderr, "  %s %lld/%lld steps at %.1f s\n", p.c_str(), static_cast<long long>(d),
                   static_cast<long long>(t), since(t1));
      last_phase = p;
    }
  });
  if (!s.isOk()) {
    std::cerr << "bench_sim: " << s.status().message() << "\n";
    return 2;
  }
  const double run_s = since(t1);
  double events = 0;
  nlohmann::json per = nlohmann::json::object();
  for (const auto& r : s->strategies) {
    double ev = r.extra.count("events") ? r.extra.at("events") : 0;
    events += ev;
    per[r.name] = {
        {"periodic_instances", r.periodic_instances},
        {"violation_rate", r.violation_rate},
        {"worst_case_violation_rate", r.worst_case_violation_rate},
        {"utilisation", r.utilisation},
        {"adhoc_jct_median_s", r.adhoc_jct_median_s},
        {"unreserved_jobs", r.extra.count("unreserved_jobs") ? r.extra.at("unreserved_jobs") : 0},
        {"events", ev}};
    std::printf(
        "%-20s instances %lld violations %lld (%.4f) worst-case %.4f util %.3f adhoc "
        "median %.0f s p95 %.0f s unreserved %.0f events %.0f\n",
        r.name.c_str(), static_cast<long long>(r.periodic_instances),
        static_cast<long long>(r.deadline_violations), r.violation_rate,
        r.worst_case_violation_rate, r.utilisation, r.adhoc_jct_median_s, r.adhoc_jct_p95_s,
        r.extra.count("unreserved_jobs") ? r.extra.at("unreserved_jobs") : 0, ev);
  }
  report.figures() = {{"nodes", nodes},
                      {"days", days},
                      {"periodic_jobs", w->periodic.size()},
                      {"adhoc_jobs", w->adhoc.size()},
                      {"seed", seed},
                      {"generate_s", gen_s},
                      {"wall_s", run_s},
                      {"events", events},
                      {"events_per_s", run_s > 0 ? events / run_s : 0},
                      {"peak_rss_mib", peakRssMib()},
                      {"strategies", per}};
  // Issue #13 "Scale": 50,000 nodes, 30 days, 10,000 jobs within 15 minutes.
  report.targets() = {
      {"nodes", 50000}, {"days", 30}, {"periodic_jobs", 10000}, {"wall_s_max", 900}};
  report.emit();
  return 0;
}
