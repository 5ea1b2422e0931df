// bench_carbyne: Carbyne (Grandl et al., OSDI'16) against DRF as the policy of
// the ad-hoc queue in morpheus-sim. Each seed runs the same
// workload twice, --adhoc-policy drf and carbyne (strategy baseline, no
// periodic jobs), and compares the ad-hoc jobs of the evaluation day(s):
//   avg / p95 JCT and their DRF/Carbyne ratios (the paper: 1.59x lower avg);
//   makespan (first submit to last finish of the evaluated jobs) and the
//   efficiency gain DRF makespan / Carbyne makespan (the paper: 1.26x), with
//   the most any policy could gain (DRF makespan / makespanFloorS);
//   the same ceiling for the average JCT (DRF's over the larger of the mean
//   jobFloorS and srptMeanFlowS per resource) and the p95 (critical paths);
//   per-job slowdown Carbyne JCT / DRF JCT: median, p90, p95, share > 1.1x
//   (the median job no more than 10% slower).
// Scenarios: "swim" (the SWIM ad-hoc load, map -> reduce jobs arriving over
// the day), "batch" (DAG jobs — map -> reduce, 3-stage chains, fork-join —
// all submitted within the first minute of the evaluation day, or spread
// over --arrival-window seconds), "star" (as batch, star-schema query DAGs
// shaped like TPC-DS plans: starStages) and "union" (as batch, TPC-DS UNION
// plans: 1-3 fact branches in parallel: unionStages).
//   bench_carbyne [--scenario swim|batch|star|union] [--seeds 1,2,3]
//                 [--nodes 20] [--adhoc-load 0.6] [--batch-jobs 150]
//                 [--arrival-window 60] [--noise 0] [--altruistic-share 1]
//                 [--task-shapes diverse] [--json]
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <iostream>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <queue>
#include <sstream>

#include "inference/model/skyline_fit.h"
#include "paper_sim.h"
#include "report/bench_report.h"
#include "sim/engine/engine.h"
#include "sim/engine/strategy.h"
#include "sim/workloads/workload.h"
#include "sim/workloads/workload_rng.h"

using namespace morpheus;

namespace {

constexpr int64_t kDayMs = 86'400'000;

double quantile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t i = static_cast<size_t>(std::ceil(q * static_cast<double>(v.size()))) - 1;
  return v[std::min(i, v.size() - 1)];
}

double mean(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return v.empty() ? 0 : s / static_cast<double>(v.size());
}

sim::SimStage stage(const std::string& name, int64_t tasks, Millis d, Resource r,
                    std::vector<int> deps) {
  sim::SimStage s;
  s.name = name;
  s.tasks = tasks;
  s.task_duration = d;
  s.task_resource = r;
  s.depends_on = std::move(deps);
  return s;
}

// A stage's task shape with --task-shapes diverse (sim::AdhocOptions::
// diverse_shapes' distribution): vcores in {1, 2, 4}, memory log-uniform in
// [1/4, 2] x 4 GiB per vcore.
Resource diverseShape(const sim::rng::Stream& r, uint64_t k) {
  const int64_t vcores = int64_t{1} << r.below(k, 3);
  return Resource(
      static_cast<int64_t>(4096.0 * static_cast<double>(vcores) * r.logUniform(k + 1, 0.25, 2.0)),
      vcores);
}

// The stages of one job of a scenario, drawn from `r` (keys 1-99) with
// `res` as every stage's task shape before --task-shapes diverse.
using StageDraw =
    std::function<std::vector<sim::SimStage>(const sim::rng::Stream& r, const Resource& res)>;

