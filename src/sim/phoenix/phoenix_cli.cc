#include "sim/phoenix/phoenix_cli.h"

#include <cstdio>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>

#include "scheduler/policies/phoenix_policy.h"
#include "scheduler/policies/policy_factory.h"
#include "sim/phoenix/eagle_sim.h"

namespace morpheus::sim {

namespace {

Result<std::shared_ptr<const sched::QueueOrderingPolicy>> policyByName(const std::string& name) {
  if (name == "phoenix-no-crv") {
    return std::shared_ptr<const sched::QueueOrderingPolicy>(
        std::make_shared<sched::PhoenixNoCrvOrderingPolicy>());
  }
  auto p = sched::makeOrderingPolicy(name, "--policies");
  if (!p.isOk()) {
    return invalidArgument("--policies", "unknown policy '" + name +
                                             "' (fifo, drf, carbyne, phoenix, phoenix-no-crv, "
                                             "eagle-c, floor)");
  }
  return p;
}

// One run: the Eagle-C baseline (eagle_sim.h) or a policy of the scheduler core.
Result<PhoenixSimResult> runOne(const std::string& name, const PhoenixCliFlags& f) {
  if (name == "eagle-c") return runEagleSim(f.opts, f.eagle);
  if (name == "floor") return runPhoenixFloor(f.opts);
  MORPHEUS_ASSIGN_OR_RETURN(auto policy, policyByName(name));
  return runPhoenixSim(f.opts, policy);
}

nlohmann::json toJson(const Percentiles& p) {
  return {
      {"count", p.count}, {"p50_s", p.p50}, {"p90_s", p.p90}, {"p99_s", p.p99}, {"mean_s", p.mean}};
}

}  // namespace

CLI::App* addPhoenixCommand(CLI::App& app, PhoenixCliFlags& f) {
  auto* c = app.add_subcommand(
      "phoenix", "Constraint-aware ordering (Phoenix) vs FIFO/DRF on a heterogeneous cluster");
  c->add_option("--nodes", f.opts.nodes, "Nodes")->capture_default_str();
  c->add_option("--node-size", f.node_size, "Per node")->capture_default_str();
  c->add_option("--load", f.opts.load, "Offered vcore load (share of the cluster)")
      ->capture_default_str();
  c->add_option("--arrivals-min", f.arrivals_min, "Minutes of job arrivals")->capture_default_str();
  c->add_option("--short-fraction", f.opts.short_fraction, "Share of short jobs")
      ->capture_default_str();
  c->add_option("--isa-rate", f.opts.isa_rate, "Share of short jobs asking isa in {aarch64}")
      ->capture_default_str();
  c->add_option("--cores-rate", f.opts.cores_rate, "... cores >= 32")->capture_default_str();
  c->add_option("--network-rate", f.opts.network_rate, "... network_gbps >= 25")
      ->capture_default_str();
  c->add_option("--kernel-rate", f.opts.kernel_rate, "... kernel >= 5.10")->capture_default_str();
  c->add_option("--seeds", f.seeds, "Workload seeds")->capture_default_str();
  c->add_option("--eagle-short-partition", f.eagle.short_partition,
                "eagle-c: share of nodes reserved for short jobs")
      ->capture_default_str();
  c->add_option("--eagle-probe-ratio", f.eagle.probe_ratio, "eagle-c: probes per short task")
      ->capture_default_str();
  c->add_option("--policies", f.policies,
                "fifo, drf, phoenix-no-crv, phoenix, eagle-c; floor: no job waits (the bound under "
                "every scheduler)")
      ->capture_default_str();
  c->add_flag("--json", f.json, "Machine-readable results");
  return c;
}

int runPhoenixCommand(PhoenixCliFlags f) {
  auto size = Resource::parse(f.node_size, "--node-size");
  if (!size.isOk()) {
    std::cerr << "morpheus-sim: " << size.status().message() << "\n";
    return 2;
  }
  f.opts.node_size = *size;
  f.opts.arrivals = Millis(f.arrivals_min * 60 * 1000);
  for (const auto& name : f.policies) {  // before any output: bad input leaves one line
    if (name == "eagle-c" || name == "floor") continue;
    if (auto p = policyByName(name); !p.isOk()) {
      std::cerr << "morpheus-sim: " << p.status().message() << "\n";
      return 2;
    }
  }
  nlohmann::json all = nlohmann::json::array();
  if (!f.json) {
    std::printf("%-15s %4s %5s | %-23s | %-23s | %-23s\n", "policy", "seed", "jobs",
                "short p50/p90/p99 s", "short constrained p50/p90/p99", "long p50/p90/mean s");
  }
  for (uint64_t seed : f.seeds) {
    for (const auto& name : f.policies) {
      f.opts.seed = seed;
      auto r = runOne(name, f);
      if (!r.isOk()) {
        std::cerr << "morpheus-sim: " << r.status().message() << "\n";
        return 2;
      }
      const auto &s = r->short_jobs, &c = r->short_constrained, &l = r->long_unconstrained;
      if (f.json) {
        all.push_back({{"policy", name},
                       {"seed", seed},
                       {"jobs", r->jobs},
                       {"rejected", r->rejected},
                       {"short", toJson(s)},
                       {"short_constrained", toJson(c)},
                       {"long_unconstrained", toJson(l)},
                       {"makespan_s", r->makespan_s},
                       {"wall_s", r->wall_s}});
      } else {
        std::printf(
            "%-15s %4llu %5lld | %6.0f %7.0f %8.0f | %6.0f %7.0f %8.0f | %6.0f %7.0f %8.0f\n",
            name.c_str(), static_cast<unsigned long long>(seed), static_cast<long long>(r->jobs),
            s.p50, s.p90, s.p99, c.p50, c.p90, c.p99, l.p50, l.p90, l.mean);
      }
    }
  }
  if (f.json) std::cout << all.dump(2) << "\n";
  return 0;
}

}  // namespace morpheus::sim
