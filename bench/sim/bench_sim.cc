// bench_sim: runs one morpheus-sim experiment (generator + SWIM ad-hoc load)
// and reports wall time, CPU time, simulated events per second (training
// included) and peak RSS, per strategy and in total, ending with one JSON
// line with the figures.
//   bench_sim                      quick run (small cluster, seconds)
//   bench_sim --scale              the two scale targets (baseline + morpheus),
//                                  each in a child process of its own (its
//                                  own peak RSS), within 15 min each:
//     ad-hoc:   5,000 nodes, 30 days, 1,000 periodic jobs, the SWIM ad-hoc
//               load scaled to the cluster (--adhoc-model aggregate), <= 4 GiB;
//     periodic: 50,000 nodes, 30 days, 10,000 periodic jobs, no ad-hoc load,
//               tasks grouped (--task-model grouped --task-group 16), the
//               training and each evaluation in 2 segments with 1 warm-up
//               day (--train-segments 2 --eval-segments 2, validated in
//               docs/experiments/simulator.md).
//   bench_sim --scale --max-wall 900
//                                  stops each after 15 min and reports how
//                                  much of it was simulated by then
// Wall time on a shared machine depends on the other load; cpu_s does not.
// training_cpu_s is the process's CPU when the training's last plan step is
// reported, evaluation_cpu_s its CPU from the first evaluation report after
// that (plan step 60) to the end; with --threads 1 and one learned strategy
// they split the run into its phases.
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <utility>
#include <vector>

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

// One experiment's settings (the flags, or a scale scenario).
struct Config {
  int64_t nodes = 50, days = 3, jobs = 30;
  double adhoc_load = 0.3, periodic_load = 0.4, max_wall = 0;
  std::string trace = "data/swim/swim-fb2009-24h.tsv";
  std::vector<std::string> strategies;
  uint64_t seed = 1;
  int threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  sim::TaskModel model;
  std::string adhoc_model = "task";
  int64_t adhoc_step_s = 10;
  double preemption_interval_s = 3;  // ExperimentOptions::preemption_interval
  // ExperimentOptions::train_segments, train_warmup_days.
  int64_t train_segments = 1, train_warmup_days = 1;
  // ExperimentOptions::eval_segments, eval_warmup_days.
  int64_t eval_segments = 1, eval_warmup_days = 1;
};

// Runs one experiment; prints its figures and returns them as JSON ({} and
// a message on stderr on failure).
nlohmann::json runOne(Config c);

// The scale scenarios run in child processes: each one's peak RSS is its
// own (getrusage of a process counts its whole life). The child writes its
// figures as one JSON line into a pipe; the parent adds the child's peak RSS
// from wait4.
nlohmann::json runInChild(const Config& c) {
  int fds[2];
  if (::pipe(fds) != 0) return {};
  std::fflush(stdout);
  std::fflush(stderr);
  const pid_t pid = ::fork();
  if (pid < 0) return {};
  if (pid == 0) {
    ::close(fds[0]);
    const std::string line = runOne(c).dump() + "\n";
    size_t off = 0;
    while (off < line.size()) {
      const ssize_t n = ::write(fds[1], line.data() + off, line.size() - off);
      if (n <= 0) break;
      off += static_cast<size_t>(n);
    }
    std::fflush(stdout);
    ::_exit(0);
  }
  ::close(fds[1]);
  std::string text;
  char buf[4096];
  for (ssize_t n; (n = ::read(fds[0], buf, sizeof buf)) > 0;)
    text.append(buf, static_cast<size_t>(n));
  ::close(fds[0]);
  int status = 0;
  struct rusage ru {};
  while (::wait4(pid, &status, 0, &ru) < 0 && errno == EINTR) {
  }
  nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) j = nlohmann::json::object();
  j["peak_rss_mib"] = static_cast<double>(ru.ru_maxrss) / 1024.0;
  j["child_exit_ok"] = WIFEXITED(status) && WEXITSTATUS(status) == 0;
  return j;
}

}  // namespace