// `n` jobs of `scenario` named `prefix`-i, of 10 users, submitted uniformly
// in [start, start + window_s seconds) (the arrivals of a Poisson process
// given their count), sorted by submit; 1 or 2 vcores at 2 GiB per vcore
// (uniform) or each stage its own diverseShape (diverse, keys from
// `diverse_key`).
std::vector<sim::AdhocJob> dagJobs(int64_t n, uint64_t seed, Millis start, int64_t window_s,
                                   bool diverse, const std::string& scenario,
                                   const std::string& prefix, uint64_t diverse_key,
                                   const StageDraw& draw) {
  std::vector<sim::AdhocJob> jobs;
  for (int64_t i = 0; i < n; i++) {
    const sim::rng::Stream r(seed, static_cast<uint64_t>(i), -1, "carbyne-" + scenario);
    const Resource res = r.uniform(20) < 0.7 ? Resource(2048, 1) : Resource(4096, 2);
    sim::AdhocJob j;
    j.name = prefix + "-" + std::to_string(i);
    j.user = UserId("user" + std::to_string(i % 10));
    j.submit = start + Millis(r.below(21, static_cast<uint64_t>(window_s)) * 1000);
    j.stages = draw(r, res);
    if (diverse) {
      for (size_t k = 0; k < j.stages.size(); k++)
        j.stages[k].task_resource = diverseShape(r, diverse_key + 2 * k);
    }
    jobs.push_back(std::move(j));
  }
  std::stable_sort(jobs.begin(), jobs.end(),
                   [](const auto& a, const auto& b) { return a.submit < b.submit; });
  return jobs;
}

// Scenario batch: map -> reduce, a 3-stage chain, and fork-join (two maps ->
// join); task counts log-uniform in [1, 200], durations in [10 s, 300 s].
std::vector<sim::SimStage> batchStages(const sim::rng::Stream& r, const Resource& res) {
  auto tasks = [&](uint64_t k) { return static_cast<int64_t>(r.logUniform(k, 1, 200)); };
  auto dur = [&](uint64_t k) {
    return Millis(static_cast<int64_t>(r.logUniform(k, 10, 300)) * 1000);
  };
  switch (r.below(22, 3)) {
    case 0:
      return {stage("map", tasks(1), dur(2), res, {}),
              stage("reduce", std::max<int64_t>(1, tasks(3) / 4), dur(4), res, {0})};
    case 1:
      return {stage("a", tasks(1), dur(2), res, {}), stage("b", tasks(3), dur(4), res, {0}),
              stage("c", std::max<int64_t>(1, tasks(5) / 4), dur(6), res, {1})};
    default:
      return {stage("m1", tasks(1), dur(2), res, {}), stage("m2", tasks(3), dur(4), res, {}),
              stage("join", std::max<int64_t>(1, tasks(5) / 4), dur(6), res, {0, 1})};
  }
}

// Task counts and durations (whole seconds) log-uniform in [lo, hi) from
// key k of `r`.
struct LogUniform {
  const sim::rng::Stream& r;
  int64_t count(uint64_t k, double lo, double hi) const {
    return static_cast<int64_t>(r.logUniform(k, lo, hi));
  }
  Millis seconds(uint64_t k, double lo, double hi) const {
    return Millis(static_cast<int64_t>(r.logUniform(k, lo, hi)) * 1000);
  }
};

// Scenario star: a star-schema query DAG in the shape of TPC-DS plans on a
// DAG engine (the paper's Carbyne evaluation runs TPC-DS, TPC-H and BigBench
// DAGs): a wide scan of a fact table (20-200 tasks of 30-120 s) and 2-7
// narrow scans of dimension tables (1-20 tasks of 5-60 s), joined left-deep
// (each join reads the previous join and the next dimension scan: 5-50 tasks
// of 20-120 s), then an aggregation (1-10 tasks of 10-60 s). Counts and
// durations log-uniform; our approximation of such plans, not a trace. The
// dimension scans of later joins have slack: they can run any time before
// the join that reads them, which is what Carbyne's altruism lends out.
std::vector<sim::SimStage> starStages(const sim::rng::Stream& r, const Resource& res) {
  const LogUniform g{r};
  std::vector<sim::SimStage> st;
  st.push_back(stage("fact-scan", g.count(1, 20, 200), g.seconds(2, 30, 120), res, {}));
  const int64_t dims = 2 + static_cast<int64_t>(r.below(22, 6));
  for (int64_t d = 0; d < dims; d++) {
    const uint64_t k = 10 + 6 * static_cast<uint64_t>(d);
    const int dim = static_cast<int>(st.size());
    st.push_back(
        stage("dim-scan" + std::to_string(d), g.count(k, 1, 20), g.seconds(k + 1, 5, 60), res, {}));
    const int left = d == 0 ? 0 : dim - 1;
    st.push_back(stage("join" + std::to_string(d), g.count(k + 2, 5, 50), g.seconds(k + 3, 20, 120),
                       res, {left, dim}));
  }
  st.push_back(stage("aggregate", g.count(3, 1, 10), g.seconds(4, 10, 60), res,
                     {static_cast<int>(st.size()) - 1}));
  return st;
}

