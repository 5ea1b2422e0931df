#include "sim/phoenix/phoenix_cli.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <tuple>

#include "scheduler/policies/phoenix_policy.h"
#include "scheduler/policies/policy_factory.h"
#include "sim/phoenix/eagle_sim.h"

namespace morpheus::sim {

namespace {

Result<std::shared_ptr<const sched::QueueOrderingPolicy>> policyByName(
    const std::string& name, const sched::PhoenixLongWork& long_work) {
  if (name == "phoenix-no-crv") {
    return std::shared_ptr<const sched::QueueOrderingPolicy>(
        std::make_shared<sched::PhoenixNoCrvOrderingPolicy>(sched::kPhoenixBypassBound, long_work));
  }
  sched::PolicySettings settings;
  settings.phoenix = long_work;
  auto p = sched::makeOrderingPolicy(name, "--policies", settings);
  if (!p.isOk()) {
    return invalidArgument("--policies", "unknown policy '" + name +
                                             "' (fifo, drf, carbyne, phoenix, phoenix-no-crv, "
                                             "eagle-c, phoenix-hybrid, phoenix-hybrid-placement, "
                                             "phoenix-hybrid-steer, "
                                             "phoenix-hybrid-placement-steer, "
                                             "phoenix-hybrid-no-crv, phoenix-hybrid-steal, "
                                             "eagle-c-steal, queue-order-bound, floor)");
  }
  return p;
}

// Bench-only: the best short-job p99 worker-queue orders reach with Eagle-C's
// placement, and the passes' placement bounds (runQueueOrderSearch).
constexpr const char* kQueueOrderBound = "queue-order-bound";

// One run: the Eagle-C baseline (eagle_sim.h) or a policy of the scheduler core.
Result<PhoenixSimResult> runOne(const std::string& name, const PhoenixSetupFlags& f) {
  if (name == "eagle-c") return runEagleSim(f.opts, f.eagle);
  if (name == "eagle-c-steal" || name == "phoenix-hybrid-steal") {
    EagleOptions e = f.eagle;
    e.order = name == "eagle-c-steal" ? EagleQueueOrder::kSrpt : EagleQueueOrder::kCrv;
    e.steal = true;
    return runEagleSim(f.opts, e);
  }
  for (auto [order, placement, steering] : {std::tuple{EagleQueueOrder::kCrv, false, false},
                                            {EagleQueueOrder::kCrv, true, false},
                                            {EagleQueueOrder::kCrv, false, true},
                                            {EagleQueueOrder::kCrv, true, true},
                                            {EagleQueueOrder::kConstrainedFirst, false, false}}) {
    EagleOptions e = f.eagle;
    e.order = order;
    e.crv_placement = placement;
    e.crv_long_steering = steering;
    if (name == eaglePolicyName(e)) return runEagleSim(f.opts, e);
  }
  if (name == "floor") return runPhoenixFloor(f.opts);
  if (name == kQueueOrderBound) return runQueueOrderSearch(f.opts, f.eagle, f.repair_passes);
  MORPHEUS_ASSIGN_OR_RETURN(auto policy, policyByName(name, f.phoenix_long));
  return runPhoenixSim(f.opts, policy);
}

nlohmann::json toJson(const Percentiles& p) {
  return {
      {"count", p.count}, {"p50_s", p.p50}, {"p90_s", p.p90}, {"p99_s", p.p99}, {"mean_s", p.mean}};
}

// The tail's wait breakdown (eagle_sim.h): jobs at or above quantile q.
nlohmann::json waitJson(const std::vector<ShortJobWait>& waits, double q) {
  const ShortWaitSummary t = summariseShortWaits(waits, q);
  const ShortJobWait& m = t.mean;
  return {{"quantile", q},
          {"threshold_s", t.threshold_s},
          {"jobs", t.jobs},
          {"constrained_jobs", t.constrained},
          {"tasks_mean", t.tasks},
          {"probes_behind_long_share", t.probes_behind_long_share},
          {"long_starts_while_waiting", t.long_starts_while_waiting},
          {"response_mean_s", m.response_s},
          {"behind_long_full_s", m.behind_long_full_s},
          {"behind_long_free_s", m.behind_long_free_s},
          {"behind_short_full_s", m.behind_short_full_s},
          {"behind_short_free_s", m.behind_short_free_s},
          {"own_tasks_s", m.own_tasks_s},
          {"dispatch_s", m.dispatch_s},
          {"run_s", m.run_s}};
}

void printWaits(const std::string& policy, uint64_t seed, const std::vector<ShortJobWait>& waits) {
  for (double q : {0.95, 0.99}) {
    const ShortWaitSummary t = summariseShortWaits(waits, q);
    const ShortJobWait& m = t.mean;
    std::printf(
        "  wait breakdown %s seed %llu, short jobs >= p%.0f (%.0f s; %lld jobs, %lld constrained, "
        "%.1f tasks, %.0f%% of probes behind long, %.0f long starts on its workers while it "
        "waited): mean %.0f s = long %.0f (no matching idle) + "
        "%.0f (one idle) + short %.0f + %.0f + own tasks %.0f + dispatch %.0f + run %.0f\n",
        policy.c_str(), static_cast<unsigned long long>(seed), 100 * q, t.threshold_s,
        static_cast<long long>(t.jobs), static_cast<long long>(t.constrained), t.tasks,
        100 * t.probes_behind_long_share, t.long_starts_while_waiting, m.response_s,
        m.behind_long_full_s, m.behind_long_free_s, m.behind_short_full_s, m.behind_short_free_s,
        m.own_tasks_s, m.dispatch_s, m.run_s);
  }
}

std::string hex(uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

// Relative slowdown of kind k in run r: mean response time of its short jobs
// over that of unconstrained short jobs (0 when either is unmeasured).
double slowdown(const PhoenixSimResult& r, size_t k) {
  if (k >= r.kind_short_mean_s.size() || r.unconstrained_short_mean_s <= 0) return 0;
  return r.kind_short_mean_s[k] / r.unconstrained_short_mean_s;
}

void addSetupFlags(CLI::App* c, PhoenixSetupFlags& f) {
  f.cmd = c;
  c->add_option("--mix", f.mix,
                "Workload: synthetic (100 nodes, 2 h), or a trace mix shaped like google, yahoo, "
                "cloudera (defaults then: 625 nodes, 12 h, load 0.9)")
      ->capture_default_str();
  c->add_option("--calibration", f.calibration,
                "Trace mixes: constraint kinds from this file (phoenix-calibrate --out); "
                "without it, Table II's kinds uncalibrated");
  c->add_option("--nodes", f.opts.nodes, "Nodes")->capture_default_str();
  c->add_option("--node-size", f.node_size, "Per node")->capture_default_str();
  c->add_option("--load", f.opts.load, "Offered vcore load (share of the cluster)")
      ->capture_default_str();
  c->add_option("--arrivals-min", f.arrivals_min, "Minutes of job arrivals")->capture_default_str();
  c->add_option("--eagle-short-partition", f.eagle.short_partition,
                "eagle-c: share of nodes reserved for short jobs (trace mixes: the trace's)")
      ->capture_default_str();
  c->add_option("--eagle-probe-ratio", f.eagle.probe_ratio, "eagle-c: probes per short task")
      ->capture_default_str();
  c->add_option("--phoenix-long-share", f.phoenix_long.long_share,
                "phoenix, phoenix-no-crv: share of a scarce constraint kind's vcores long work "
                "may hold (1: no cap)")
      ->capture_default_str();
  c->add_option("--phoenix-reserve-factor", f.phoenix_long.reserve_factor,
                "phoenix, phoenix-no-crv: a scarce kind's reserve from long work is this many "
                "times short work's share of the work granted on the kind, at most 1 - "
                "--phoenix-long-share (0: always 1 - --phoenix-long-share)")
      ->capture_default_str();
  c->add_option("--phoenix-long-task-s", f.phoenix_long_task_s,
                "phoenix, phoenix-no-crv: expected task duration above which work is long "
                "(0: no cap; trace mixes default to the trace's short/long cutoff)");
  c->add_flag("--progress", f.opts.progress, "A line on stderr per simulated hour of each run");
}

// Applies the trace mix's defaults to the flags not given, loads the
// calibration and checks the options; bad input names the flag.
Status resolveSetup(PhoenixSetupFlags& f) {
  MORPHEUS_ASSIGN_OR_RETURN(f.opts.mix, parsePhoenixMix(f.mix, "--mix"));
  auto given = [&f](const char* flag) { return f.cmd != nullptr && f.cmd->count(flag) > 0; };
  if (f.opts.mix != PhoenixMix::kSynthetic) {
    if (!given("--nodes")) f.opts.nodes = 625;
    if (!given("--arrivals-min")) f.arrivals_min = 720;
    if (!given("--load")) f.opts.load = 0.9;
    if (!given("--eagle-short-partition"))
      f.eagle.short_partition = traceMixShape(f.opts.mix).short_partition;
    f.opts.short_partition = f.eagle.short_partition;
    if (!given("--phoenix-long-task-s")) f.phoenix_long_task_s = traceMixShape(f.opts.mix).cutoff_s;
    if (!f.calibration.empty()) {
      MORPHEUS_ASSIGN_OR_RETURN(f.opts.kinds,
                                readPhoenixCalibration(f.calibration, f.opts.mix, "--calibration"));
    } else {
      f.opts.kinds = tableTwoKinds();
    }
  } else if (!f.calibration.empty()) {
    return invalidArgument("--calibration", "applies to the trace mixes only");
  }
  MORPHEUS_ASSIGN_OR_RETURN(f.opts.node_size, Resource::parse(f.node_size, "--node-size"));
  if (f.arrivals_min <= 0) return invalidArgument("--arrivals-min", "must be > 0");
  f.opts.arrivals = Millis(f.arrivals_min * 60 * 1000);
  if (!(f.eagle.short_partition >= 0 && f.eagle.short_partition < 1))
    return invalidArgument("--eagle-short-partition", "must be in [0, 1)");
  if (f.eagle.probe_ratio < 1) return invalidArgument("--eagle-probe-ratio", "must be >= 1");
  if (f.repair_passes < 0) return invalidArgument("--repair-passes", "must be >= 0");
  if (!(f.phoenix_long.long_share > 0 && f.phoenix_long.long_share <= 1))
    return invalidArgument("--phoenix-long-share", "must be in (0, 1]");
  if (!(f.phoenix_long.reserve_factor >= 0 && std::isfinite(f.phoenix_long.reserve_factor)))
    return invalidArgument("--phoenix-reserve-factor", "must be a number >= 0");
  if (!(f.phoenix_long_task_s >= 0))
    return invalidArgument("--phoenix-long-task-s", "must be >= 0");
  f.phoenix_long.long_task =
      Millis(static_cast<int64_t>(std::llround(f.phoenix_long_task_s * 1000)));
  if (Status s = validatePhoenixOptions(f.opts); !s.isOk()) {
    // "load: ..." -> "--load: ...", "isa_rate: ..." -> "--isa-rate: ...".
    std::string m = s.message();
    const size_t colon = m.find(':');
    if (colon != std::string::npos)
      std::replace(m.begin(), m.begin() + static_cast<std::ptrdiff_t>(colon), '_', '-');
    return Status(StatusCode::kInvalidArgument, "--" + m);
  }
  return Status::ok();
}

double meanOf(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return v.empty() ? 0 : s / static_cast<double>(v.size());
}

// Means over seeds per policy, the p99 ratio against eagle-c and the floor's
// headroom.
void printSummary(const PhoenixCliFlags& f,
                  const std::map<std::string, std::vector<PhoenixSimResult>>& by) {
  std::printf("\nmean over %zu seeds (s)\n%-15s | %6s %7s %8s | %13s | %9s | %s\n", f.seeds.size(),
              "policy", "p50", "p90", "p99", "constr. p99", "long mean", "rejected");
  for (const auto& name : f.policies) {
    auto it = by.find(name);
    if (it == by.end()) continue;
    std::vector<double> p50, p90, p99, c99, lm, rej;
    for (const auto& r : it->second) {
      p50.push_back(r.short_jobs.p50);
      p90.push_back(r.short_jobs.p90);
      p99.push_back(r.short_jobs.p99);
      c99.push_back(r.short_constrained.p99);
      lm.push_back(r.long_unconstrained.mean);
      rej.push_back(static_cast<double>(r.rejected));
    }
    std::printf("%-15s | %6.0f %7.0f %8.0f | %13.0f | %9.0f | %.1f\n", name.c_str(), meanOf(p50),
                meanOf(p90), meanOf(p99), meanOf(c99), meanOf(lm), meanOf(rej));
  }
  auto e = by.find("eagle-c");
  if (e == by.end()) return;
  auto fl = by.find("floor");
  for (const auto& name : f.policies) {
    if (name == "eagle-c" || name == "floor" || by.find(name) == by.end()) continue;
    const auto& p = by.at(name);
    std::vector<double> ratios, pp99, ep99, plong, elong;
    for (size_t i = 0; i < p.size() && i < e->second.size(); i++) {
      ratios.push_back(e->second[i].short_jobs.p99 / p[i].short_jobs.p99);
      pp99.push_back(p[i].short_jobs.p99);
      ep99.push_back(e->second[i].short_jobs.p99);
      plong.push_back(p[i].long_unconstrained.mean);
      elong.push_back(e->second[i].long_unconstrained.mean);
    }
    std::printf("%s: short p99 eagle-c / %s = %.2fx (of the seed means; per seed", name.c_str(),
                name.c_str(), meanOf(ep99) / meanOf(pp99));
    for (double r : ratios) std::printf(" %.2f", r);
    std::printf("); long mean %s / eagle-c = %.3f\n", name.c_str(), meanOf(plong) / meanOf(elong));
  }
  if (fl != by.end()) {
    std::vector<double> fp99, ep99;
    for (size_t i = 0; i < fl->second.size() && i < e->second.size(); i++) {
      fp99.push_back(fl->second[i].short_jobs.p99);
      ep99.push_back(e->second[i].short_jobs.p99);
    }
    std::printf("headroom: short p99 eagle-c / floor = %.2fx (the most any scheduler can gain)\n",
                meanOf(ep99) / meanOf(fp99));
  }
  if (!f.setup.opts.kinds.empty()) {
    std::printf("\nrelative slowdown per kind (mean over seeds)\n%-15s", "policy");
    for (const auto& k : f.setup.opts.kinds) std::printf(" %9.9s", k.name.c_str());
    std::printf("\n%-15s", "Table II");
    for (const auto& k : f.setup.opts.kinds) std::printf(" %9.2f", k.target_slowdown);
    std::printf("\n");
    for (const auto& name : f.policies) {
      auto it = by.find(name);
      if (it == by.end() || name == "floor") continue;
      std::printf("%-15s", name.c_str());
      for (size_t k = 0; k < f.setup.opts.kinds.size(); k++) {
        std::vector<double> v;
        for (const auto& r : it->second) v.push_back(slowdown(r, k));
        std::printf(" %9.2f", meanOf(v));
      }
      std::printf("\n");
    }
  }
}

}  // namespace

CLI::App* addPhoenixCommand(CLI::App& app, PhoenixCliFlags& f) {
  auto* c = app.add_subcommand(
      "phoenix",
      "Constraint-aware ordering (Phoenix) vs FIFO/DRF/Eagle-C on a heterogeneous cluster");
  addSetupFlags(c, f.setup);
  c->add_option("--short-fraction", f.setup.opts.short_fraction,
                "synthetic mix: share of short jobs")
      ->capture_default_str();
  c->add_option("--isa-rate", f.setup.opts.isa_rate,
                "synthetic mix: share of short jobs asking isa in {aarch64}")
      ->capture_default_str();
  c->add_option("--cores-rate", f.setup.opts.cores_rate, "... cores >= 32")->capture_default_str();
  c->add_option("--network-rate", f.setup.opts.network_rate, "... network_gbps >= 25")
      ->capture_default_str();
  c->add_option("--kernel-rate", f.setup.opts.kernel_rate, "... kernel >= 5.10")
      ->capture_default_str();
  c->add_option("--seeds", f.seeds, "Workload seeds")->capture_default_str();
  c->add_option("--policies", f.policies,
                "fifo, drf, phoenix-no-crv, phoenix (scheduler core); eagle-c, phoenix-hybrid "
                "(the paper's Phoenix: Eagle-C with CRV worker-queue reordering), "
                "phoenix-hybrid-placement, phoenix-hybrid-steer, phoenix-hybrid-placement-steer, "
                "phoenix-hybrid-no-crv, phoenix-hybrid-steal, eagle-c-steal (idle workers steal "
                "waiting short jobs); queue-order-bound (bench-only: the best short-job p99 "
                "found by oracle worker-queue orders with Eagle-C's placement, and their "
                "placement bounds); floor: no job waits (the bound under every scheduler)")
      ->capture_default_str();
  c->add_flag("--wait-breakdown", f.setup.eagle.wait_breakdown,
              "eagle-c and phoenix-hybrid*: where the short jobs at or above p95 and p99 spent "
              "their response time (wait_breakdown in --json)");
  c->add_option("--repair-passes", f.setup.repair_passes,
                "queue-order-bound: deadline-repair passes after srpt, edf and sacrifice")
      ->capture_default_str();
  c->add_flag("--json", f.json, "Machine-readable results");
  return c;
}

CLI::App* addPhoenixCalibrateCommand(CLI::App& app, PhoenixCalibrateFlags& f) {
  auto* c = app.add_subcommand(
      "phoenix-calibrate",
      "Node shares of Table II's constraint kinds so Eagle-C's slowdowns match it (trace mixes)");
  addSetupFlags(c, f.setup);
  c->add_option("--seeds", f.seeds,
                "Calibration seeds: each iteration runs them all and averages the slowdowns")
      ->capture_default_str();
  c->add_option("--check-seed", f.check_seed,
                "Seed of the final check of the kept shares (not a calibration seed)")
      ->capture_default_str();
  c->add_option("--iterations", f.iterations, "Search iterations at most")->capture_default_str();
  c->add_option("--tolerance", f.tolerance, "Largest |slowdown / target - 1| accepted")
      ->capture_default_str();
  c->add_option("--search-tolerance", f.search_tolerance,
                "The search stops when every kind is within it (<= --tolerance)")
      ->capture_default_str();
  c->add_option("--out", f.out, "Calibration file to write (JSON)")->required();
  return c;
}

int runPhoenixCommand(PhoenixCliFlags f) {
  if (Status s = resolveSetup(f.setup); !s.isOk()) {
    std::cerr << "morpheus-sim: " << s.message() << "\n";
    return 2;
  }
  for (const auto& name : f.policies) {  // before any output: bad input leaves one line
    if (name == "eagle-c" || name == "floor" || name == "phoenix-hybrid" ||
        name == "phoenix-hybrid-placement" || name == "phoenix-hybrid-steer" ||
        name == "phoenix-hybrid-placement-steer" || name == "phoenix-hybrid-no-crv" ||
        name == "phoenix-hybrid-steal" || name == "eagle-c-steal" || name == kQueueOrderBound)
      continue;
    if (auto p = policyByName(name, {}); !p.isOk()) {
      std::cerr << "morpheus-sim: " << p.status().message() << "\n";
      return 2;
    }
  }
  nlohmann::json all = nlohmann::json::array();
  std::map<std::string, std::vector<PhoenixSimResult>> by;
  if (!f.json) {
    std::printf("%-15s %4s %6s | %-23s | %-23s | %-23s | %6s\n", "policy", "seed", "jobs",
                "short p50/p90/p99 s", "short constrained p50/p90/p99", "long p50/p90/mean s",
                "wall s");
  }
  for (uint64_t seed : f.seeds) {
    for (const auto& name : f.policies) {
      f.setup.opts.seed = seed;
      auto r = runOne(name, f.setup);
      if (!r.isOk()) {
        std::cerr << "morpheus-sim: " << r.status().message() << "\n";
        return 2;
      }
      by[name].push_back(*r);
      const auto &s = r->short_jobs, &c = r->short_constrained, &l = r->long_unconstrained;
      if (f.json) {
        nlohmann::json kinds = nlohmann::json::array();
        for (size_t k = 0; k < f.setup.opts.kinds.size(); k++) {
          kinds.push_back(
              {{"name", f.setup.opts.kinds[k].name},
               {"short_jobs", r->kind_short_count[k]},
               {"short_mean_s", r->kind_short_mean_s[k]},
               {"slowdown", slowdown(*r, k)},
               {"nodes", r->kind_nodes.size() > k ? r->kind_nodes[k] : 0},
               {"long_share", r->kind_long_share.size() > k ? r->kind_long_share[k] : 0},
               {"long_90_time", r->kind_long_90_time.size() > k ? r->kind_long_90_time[k] : 0},
               {"long_full_time",
                r->kind_long_full_time.size() > k ? r->kind_long_full_time[k] : 0}});
        }
        all.push_back({{"mix", f.setup.mix},
                       {"policy", name},
                       {"seed", seed},
                       {"jobs", r->jobs},
                       {"rejected", r->rejected},
                       {"short", toJson(s)},
                       {"short_constrained", toJson(c)},
                       {"long", toJson(l)},
                       {"kinds", kinds},
                       {"unconstrained_short_mean_s", r->unconstrained_short_mean_s},
                       {"constrained_task_share", r->constrained_task_share},
                       {"makespan_s", r->makespan_s},
                       {"finish_digest", hex(r->finish_digest)},
                       {"wall_s", r->wall_s}});
        if (!r->passes.empty()) {
          all.back()["bound_short_p99_s"] = r->bound_short_p99_s;
          nlohmann::json passes = nlohmann::json::array();
          for (const auto& p : r->passes) {
            passes.push_back({{"order", p.order},
                              {"short_p99_s", p.short_p99_s},
                              {"bound_p99_s", p.bound_p99_s},
                              {"long_mean_s", p.long_mean_s}});
          }
          all.back()["passes"] = passes;
        }
        if (!r->short_waits.empty()) {
          all.back()["wait_breakdown"] = {waitJson(r->short_waits, 0.95),
                                          waitJson(r->short_waits, 0.99)};
        }
      } else {
        std::printf(
            "%-15s %4llu %6lld | %6.0f %7.0f %8.0f | %6.0f %7.0f %8.0f | %6.0f %7.0f %8.0f | "
            "%6.1f\n",
            name.c_str(), static_cast<unsigned long long>(seed), static_cast<long long>(r->jobs),
            s.p50, s.p90, s.p99, c.p50, c.p90, c.p99, l.p50, l.p90, l.mean, r->wall_s);
        if (!r->short_waits.empty()) printWaits(name, seed, r->short_waits);
        for (const auto& p : r->passes) {
          std::printf(
              "  %s seed %llu, order %-9s: short p99 %.0f s, placement bound p99 %.0f s, "
              "long mean %.0f s\n",
              name.c_str(), static_cast<unsigned long long>(seed), p.order.c_str(), p.short_p99_s,
              p.bound_p99_s, p.long_mean_s);
        }
        std::fflush(stdout);
      }
    }
  }
  if (f.json) {
    std::cout << all.dump(2) << "\n";
  } else {
    printSummary(f, by);
  }
  return 0;
}

namespace {

// Slowdowns of the kinds at the current shares: one Eagle-C run per seed,
// the per-seed slowdowns averaged over the seeds that measured them (0 when
// none did: no short job of the kind). Prints a progress line per run.
Result<std::vector<double>> measureSlowdowns(PhoenixCalibrateFlags& f,
                                             const std::vector<uint64_t>& seeds, double& cpu_s) {
  PhoenixSimOptions& o = f.setup.opts;
  const size_t n = o.kinds.size();
  std::vector<double> sum(n, 0);
  std::vector<int32_t> runs(n, 0);
  for (uint64_t seed : seeds) {
    o.seed = seed;
    const std::clock_t c0 = std::clock();
    MORPHEUS_ASSIGN_OR_RETURN(PhoenixSimResult r, runEagleSim(o, f.setup.eagle));
    const double cpu = static_cast<double>(std::clock() - c0) / CLOCKS_PER_SEC;
    cpu_s += cpu;
    std::printf("%-4s %-14s", "", ("seed " + std::to_string(seed)).c_str());
    for (size_t k = 0; k < n; k++) {
      const double v = slowdown(r, k);
      if (v > 0) {
        sum[k] += v;
        runs[k]++;
      }
      std::printf(" %9.2f", v);
    }
    std::printf("   %.1f s CPU\n", cpu);
    std::fflush(stdout);
  }
  for (size_t k = 0; k < n; k++) sum[k] = runs[k] > 0 ? sum[k] / runs[k] : 0;
  return sum;
}

double worstError(const std::vector<ConstraintKind>& kinds, const std::vector<double>& measured) {
  double worst = 0;
  for (size_t k = 0; k < kinds.size() && k < measured.size(); k++)
    worst = std::max(worst, std::abs(measured[k] / kinds[k].target_slowdown - 1));
  return worst;
}

}  // namespace

int runPhoenixCalibrateCommand(PhoenixCalibrateFlags f) {
  if (f.setup.mix == "synthetic") {
    std::cerr << "morpheus-sim: --mix: phoenix-calibrate needs a trace mix (google, yahoo, "
                 "cloudera)\n";
    return 2;
  }
  if (f.iterations < 1) {
    std::cerr << "morpheus-sim: --iterations: must be >= 1\n";
    return 2;
  }
  if (!(f.tolerance > 0)) {
    std::cerr << "morpheus-sim: --tolerance: must be > 0\n";
    return 2;
  }
  if (!(f.search_tolerance > 0 && f.search_tolerance <= f.tolerance)) {
    std::cerr << "morpheus-sim: --search-tolerance: must be in (0, --tolerance]\n";
    return 2;
  }
  if (f.seeds.empty()) {
    std::cerr << "morpheus-sim: --seeds: at least one\n";
    return 2;
  }
  if (std::find(f.seeds.begin(), f.seeds.end(), f.check_seed) != f.seeds.end()) {
    std::cerr << "morpheus-sim: --check-seed: must not be a calibration seed\n";
    return 2;
  }
  if (Status s = resolveSetup(f.setup); !s.isOk()) {
    std::cerr << "morpheus-sim: " << s.message() << "\n";
    return 2;
  }
  {  // the output must be writable before hours of runs
    std::ofstream probe(f.out, std::ios::app);
    if (!probe) {
      std::cerr << "morpheus-sim: --out: cannot write '" << f.out << "'\n";
      return 2;
    }
  }
  PhoenixSimOptions& o = f.setup.opts;
  std::vector<ConstraintKind>& kinds = o.kinds;
  const size_t n = kinds.size();
  // From a node share of 0.1 (short_partition_first kinds: 0.05 of the
  // general nodes), or from the shares of a given --calibration (to refine
  // it).
  if (f.setup.calibration.empty()) {
    for (auto& k : kinds) k.node_share = k.short_partition_first ? 0.05 : 0.1;
  }
  std::vector<NodeShareSearch> search(n);
  std::vector<ConstraintKind> best = kinds;
  std::vector<double> best_measured(n, 0);
  double best_err = 1e9;
  int32_t best_iter = 0;
  double cpu_s = 0;
  nlohmann::json history = nlohmann::json::array();
  // The calibration file: the kept shares; written after every iteration
  // (an interrupted search keeps its best) and with the check at the end.
  auto write = [&](const std::vector<double>* check, double check_err) {
    nlohmann::json out_kinds = nlohmann::json::array();
    for (size_t k = 0; k < n; k++) {
      const ConstraintKind& c = best[k];
      out_kinds.push_back({{"name", c.name},
                           {"target_slowdown", c.target_slowdown},
                           {"job_share", c.job_share},
                           {"node_share", c.node_share},
                           {"short_partition_first", c.short_partition_first},
                           {"short_nodes", c.short_nodes},
                           {"measured_slowdown", best_measured[k]}});
      if (check != nullptr) out_kinds.back()["check_slowdown"] = (*check)[k];
    }
    nlohmann::json file = {{"mix", f.setup.mix},
                           {"seeds", f.seeds},
                           {"nodes", o.nodes},
                           {"node_size", f.setup.node_size},
                           {"load", o.load},
                           {"arrivals_min", f.setup.arrivals_min},
                           {"eagle_short_partition", f.setup.eagle.short_partition},
                           {"tolerance", f.tolerance},
                           {"search_tolerance", f.search_tolerance},
                           {"iteration", best_iter},
                           {"worst_error", best_err},
                           {"cpu_s", cpu_s},
                           {"kinds", out_kinds},
                           {"history", history}};
    if (check != nullptr) {
      file["check_seed"] = f.check_seed;
      file["check_worst_error"] = check_err;
    }
    std::ofstream out(f.out, std::ios::trunc);
    out << file.dump(2) << "\n";
    return static_cast<bool>(out);
  };
  std::printf("%-4s %-14s", "iter", "kind:");
  for (const auto& k : kinds) std::printf(" %9.9s", k.name.c_str());
  std::printf("\n%-4s %-14s", "", "Table II");
  for (const auto& k : kinds) std::printf(" %9.2f", k.target_slowdown);
  std::printf("\n");
  int32_t it = 0;
  for (; it < f.iterations; it++) {
    std::printf("%-4d %-14s", it + 1, "node share");
    for (const auto& k : kinds) std::printf(" %9.4f", k.node_share);
    std::printf("\n%-4s %-14s", "", "short nodes");
    for (const auto& k : kinds) {
      if (k.short_nodes >= 0) {
        std::printf(" %9d", k.short_nodes);
      } else {
        std::printf(" %9s", k.short_partition_first ? "all" : "share");
      }
    }
    std::printf("\n");
    auto m = measureSlowdowns(f, f.seeds, cpu_s);
    if (!m.isOk()) {
      std::cerr << "morpheus-sim: " << m.status().message() << "\n";
      return 2;
    }
    const std::vector<double>& measured = *m;
    const double worst = worstError(kinds, measured);
    std::printf("%-4s %-14s", "", "seed mean");
    for (double v : measured) std::printf(" %9.2f", v);
    int32_t within = 0;
    for (size_t k = 0; k < n; k++)
      within += std::abs(measured[k] / kinds[k].target_slowdown - 1) <= f.search_tolerance;
    std::printf("   worst error %.1f%%, %d of %zu within %.0f%%, %.0f s CPU so far\n", 100 * worst,
                within, n, 100 * f.search_tolerance, cpu_s);
    std::fflush(stdout);
    nlohmann::json row = {{"iteration", it + 1}, {"worst_error", worst}};
    for (size_t k = 0; k < n; k++) {
      row["node_share"].push_back(kinds[k].node_share);
      row["short_nodes"].push_back(kinds[k].short_nodes);
      row["slowdown"].push_back(measured[k]);
    }
    history.push_back(row);
    if (worst < best_err) {
      best_err = worst;
      best = kinds;
      best_measured = measured;
      best_iter = it + 1;
    }
    if (!write(nullptr, 0)) {
      std::cerr << "morpheus-sim: --out: cannot write '" << f.out << "'\n";
      return 2;
    }
    if (worst <= f.search_tolerance) break;
    stepNodeShares(kinds, measured, search, shortPartitionNodes(o.nodes, o.short_partition));
  }
  // The final check: the kept shares on a seed the search never ran.
  kinds = best;
  std::printf("check (seed %llu, shares of iteration %d)\n",
              static_cast<unsigned long long>(f.check_seed), best_iter);
  auto check = measureSlowdowns(f, {f.check_seed}, cpu_s);
  if (!check.isOk()) {
    std::cerr << "morpheus-sim: " << check.status().message() << "\n";
    return 2;
  }
  const double check_err = worstError(best, *check);
  std::string seeds_str;
  for (uint64_t s : f.seeds) seeds_str += (seeds_str.empty() ? "" : " ") + std::to_string(s);
  std::printf(
      "\ncalibrated (%s, seeds %s, check seed %llu, %d nodes, load %.2f, %lld min of arrivals)\n",
      f.setup.mix.c_str(), seeds_str.c_str(), static_cast<unsigned long long>(f.check_seed),
      o.nodes, o.load, static_cast<long long>(f.setup.arrivals_min));
  std::printf("%-15s | %8s | %9s | %10s | %12s | %8s | %6s | %8s | %6s\n", "kind", "Table II",
              "job share", "node share", "short part.", "Eagle-C", "error", "check", "error");
  for (size_t k = 0; k < n; k++) {
    const ConstraintKind& c = best[k];
    const double err = best_measured[k] / c.target_slowdown - 1;
    const double cerr = (*check)[k] / c.target_slowdown - 1;
    std::printf("%-15s | %8.2f | %9.3f | %10.4f | %12s | %8.2f | %+5.0f%% | %8.2f | %+5.0f%%\n",
                c.name.c_str(), c.target_slowdown, c.job_share, c.node_share,
                c.short_nodes >= 0        ? (std::to_string(c.short_nodes) + " nodes").c_str()
                : c.short_partition_first ? "all nodes"
                                          : "share",
                best_measured[k], 100 * err, (*check)[k], 100 * cerr);
  }
  if (!write(&*check, check_err)) {
    std::cerr << "morpheus-sim: --out: cannot write '" << f.out << "'\n";
    return 2;
  }
  const bool met = best_err <= f.tolerance && check_err <= f.tolerance;
  std::printf(
      "worst error %.1f%% over the calibration seeds, %.1f%% on the check seed (tolerance "
      "%.0f%%): %s; %d iterations, %.0f s CPU; written to %s\n",
      100 * best_err, 100 * check_err, 100 * f.tolerance, met ? "met" : "NOT met",
      std::min(it + 1, f.iterations), cpu_s, f.out.c_str());
  return met ? 0 : 1;
}

}  // namespace morpheus::sim