int main(int argc, char** argv) {
  morpheus::bench::BenchReport report("sim", &argc, argv);
  CLI::App app{"bench_sim: morpheus-sim engine scale"};
  // The scale targets.
  constexpr double kTargetWallS = 900, kTargetAdhocRssMib = 4096;
  Config cfg;
  bool scale = false;
  int64_t& nodes = cfg.nodes;
  int64_t& days = cfg.days;
  int64_t& jobs = cfg.jobs;
  double& adhoc_load = cfg.adhoc_load;
  double& periodic_load = cfg.periodic_load;
  double& max_wall = cfg.max_wall;
  std::string& trace = cfg.trace;
  std::vector<std::string>& strategies = cfg.strategies;
  uint64_t& seed = cfg.seed;
  int& threads = cfg.threads;
  app.add_flag("--scale", scale,
               "The two scale scenarios, each in a child process: 5,000 nodes x 30 days x "
               "1,000 periodic jobs with the SWIM ad-hoc load (aggregate ad-hoc model), and "
               "50,000 nodes x 30 days x 10,000 periodic jobs, periodic only, grouped tasks "
               "(overrides --nodes, --days, --periodic-jobs and the models)");
  app.add_option("--nodes", nodes)->capture_default_str();
  app.add_option("--days", days)->capture_default_str();
  app.add_option("--periodic-jobs", jobs)->capture_default_str();
  app.add_option("--periodic-load", periodic_load)->capture_default_str();
  app.add_option("--adhoc-load", adhoc_load)->capture_default_str();
  app.add_option("--adhoc-trace", trace, "SWIM trace; '' for none")->capture_default_str();
  app.add_option("--strategy", strategies, "Strategies (default: baseline, morpheus)");
  app.add_option("--seed", seed)->capture_default_str();
  app.add_option(
         "--threads", threads,
         "Strategies simulated side by side, the baseline beside the training (default: the cores)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--max-wall", max_wall,
                 "Stop the experiment after this many wall seconds (0 = run to the end) and "
                 "report the simulated share done")
      ->capture_default_str();
  sim::TaskModel& model = cfg.model;
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
  app.add_option("--adhoc-model", cfg.adhoc_model,
                 "task (ad-hoc jobs in the scheduler) or aggregate (capacity over time; "
                 "sim/engine/aggregate_adhoc.h)")
      ->capture_default_str();
  app.add_option("--adhoc-step", cfg.adhoc_step_s, "aggregate ad-hoc model: seconds per step")
      ->capture_default_str();
  app.add_option("--preemption-interval", cfg.preemption_interval_s,
                 "Seconds between the scheduler's preemption checks, 0 = at every node "
                 "heartbeat (rm.preemption-interval)")
      ->check(CLI::Range(0.0, 86400.0))
      ->capture_default_str();
  app.add_option("--train-segments", cfg.train_segments,
                 "Training in this many consecutive segments simulated side by side "
                 "(ExperimentOptions::train_segments; 1 = one simulation)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--train-warmup-days", cfg.train_warmup_days,
                 "Warm-up days of each segment but the first, not recorded")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_option("--eval-segments", cfg.eval_segments,
                 "Each strategy's evaluation in this many consecutive segments simulated side "
                 "by side (ExperimentOptions::eval_segments; 1 = one simulation)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--eval-warmup-days", cfg.eval_warmup_days,
                 "Warm-up days of each evaluation segment but the first, not recorded")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  if (Status st = sim::validateTaskModel(model); !st.isOk()) {
    std::cerr << "bench_sim: " << st.message() << "\n";
    return 2;
  }
  if (cfg.adhoc_model != "task" && cfg.adhoc_model != "aggregate") {
    std::cerr << "bench_sim: adhoc-model: must be task or aggregate\n";
    return 2;
  }
  if (cfg.adhoc_step_s < 1) {
    std::cerr << "bench_sim: adhoc-step: must be >= 1\n";
    return 2;
  }
  if (!scale) {
    nlohmann::json f = runOne(cfg);
    if (f.empty()) return 2;
    f["peak_rss_mib"] = peakRssMib();
    report.figures() = f;
    report.emit();
    return 0;
  }
  Config adhoc = cfg;
  adhoc.nodes = 5000;
  adhoc.days = 30;
  adhoc.jobs = 1000;
  adhoc.model = sim::TaskModel{};
  adhoc.adhoc_model = "aggregate";
  Config periodic = cfg;
  periodic.nodes = 50000;
  periodic.days = 30;
  periodic.jobs = 10000;
  periodic.trace = "";
  periodic.model = sim::TaskModel{};
  periodic.model.name = "grouped";
  periodic.model.group = 16;
  // The periodic run's training and evaluations in two segments side by
  // side (the choices validated at 100 and 1,000 nodes in
  // docs/experiments/simulator.md).
  periodic.train_segments = 2;
  periodic.train_warmup_days = 1;
  periodic.eval_segments = 2;
  periodic.eval_warmup_days = 1;
  std::fprintf(stderr, "scale 1/2: 5,000 nodes x 30 days x 1,000 jobs + SWIM (aggregate)\n");
  nlohmann::json a = runInChild(adhoc);
  std::fprintf(stderr, "scale 2/2: 50,000 nodes x 30 days x 10,000 jobs, periodic only\n");
  nlohmann::json p = runInChild(periodic);
  auto met = [&](const nlohmann::json& j, double rss_max) {
    return j.value("complete", false) && j.value("wall_s", 1e18) <= kTargetWallS &&
           (rss_max <= 0 || j.value("peak_rss_mib", 1e18) <= rss_max);
  };
  for (const auto& [name, j] :
       {std::pair<std::string, nlohmann::json>{"adhoc", a}, {"periodic", p}}) {
    std::printf(
        "scale %-8s wall %.1f s (projected %s), peak RSS %.0f MiB, complete %s\n", name.c_str(),
        j.value("wall_s", 0.0),
        j.contains("projected_full_wall_s") ? j["projected_full_wall_s"].dump().c_str() : "-",
        j.value("peak_rss_mib", 0.0), j.value("complete", false) ? "yes" : "no");
  }
  report.figures() = {{"adhoc_5000", a},
                      {"periodic_50000", p},
                      {"adhoc_5000_met", met(a, kTargetAdhocRssMib)},
                      {"periodic_50000_met", met(p, 0)}};
  report.targets() = {{"wall_s_max", kTargetWallS}, {"adhoc_5000_rss_mib_max", kTargetAdhocRssMib}};
  report.emit();
  return 0;
}