// Scenario union: a TPC-DS UNION plan (store, catalog and web sales read
// alike, then combined): 1-3 fact branches side by side, each a fact-table
// scan (10-200 tasks of 20-120 s) joined left-deep with 1-3 dimension scans
// (1-20 tasks of 5-60 s; joins 5-50 tasks of 20-120 s), all feeding one
// aggregation (1-10 tasks of 10-60 s). The branches' lengths differ, so all
// but the longest have slack at the job's fair share. Our approximation of
// such plans, not a trace.
std::vector<sim::SimStage> unionStages(const sim::rng::Stream& r, const Resource& res) {
  const LogUniform g{r};
  std::vector<sim::SimStage> st;
  std::vector<int> branch_ends;
  const int64_t branches = 1 + static_cast<int64_t>(r.below(23, 3));
  for (int64_t b = 0; b < branches; b++) {
    const uint64_t base = 100 + 50 * static_cast<uint64_t>(b);
    int left = static_cast<int>(st.size());
    st.push_back(stage("fact-scan" + std::to_string(b), g.count(base, 10, 200),
                       g.seconds(base + 1, 20, 120), res, {}));
    const int64_t dims = 1 + static_cast<int64_t>(r.below(base + 2, 3));
    for (int64_t d = 0; d < dims; d++) {
      const uint64_t k = base + 10 + 6 * static_cast<uint64_t>(d);
      const std::string name = std::to_string(b) + "." + std::to_string(d);
      const int dim = static_cast<int>(st.size());
      st.push_back(stage("dim-scan" + name, g.count(k, 1, 20), g.seconds(k + 1, 5, 60), res, {}));
      st.push_back(
          stage("join" + name, g.count(k + 2, 5, 50), g.seconds(k + 3, 20, 120), res, {left, dim}));
      left = dim + 1;
    }
    branch_ends.push_back(left);
  }
  st.push_back(stage("aggregate", g.count(3, 1, 10), g.seconds(4, 10, 60), res, branch_ends));
  return st;
}

// A floor under any policy's makespan of `jobs` on `capacity`, from their
// nominal task durations (the realised ones are drawn around them): the
// larger of the total work of the busiest resource over its capacity and
// the latest submit offset plus critical path (one wave per stage) of a job,
// both from the first submit. DRF's makespan over it bounds the efficiency
// gain any scheduler could show (the paper's 1.26x).
double makespanFloorS(const std::vector<sim::AdhocJob>& jobs, const Resource& capacity) {
  if (jobs.empty()) return 0;
  Millis first = jobs.front().submit;
  for (const auto& j : jobs) first = std::min(first, j.submit);
  double mem = 0, cpu = 0, path_s = 0;
  for (const auto& j : jobs) {
    std::vector<double> finish(j.stages.size(), 0);
    for (size_t k = 0; k < j.stages.size(); k++) {
      const sim::SimStage& st = j.stages[k];
      const double d = static_cast<double>(st.task_duration.count()) / 1000.0;
      const auto n = static_cast<double>(st.tasks);
      mem += n * d * static_cast<double>(st.task_resource.memoryMib());
      cpu += n * d * static_cast<double>(st.task_resource.vcores());
      double start = 0;
      for (int dep : st.depends_on) start = std::max(start, finish[static_cast<size_t>(dep)]);
      finish[k] = start + d;
      path_s =
          std::max(path_s, static_cast<double>((j.submit - first).count()) / 1000.0 + finish[k]);
    }
  }
  const double work_s = std::max(mem / static_cast<double>(capacity.memoryMib()),
                                 cpu / static_cast<double>(capacity.vcores()));
  return std::max(work_s, path_s);
}

