// bench_sim: runs one morpheus-sim experiment (generator + SWIM ad-hoc load)
// and reports wall time, CPU time, simulated events per second (training
// included) and peak RSS, per strategy and in total, ending with one JSON
// line with the figures and the scale target: 50,000 nodes, 30
// days, >= 10,000 periodic jobs plus ad-hoc load in <= 15 min on 2 cores.
//   bench_sim                      quick run (small cluster, seconds)
//   bench_sim --scale              the target scenario (baseline + morpheus)
//   bench_sim --scale --max-wall 900
//                                  stops after 15 min and reports how much of
//                                  the experiment was simulated by then
// Wall time on a shared machine depends on the other load; cpu_s does not.
#include <sys/resource.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>
#include <thread>

#include "inference/model/skyline_fit.h"
#include "report/bench_report.h"
#include "sim/engine/engine.h"
#include "sim/engine/strategy.h"
#include "sim/engine/task_model.h"
#include "sim/workloads/workload.h"

using namespace morpheus;

namespace {

double peakRssMib() {
  struct rusage ru {};
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<double>(ru.ru_maxrss) / 1024.0;
}

double cpuSeconds() {
  struct rusage ru {};
  getrusage(RUSAGE_SELF, &ru);
  auto sec = [](const timeval& t) {
    return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) / 1e6;
  };
  return sec(ru.ru_utime) + sec(ru.ru_stime);
}

double since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

}  // namespace