namespace {

nlohmann::json runOne(Config c) {
  int64_t nodes = c.nodes, days = c.days, jobs = c.jobs;
  double adhoc_load = c.adhoc_load, periodic_load = c.periodic_load, max_wall = c.max_wall;
  const std::string trace = c.trace;
  std::vector<std::string> strategies = c.strategies;
  const uint64_t seed = c.seed;
  const int threads = c.threads;
  const sim::TaskModel model = c.model;
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
    return {};
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
      return {};
    }
  }
  auto original = std::make_shared<const sim::Workload>(std::move(*w));
  const sim::Workload workload = sim::groupWorkload(*original, model, node_size);
  const double gen_s = since(t0);
  auto specs = sim::parseStrategies(strategies, {}, inference::FitParams{}.alpha);
  if (!specs.isOk()) {
    std::cerr << "bench_sim: " << specs.status().message() << "\n";
    return {};
  }
  sim::ExperimentOptions o;
  o.nodes = nodes;
  o.node_size = node_size;
  o.days = days;
  o.seed = seed;
  o.realize = sim::groupDraw(original, model, node_size);
  o.fluid_adhoc_step = sim::fluidAdhocStep(model);
  o.aggregate_adhoc_step = c.adhoc_model == "aggregate" ? Millis(c.adhoc_step_s * 1000) : Millis(0);
  o.threads = threads;
  o.preemption_interval = Millis(std::llround(c.preemption_interval_s * 1000));
  o.train_segments = c.train_segments;
  o.train_warmup_days = c.train_warmup_days;
  o.eval_segments = c.eval_segments;
  o.eval_warmup_days = c.eval_warmup_days;
  if (Status st = sim::validateExperiment(workload, o); !st.isOk()) {
    std::cerr << "bench_sim: " << st.message() << "\n";
    return {};
  }
  std::atomic<int64_t> events_all{0};
  o.events_processed = &events_all;
  // Simulated plan steps of the whole experiment: training (its segments'
  // spans, warm-ups included, once the training reports them), then each
  // strategy's evaluation segments (their spans, warm-ups included).
  const int64_t steps_per_day = 86'400'000 / o.step.count();
  const int64_t train_days = sim::trainDays(o);
  int64_t training_steps_total = steps_per_day * train_days;
  int64_t evaluation_steps_total = 0;
  for (const sim::DaySegment& seg : sim::evalSegments(o)) {
    evaluation_steps_total += (seg.to - seg.from) / o.step * static_cast<int64_t>(specs->size());
  }
  // The latest steps reported per phase ("training", "evaluation"): the
  // baseline's evaluation runs beside the training with --threads >= 2, so
  // their reports interleave.
  std::map<std::string, int64_t> steps_of;
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
  double last_print = 0;  // wall seconds of the last progress line
  // When the training's last plan step was reported (process CPU and wall
  // seconds since t1; with --threads >= 2 the CPU includes what ran beside
  // it), and when the first evaluation step after it was: between them the
  // SLO inference, the skyline fits and the evaluations' admissions.
  double training_cpu_s = -1, training_wall_s = -1, evaluation_start_cpu_s = -1;
  // Each strategy's evaluation steps, in the order they were first reported
  // (strategy_progress comes just before the summed "evaluation" progress,
  // under the same lock).
  std::vector<std::pair<std::string, int64_t>> per_strategy;
  o.strategy_progress = [&](const std::string& name, int64_t d, int64_t) {
    auto it = std::find_if(per_strategy.begin(), per_strategy.end(),
                           [&](const auto& e) { return e.first == name; });
    if (it == per_strategy.end()) {
      per_strategy.emplace_back(name, d);
    } else {
      it->second = d;
    }
  };
  // The engine calls this under its own lock (one call at a time). A line at
  // each phase's start and end, and at least every 30 s between; in the
  // evaluation, each strategy's steps too (which strategy the time goes to).
  auto s = sim::runExperiment(
      workload, o, *specs,
      [&](const std::string& p, int64_t d, int64_t t) {
        const bool first = steps_of.count(p) == 0;
        steps_of[p] = d;
        if (p == "training") training_steps_total = t;
        if (p == "training" && d == t) {
          training_cpu_s = cpuSeconds() - cpu1;
          training_wall_s = since(t1);
        } else if (p == "evaluation" && training_cpu_s >= 0 && evaluation_start_cpu_s < 0) {
          evaluation_start_cpu_s = cpuSeconds() - cpu1;
        }
        if (first || d == t || since(t1) - last_print >= 30) {
          last_print = since(t1);
          std::string each;
          for (const auto& [name, k] : per_strategy) {
            each += " " + name + " " + std::to_string(k);
          }
          if (!each.empty()) each = " (" + each.substr(1) + ")";
          std::fprintf(stderr, "  %s %lld/%lld steps%s at %.1f s\n", p.c_str(),
                       static_cast<long long>(d), static_cast<long long>(t), each.c_str(),
                       since(t1));
        }
      },
      &stop);
  finished.store(true);
  watch.join();
  if (!s.isOk()) {
    std::cerr << "bench_sim: " << s.status().message() << "\n";
    return {};
  }
  const double run_s = since(t1);
  const double cpu_s = cpuSeconds() - cpu1;
  int64_t steps_done = 0;
  for (const auto& [phase, d] : steps_of) steps_done += d;
  const int64_t steps_total = training_steps_total + evaluation_steps_total;
  const double done =
      steps_total > 0 ? static_cast<double>(steps_done) / static_cast<double>(steps_total) : 1.0;
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
  nlohmann::json figures = {
      {"nodes", nodes},
      {"days", days},
      {"periodic_jobs", workload.periodic.size()},
      {"adhoc_jobs", workload.adhoc.size()},
      {"task_model", model.name},
      {"task_group", model.name != "task" ? model.group : 1},
      {"fluid_step_s", model.name == "fluid" ? model.fluid_step.count() / 1000 : 0},
      {"adhoc_model", c.adhoc_model},
      {"adhoc_step_s", c.adhoc_model == "aggregate" ? c.adhoc_step_s : 0},
      {"preemption_interval_s", c.preemption_interval_s},
      {"train_segments", c.train_segments},
      {"train_warmup_days", c.train_segments > 1 ? c.train_warmup_days : 0},
      {"eval_segments", c.eval_segments},
      {"eval_warmup_days", c.eval_segments > 1 ? c.eval_warmup_days : 0},
      {"seed", seed},
      {"threads", threads},
      {"generate_s", gen_s},
      {"wall_s", run_s},
      {"cpu_s", cpu_s},
      {"training_cpu_s", training_cpu_s >= 0 ? nlohmann::json(training_cpu_s) : nlohmann::json()},
      {"training_wall_s",
       training_wall_s >= 0 ? nlohmann::json(training_wall_s) : nlohmann::json()},
      {"evaluation_cpu_s", evaluation_start_cpu_s >= 0
                               ? nlohmann::json(cpu_s - evaluation_start_cpu_s)
                               : nlohmann::json()},
      {"events", events},
      {"events_per_s", run_s > 0 ? events / run_s : 0},
      {"events_per_cpu_s", cpu_s > 0 ? events / cpu_s : 0},
      {"complete", complete},
      {"simulated_fraction", done},
      {"projected_full_wall_s", done > 0 ? nlohmann::json(full_wall_s) : nlohmann::json()},
      {"projected_full_cpu_s", done > 0 ? nlohmann::json(full_cpu_s) : nlohmann::json()},
      {"strategies", per}};
  return figures;
}

}  // namespace