// A floor under one job's completion time on `nodes` nodes of `node`: its
// critical path, each stage taking as many waves of its (nominal, as the
// simulator runs ad-hoc tasks) duration as the whole cluster needs to hold
// its tasks (one wave when they all fit at once). No policy can finish the
// job sooner, so a policy's mean (or quantile) JCT over the same quantity of
// the floors bounds the JCT gain any scheduler could show (the paper's
// 1.59x).
double jobFloorS(const sim::AdhocJob& j, const Resource& node, int64_t nodes) {
  std::vector<double> finish(j.stages.size(), 0);
  double path_s = 0;
  for (size_t k = 0; k < j.stages.size(); k++) {
    const sim::SimStage& st = j.stages[k];
    const Resource& t = st.task_resource;
    int64_t per_node = std::numeric_limits<int64_t>::max();
    if (t.memoryMib() > 0) per_node = std::min(per_node, node.memoryMib() / t.memoryMib());
    if (t.vcores() > 0) per_node = std::min(per_node, node.vcores() / t.vcores());
    const int64_t slots = std::max<int64_t>(
        1, per_node == std::numeric_limits<int64_t>::max() ? st.tasks : per_node * nodes);
    const int64_t waves = std::max<int64_t>(1, (st.tasks + slots - 1) / slots);
    double start = 0;
    for (int dep : st.depends_on) start = std::max(start, finish[static_cast<size_t>(dep)]);
    finish[k] = start + static_cast<double>(waves * st.task_duration.count()) / 1000.0;
    path_s = std::max(path_s, finish[k]);
  }
  return path_s;
}

// A floor under the mean completion time of `jobs` (submit offsets and
// nominal work in one resource, as seconds of the whole cluster's capacity of
// it): the cluster as one preemptive machine of that capacity, where
// shortest remaining work first (SRPT) minimises the sum of completion times
// with release dates. Every real schedule is feasible in that relaxation.
double srptMeanFlowS(std::vector<std::pair<double, double>> jobs) {
  if (jobs.empty()) return 0;
  std::sort(jobs.begin(), jobs.end());
  std::priority_queue<std::pair<double, size_t>, std::vector<std::pair<double, size_t>>,
                      std::greater<>>
      ready;  // (remaining work, job)
  double t = 0, flow = 0;
  size_t next = 0;
  while (next < jobs.size() || !ready.empty()) {
    if (ready.empty()) t = std::max(t, jobs[next].first);
    for (; next < jobs.size() && jobs[next].first <= t; next++)
      ready.emplace(jobs[next].second, next);
    auto [rem, i] = ready.top();
    ready.pop();
    const double until = next < jobs.size() ? jobs[next].first : 1e300;
    if (t + rem <= until) {
      t += rem;
      flow += t - jobs[i].first;
    } else {  // preempted by the next release
      ready.emplace(rem - (until - t), i);
      t = until;
    }
  }
  return flow / static_cast<double>(jobs.size());
}

struct Outcome {
  std::vector<sim::AdhocOutcome> jobs;
};

Result<Outcome> runPolicy(const sim::Workload& w, sim::ExperimentOptions o,
                          const std::string& policy) {
  o.adhoc_policy = policy;
  MORPHEUS_ASSIGN_OR_RETURN(auto specs,
                            sim::parseStrategies({"baseline"}, {}, inference::FitParams{}.alpha));
  MORPHEUS_ASSIGN_OR_RETURN(auto summary, sim::runExperiment(w, o, specs));
  return Outcome{summary.strategies.at(0).adhoc};
}