int main(int argc, char** argv) {
  morpheus::bench::BenchReport report("sim", &argc, argv);
  CLI::App app{"bench_sim: morpheus-sim engine scale"};
  // The scale target.
  constexpr int64_t kTargetNodes = 50000, kTargetDays = 30, kTargetJobs = 10000;
  constexpr double kTargetWallS = 900;
  int64_t nodes = 50, days = 3, jobs = 30;
  double adhoc_load = 0.3, periodic_load = 0.4, max_wall = 0;
  bool scale = false;
  std::string trace = "data/swim/swim-fb2009-24h.tsv";
  std::vector<std::string> strategies;
  uint64_t seed = 1;
  int threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  app.add_flag("--scale", scale,
               "The target scenario: 50,000 nodes, 30 days, 10,000 periodic jobs "
               "(overrides --nodes, --days, --periodic-jobs)");
  app.add_option("--nodes", nodes)->capture_default_str();
  app.add_option("--days", days)->capture_default_str();
  app.add_option("--periodic-jobs", jobs)->capture_default_str();
  app.add_option("--periodic-load", periodic_load)->capture_default_str();
  app.add_option("--adhoc-load", adhoc_load)->capture_default_str();
  app.add_option("--adhoc-trace", trace, "SWIM trace; '' for none")->capture_default_str();
  app.add_option("--strategy", strategies, "Strategies (default: baseline, morpheus)");
  app.add_option("--seed", seed)->capture_default_str();
  app.add_option("--threads", threads,
                 "Strategies simulated side by side after training (default: the cores)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--max-wall", max_wall,
                 "Stop the experiment after this many wall seconds (0 = run to the end) and "
                 "report the simulated share done")
      ->capture_default_str();
  sim::TaskModel model;
  app.add_option("--task-model", model.name,
                 "task (every task simulated), grouped (--task-group tasks of a stage per "
                 "container) or fluid (fluid ad-hoc pools, periodic jobs grouped; "
                 "sim/engine/task_model.h)")
      ->capture_default_str();
  app.add_option("--task-group", model.group,
                 "grouped and fluid models: tasks per simulated container (fluid: periodic jobs)")
      ->capture_default_str();
  app.add_option_function<int64_t>(
         "--fluid-step", [&model](const int64_t& s) { model.fluid_step = Millis(s * 1000); },
         "fluid model: seconds between steps of the fluid ad-hoc pools")
      ->default_str("10");
  CLI11_PARSE(app, argc, argv);
  if (Status st = sim::validateTaskModel(model); !st.isOk()) {
    std::cerr << "bench_sim: " << st.message() << "\n";
    return 2;
  }
  if (strategies.empty()) strategies = {"baseline", "morpheus"};
  if (scale) {
    nodes = kTargetNodes;
    days = kTargetDays;
    jobs = kTargetJobs;
  }

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
    if (Status st = sim::addAdhocLoad(*w, a); !st.isOk()) {
      std::cerr << "bench_sim: " << st.message() << "\n";
      return 2;
    }
  }
  auto original = std::make_shared<const sim::Workload>(std::move(*w));
  const sim::Workload workload = sim::groupWorkload(*original, model, node_size);
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
  o.realize = sim::groupRealize(sim::drawInstance, original, model, node_size);
  o.fluid_adhoc_step = sim::fluidAdhocStep(model);
  o.threads = threads;
  std::atomic<int64_t> events_all{0};
  o.events_processed = &events_all;
  // Simulated plan steps of the whole experiment: training, then each strategy.
  const int64_t steps_per_day = 86'400'000 / o.step.count();
  const int64_t train_days = sim::trainDays(o);
  const int64_t steps_total =
      steps_per_day * (train_days + (days - train_days) * static_cast<int64_t>(specs->size()));
  int64_t steps_before = 0, steps_phase = 0;  // steps of finished phases; of the current one
  std::atomic<bool> stop{false};
  auto t1 = std::chrono::steady_clock::now();
  const double cpu1 = cpuSeconds();
  // --max-wall: a watcher sets the engine's stop flag (polled every simulated instant).
  std::atomic<bool> finished{false};
  std::thread watch([&] {
    while (!finished.load()) {
      if (max_wall > 0 && since(t1) > max_wall) {
        stop.store(true);
        return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
  });
  std::string last_phase;
  auto s = sim::runExperiment(
      workload, o, *specs,
      [&](const std::string& p, int64_t d, int64_t t) {
        if (p != last_phase && !last_phase.empty()) steps_before += steps_phase;
        steps_phase = d;
        if (p != last_phase || d == t) {
          std::fprintf(stderr, "  %s %lld/%lld steps at %.1f s\n", p.c_str(),
                       static_cast<long long>(d), static_cast<long long>(t), since(t1));
          last_phase = p;
        }
      },
      &stop);
  finished.store(true);
  watch.join();
  if (!s.isOk()) {
    std::cerr << "bench_sim: " << s.status().message() << "\n";
    return 2;
  }
  const double run_s = since(t1);
  const double cpu_s = cpuSeconds() - cpu1;
  const double done = steps_total > 0 ? static_cast<double>(steps_before + steps_phase) /
                                            static_cast<double>(steps_total)
                                      : 1.0;
  const double events = static_cast<double>(events_all.load());
  nlohmann::json per = nlohmann::json::object();
  for (const auto& r : s->strategies) {
    double ev = r.extra.count("events") ? r.extra.at("events") : 0;
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
  const bool complete = !s->interrupted;
  // Projection for an interrupted run: the share of plan steps simulated.
  const double full_wall_s = done > 0 ? run_s / done : 0;
  const double full_cpu_s = done > 0 ? cpu_s / done : 0;
  const bool target_scenario = nodes >= kTargetNodes && days >= kTargetDays &&
                               static_cast<int64_t>(workload.periodic.size()) >= kTargetJobs &&
                               !workload.adhoc.empty();
  // Stopped before the first simulated hour (progress comes hourly): no projection.
  std::string projection;
  if (!complete) {
    projection = done > 0
                     ? ", projected full wall " + std::to_string(std::lround(full_wall_s)) + " s"
                     : ", too little simulated to project";
  }
  std::printf(
      "wall %.1f s, cpu %.1f s, %.0f events (training included), %.0f events/s wall, %.0f "
      "events/s cpu, peak RSS %.0f MiB, simulated %.1f%% of the experiment%s\n",
      run_s, cpu_s, events, run_s > 0 ? events / run_s : 0, cpu_s > 0 ? events / cpu_s : 0,
      peakRssMib(), 100 * done, projection.c_str());
  report.figures() = {
      {"nodes", nodes},
      {"days", days},
      {"periodic_jobs", workload.periodic.size()},
      {"adhoc_jobs", workload.adhoc.size()},
      {"task_model", model.name},
      {"task_group", model.name != "task" ? model.group : 1},
      {"fluid_step_s", model.name == "fluid" ? model.fluid_step.count() / 1000 : 0},
      {"seed", seed},
      {"threads", threads},
      {"generate_s", gen_s},
      {"wall_s", run_s},
      {"cpu_s", cpu_s},
      {"events", events},
      {"events_per_s", run_s > 0 ? events / run_s : 0},
      {"events_per_cpu_s", cpu_s > 0 ? events / cpu_s : 0},
      {"peak_rss_mib", peakRssMib()},
      {"complete", complete},
      {"simulated_fraction", done},
      {"projected_full_wall_s", done > 0 ? nlohmann::json(full_wall_s) : nlohmann::json()},
      {"projected_full_cpu_s", done > 0 ? nlohmann::json(full_cpu_s) : nlohmann::json()},
      {"target_scenario", target_scenario},
      {"target_met", target_scenario && complete && run_s <= kTargetWallS},
      {"strategies", per}};
  // The scale target: 50,000 nodes, 30 days, 10,000 jobs within 15 minutes.
  report.targets() = {{"nodes", kTargetNodes},
                      {"days", kTargetDays},
                      {"periodic_jobs", kTargetJobs},
                      {"wall_s_max", kTargetWallS}};
  report.emit();
  return 0;
}