std::vector<uint64_t> parseSeeds(const std::string& text) {
  std::vector<uint64_t> out;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) out.push_back(std::stoull(item));
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  // --scenario paper: the paper's own setup (paper_sim.h), its own options.
  for (int i = 1; i + 1 < argc; i++) {
    if (std::string(argv[i]) == "--scenario" && std::string(argv[i + 1]) == "paper")
      return bench::paperMain(argc, argv);
  }
  bench::BenchReport report("carbyne", &argc, argv);
  CLI::App app{"bench_carbyne: Carbyne vs DRF in morpheus-sim's ad-hoc queue"};
  std::string scenario = "swim", seeds_text = "1,2,3", shapes = "diverse";
  std::string trace = "data/swim/swim-fb2009-24h.tsv";
  int64_t nodes = 20, batch_jobs = 150, window_s = 60;
  double adhoc_load = 0.6, noise = 0.0, altruistic = 1.0;
  app.add_option("--scenario", scenario, "swim, batch, star, union or paper (own options)")
      ->capture_default_str();
  app.add_option("--seeds", seeds_text, "Comma-separated seeds")->capture_default_str();
  app.add_option("--adhoc-trace", trace, "SWIM trace (swim scenario)")->capture_default_str();
  app.add_option("--nodes", nodes)->capture_default_str();
  app.add_option("--adhoc-load", adhoc_load, "swim: share of capacity")->capture_default_str();
  app.add_option("--batch-jobs", batch_jobs, "batch, star and union: DAG jobs")
      ->capture_default_str();
  app.add_option("--arrival-window", window_s,
                 "batch, star and union: seconds the DAG jobs arrive over (uniformly)")
      ->capture_default_str();
  app.add_option("--task-shapes", shapes,
                 "uniform (one container shape) or diverse (multi-resource, per stage)")
      ->capture_default_str();
  app.add_option("--noise", noise, "Estimate noise in [0, 1)")->capture_default_str();
  app.add_option("--altruistic-share", altruistic, "Share of jobs reporting their DAG")
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  if (scenario != "swim" && scenario != "batch" && scenario != "star" && scenario != "union") {
    std::cerr << "bench_carbyne: --scenario: swim, batch, star or union\n";
    return 2;
  }
  if (window_s <= 0) {
    std::cerr << "bench_carbyne: --arrival-window: must be > 0 seconds, got " << window_s << "\n";
    return 2;
  }
  if (shapes != "uniform" && shapes != "diverse") {
    std::cerr << "bench_carbyne: --task-shapes: uniform or diverse\n";
    return 2;
  }
  const bool diverse = shapes == "diverse";

  const Resource node_size(65536, 16);
  std::vector<double> avg_ratio, avg_ceiling, p95_ratio, eff, eff_ceiling, med_slow, frac_slow;
  nlohmann::json per_seed = nlohmann::json::array();
  for (uint64_t seed : parseSeeds(seeds_text)) {
    sim::ExperimentOptions o;
    o.nodes = nodes;
    o.node_size = node_size;
    o.days = 2;  // one training day (nothing to train: no periodic jobs), one evaluated
    o.seed = seed;
    o.realize = sim::drawInstance;
    o.estimate_noise = noise;
    o.altruistic_share = altruistic;
    sim::Workload w;
    const Millis eval_start(sim::trainDays(o) * kDayMs);
    if (scenario == "batch") {
      w.adhoc =
          dagJobs(batch_jobs, seed, eval_start, window_s, diverse, "batch", "dag", 30, batchStages);
    } else if (scenario == "star") {
      w.adhoc =
          dagJobs(batch_jobs, seed, eval_start, window_s, diverse, "star", "star", 100, starStages);
    } else if (scenario == "union") {
      w.adhoc = dagJobs(batch_jobs, seed, eval_start, window_s, diverse, "union", "union", 200,
                        unionStages);
    } else {
      sim::AdhocOptions a;
      a.trace_path = trace;
      a.days = o.days;
      a.load = adhoc_load;
      a.seed = seed;
      a.node_size = node_size;
      a.nodes = nodes;
      a.diverse_shapes = diverse;
      if (Status st = sim::addAdhocLoad(w, a); !st.isOk()) {
        std::cerr << "bench_carbyne: " << st.message() << "\n";
        return 2;
      }
    }
    auto drf = runPolicy(w, o, "drf");
    auto car = runPolicy(w, o, "carbyne");
    if (!drf.isOk() || !car.isOk()) {
      std::cerr << "bench_carbyne: " << (drf.isOk() ? car.status() : drf.status()).message()
                << "\n";
      return 2;
    }
    std::map<std::pair<std::string, int64_t>, const sim::AdhocJob*> by_name;
    for (const auto& j : w.adhoc) by_name[{j.name, j.submit.count()}] = &j;
    std::vector<double> jd, jc, slow, jf;
    std::vector<std::pair<double, double>> cpu_jobs, mem_jobs;  // (submit s, cluster-seconds)
    std::vector<sim::AdhocJob> evaluated;                       // finished under both policies
    double first = 1e300, end_d = 0, end_c = 0;
    int64_t unfinished = 0;
    for (size_t i = 0; i < drf->jobs.size() && i < car->jobs.size(); i++) {
      const auto& d = drf->jobs[i];
      const auto& c = car->jobs[i];
      if (d.job != c.job || d.submit != c.submit) {
        std::cerr << "bench_carbyne: runs disagree on job " << i << "\n";
        return 2;
      }
      if (d.completion < Millis(0) || c.completion < Millis(0)) {
        unfinished++;
        continue;
      }
      const double s = static_cast<double>(d.submit.count()) / 1000.0;
      const double td = static_cast<double>(d.completion.count()) / 1000.0;
      const double tc = static_cast<double>(c.completion.count()) / 1000.0;
      auto it = by_name.find({d.job, d.submit.count()});
      if (it == by_name.end()) {
        std::cerr << "bench_carbyne: no workload job " << d.job << "\n";
        return 2;
      }
      jf.push_back(jobFloorS(*it->second, node_size, nodes));
      evaluated.push_back(*it->second);
      double cpu = 0, mem = 0;
      for (const auto& st : it->second->stages) {
        const double work = static_cast<double>(st.tasks * st.task_duration.count()) / 1000.0;
        cpu += work * static_cast<double>(st.task_resource.vcores());
        mem += work * static_cast<double>(st.task_resource.memoryMib());
      }
      cpu_jobs.emplace_back(s, cpu / static_cast<double>(node_size.vcores() * nodes));
      mem_jobs.emplace_back(s, mem / static_cast<double>(node_size.memoryMib() * nodes));
      jd.push_back(td);
      jc.push_back(tc);
      slow.push_back(tc / std::max(td, 1e-3));
      first = std::min(first, s);
      end_d = std::max(end_d, s + td);
      end_c = std::max(end_c, s + tc);
    }
    const double mk_d = end_d - first, mk_c = end_c - first;
    const double floor_s = makespanFloorS(evaluated, node_size * nodes);
    const double jct_floor_s =
        std::max({mean(jf), srptMeanFlowS(cpu_jobs), srptMeanFlowS(mem_jobs)});
    int64_t over = 0;
    for (double x : slow) over += x > 1.1 ? 1 : 0;
    nlohmann::json r = {
        {"seed", seed},
        {"jobs", jd.size()},
        {"unfinished", unfinished},
        {"drf_avg_jct_s", mean(jd)},
        {"carbyne_avg_jct_s", mean(jc)},
        {"drf_p95_jct_s", quantile(jd, 0.95)},
        {"carbyne_p95_jct_s", quantile(jc, 0.95)},
        {"avg_jct_gain", mean(jd) / std::max(mean(jc), 1e-9)},
        {"p95_jct_gain", quantile(jd, 0.95) / std::max(quantile(jc, 0.95), 1e-9)},
        {"drf_makespan_s", mk_d},
        {"carbyne_makespan_s", mk_c},
        {"efficiency_gain", mk_d / std::max(mk_c, 1e-9)},
        {"makespan_floor_s", floor_s},
        {"efficiency_gain_ceiling", mk_d / std::max(floor_s, 1e-9)},
        {"avg_jct_floor_s", jct_floor_s},
        {"avg_jct_gain_ceiling", mean(jd) / std::max(jct_floor_s, 1e-9)},
        {"p95_jct_gain_ceiling", quantile(jd, 0.95) / std::max(quantile(jf, 0.95), 1e-9)},
        {"slowdown_median", quantile(slow, 0.5)},
        {"slowdown_p90", quantile(slow, 0.9)},
        {"slowdown_p95", quantile(slow, 0.95)},
        {"share_slower_10pct", slow.empty() ? 0.0 : static_cast<double>(over) / slow.size()}};
    std::printf(
        "seed %llu: %zu jobs (%lld unfinished): avg JCT %.1f s (DRF) / %.1f s (Carbyne) = "
        "%.2fx; p95 %.1f / %.1f = %.2fx; makespan %.0f / %.0f s = %.2fx; slowdown vs DRF "
        "median %.2f, p90 %.2f, p95 %.2f, %.1f%% of jobs > 1.1x\n",
        static_cast<unsigned long long>(seed), jd.size(), static_cast<long long>(unfinished),
        mean(jd), mean(jc), r["avg_jct_gain"].get<double>(), quantile(jd, 0.95), quantile(jc, 0.95),
        r["p95_jct_gain"].get<double>(), mk_d, mk_c, r["efficiency_gain"].get<double>(),
        quantile(slow, 0.5), quantile(slow, 0.9), quantile(slow, 0.95),
        100.0 * r["share_slower_10pct"].get<double>());
    std::printf(
        "  makespan floor (nominal work / capacity, or the latest job's critical path) "
        "%.0f s: no policy can gain more than %.2fx over DRF's makespan\n",
        floor_s, r["efficiency_gain_ceiling"].get<double>());
    std::printf(
        "  average JCT floor (the larger of the mean critical path and SRPT on the cluster as "
        "one machine, per resource) %.1f s: no policy can gain more than %.2fx over DRF's "
        "average JCT; p95 floor (critical paths) %.1f s: %.2fx\n",
        jct_floor_s, r["avg_jct_gain_ceiling"].get<double>(), quantile(jf, 0.95),
        r["p95_jct_gain_ceiling"].get<double>());
    std::fflush(stdout);
    avg_ceiling.push_back(r["avg_jct_gain_ceiling"]);
    avg_ratio.push_back(r["avg_jct_gain"]);
    p95_ratio.push_back(r["p95_jct_gain"]);
    eff.push_back(r["efficiency_gain"]);
    eff_ceiling.push_back(r["efficiency_gain_ceiling"]);
    med_slow.push_back(r["slowdown_median"]);
    frac_slow.push_back(r["share_slower_10pct"]);
    per_seed.push_back(std::move(r));
  }
  report.figures()["scenario"] = scenario;
  report.figures()["noise"] = noise;
  report.figures()["task_shapes"] = shapes;
  report.figures()["altruistic_share"] = altruistic;
  report.figures()["nodes"] = nodes;
  if (scenario != "swim") report.figures()["arrival_window_s"] = window_s;
  report.figures()["seeds"] = per_seed;
  report.figures()["avg_jct_gain_mean"] = mean(avg_ratio);
  report.figures()["avg_jct_gain_ceiling_mean"] = mean(avg_ceiling);
  report.figures()["p95_jct_gain_mean"] = mean(p95_ratio);
  report.figures()["efficiency_gain_mean"] = mean(eff);
  report.figures()["efficiency_gain_ceiling_mean"] = mean(eff_ceiling);
  report.figures()["slowdown_median_max"] =
      med_slow.empty() ? 0.0 : *std::max_element(med_slow.begin(), med_slow.end());
  report.targets()["avg_jct_gain_min"] = 1.59;
  report.targets()["efficiency_gain_min"] = 1.26;
  report.targets()["slowdown_median_max"] = 1.10;
  report.emit();
  return 0;
}
