// morpheus-harvest-sim: harvesting figures on a virtual time line
// (sim/harvest/harvest_sim.h).
//
//   morpheus-harvest-sim --swim FILE [--primary FILE] [--tenants N] [--mix P,C,U]
//       [--servers-per-tenant K] [--cores C] [--job-sample F] [--seed S]
//       [--blocks B] [--days D] [--duration-scale F] [--no-class-wait S]
//       [--drain S] [--weights LENGTH:P,C,U]... [--mean-util U]
//       [--cpu-kill-after S] [--primary-memory F] [--replicas N]
//       [--strategies NAME,...] [--history-fallback hold|ranked|any]
//       [--history-hold S] [--history-rise-quantile Q] [--json]
//
// Prints, per strategy (history, primary-aware, random; --strategies picks
// others, e.g. the clairvoyant bounds of harvest_sim.h), task kills, job
// completion times and harvested utilisation, then the work lost to kills
// and to throttling, the jobs Algorithm 1 found no
// class for, kills per tenant pattern and per job length; then blocks lost
// and unavailable per replica placement.
// Exit codes: 0 done, 2 bad input (one line on stderr).
#include <CLI/CLI.hpp>
#include <algorithm>
#include <array>
#include <fstream>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "harvest/harvest_selection.h"
#include "sim/harvest/harvest_cli.h"
#include "sim/harvest/harvest_sim.h"

using namespace morpheus;

namespace {

// {"name": value} for the three entries of a per-pattern or per-length array.
template <typename T>
nlohmann::json breakdown(const T (&v)[3], const std::array<const char*, 3>& names) {
  nlohmann::json out = nlohmann::json::object();
  for (size_t i = 0; i < 3; i++) out[names[i]] = v[i];
  return out;
}

int fail(const std::string& m) {
  std::cerr << "morpheus-harvest-sim: " << m << "\n";
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"morpheus-harvest-sim: history-based harvesting figures"};
  std::string swim, primary;
  sim::PrimaryGenOptions gen;
  sim::HarvestSimOptions ho;
  sim::ReplicaSimOptions ro;
  bool json = false;
  std::vector<std::string> strategy_names = {"history", "primary-aware", "random"};
  double duration_scale = 1;
  app.add_option("--swim", swim, "SWIM trace (TSV) of the batch jobs")->required();
  app.add_option("--primary", primary,
                 "Real primary-tenant series: lines 'TENANT U0 U1 ...' (fractions, one per 5 min, "
                 ">= 2 days); default: generated");
  app.add_option("--tenants", gen.tenants, "Generated primary tenants");
  std::string mix = "1,1,1";
  app.add_option("--mix", mix,
                 "Relative shares of periodic, constant and unpredictable generated tenants, "
                 "P,C,U (default 1,1,1)");
  app.add_option("--servers-per-tenant", ho.servers_per_tenant, "Servers per primary tenant");
  app.add_option("--cores", ho.cores, "Cores per server");
  app.add_option("--job-sample", ho.job_sample, "Share of SWIM jobs simulated");
  app.add_option("--seed", gen.seed, "Seed of the series, job sample and draws");
  app.add_option("--blocks", ro.blocks, "Blocks placed in the storage simulation");
  app.add_option("--days", ro.days, "Days of reimaging events in the storage simulation");
  app.add_option("--duration-scale", duration_scale,
                 "Multiplies SWIM task durations (SWIM-derived tasks last seconds; production "
                 "batch tasks on harvested machines last minutes)")
      ->check(CLI::PositiveNumber);
  double no_class_wait_s = 0;
  app.add_option("--no-class-wait", no_class_wait_s,
                 "History placement: seconds a job no class fits is held (selection retried "
                 "every tick) before it runs unconstrained; 0 = at once (default)")
      ->check(CLI::NonNegativeNumber);
  double drain_s = 0;
  app.add_option("--drain", drain_s,
                 "Seconds the jobs submitted on the evaluation day may run on after it (the "
                 "primaries repeat that day), so JCTs cover the jobs a placement slowed past "
                 "midnight; 0 = stop at the day's end, unfinished jobs left out (default)")
      ->check(CLI::Range(0.0, 7 * 86400.0));
  std::vector<std::string> weights;
  app.add_option("--weights", weights,
                 "Algorithm 1's ranking weights of a job length for periodic, constant and "
                 "unpredictable classes, e.g. short:2,3,1 (repeatable; defaults: short:2,1,3 "
                 "medium:3,2,1 long:2,3,1)");
  app.add_option("--mean-util", gen.mean_util,
                 "Generated tenants: mean primary CPU share their levels are drawn around "
                 "(0 = fixed ranges, default)")
      ->check(CLI::Range(0.0, 0.95));
  double cpu_kill_after_s = 0;
  app.add_option("--cpu-kill-after", cpu_kill_after_s,
                 "The NMs' nm.harvest.cpu-kill-after in seconds: how long secondary tasks run "
                 "CPU-throttled before the newest are killed; 0 = killed at once (default)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--primary-memory", ho.primary_memory,
                 "Primary tenant's memory share as a multiple of its CPU share (a memory overlap "
                 "kills at once; default 1)")
      ->check(CLI::Range(0.0, 1.0));
  app.add_option("--replicas", ro.replicas, "Replicas per block in the storage simulation")
      ->check(CLI::Range(1, 16));
  app.add_option("--strategies", strategy_names,
                 "Task placements run: history, primary-aware, random, clairvoyant-best-fit, "
                 "clairvoyant-most-room, clairvoyant-wait")
      ->delimiter(',');
  sim::HistoryCli history_cli;
  sim::addHistoryOptions(app, &history_cli, &ho);
  app.add_flag("--json", json, "JSON output");
  CLI11_PARSE(app, argc, argv);
  if (Status st = sim::applyHistoryOptions(history_cli, &ho); !st.isOk())
    return fail("--" + st.message());
  ho.seed = ro.seed = gen.seed;
  ho.no_class_wait = Millis(static_cast<int64_t>(no_class_wait_s * 1000));
  ho.drain = Millis(static_cast<int64_t>(drain_s * 1000));
  ho.cpu_kill_after = Millis(static_cast<int64_t>(cpu_kill_after_s * 1000));
  for (const auto& w : weights) {
    if (Status st = sim::parseRankingWeights(w, ho.selection); !st.isOk())
      return fail("--" + st.message());
  }
  ro.servers_per_tenant = ho.servers_per_tenant;
  std::vector<sim::PlacementStrategy> strategies;
  for (const auto& name : strategy_names) {
    auto s = sim::parsePlacementStrategy(name);
    if (!s.isOk())
      return fail("--strategies: '" + name +
                  "' is not one of history, primary-aware, random, clairvoyant-best-fit, "
                  "clairvoyant-most-room, clairvoyant-wait");
    strategies.push_back(*s);
  }
  if (strategies.empty()) return fail("--strategies: at least one value");

  std::vector<sim::PrimaryTrace> traces;
  if (!primary.empty()) {
    std::ifstream in(primary);
    if (!in) return fail("--primary: cannot read '" + primary + "'");
    std::stringstream ss;
    ss << in.rdbuf();
    auto t = sim::parsePrimaryTraces(ss.str());
    if (!t.isOk()) return fail("--primary: " + t.status().message());
    traces = std::move(t).value();
  } else {
    if (gen.tenants < 3) return fail("--tenants: must be >= 3");
    auto m = sim::parseClassMix(mix);
    if (!m.isOk()) return fail("--" + m.status().message());
    gen.mix = *m;
    auto t = sim::generatePrimaryTraces(gen);
    if (!t.isOk()) return fail("--" + t.status().message());
    traces = std::move(t).value();
  }
  // Disks twice as large as the blocks need, so placement is never short of space.
  const int64_t servers = static_cast<int64_t>(traces.size()) * ro.servers_per_tenant;
  ro.free_blocks_per_server = std::max<int64_t>(1, 2 * ro.blocks * ro.replicas / servers);
  auto jobs = sim::loadSwimTrace(swim, sim::SwimRates{});
  if (!jobs.isOk()) return fail("--swim: " + jobs.status().message());
  for (auto& j : *jobs) {
    j.map_task_duration =
        Millis(static_cast<int64_t>(j.map_task_duration.count() * duration_scale));
    j.reduce_task_duration =
        Millis(static_cast<int64_t>(j.reduce_task_duration.count() * duration_scale));
  }

  nlohmann::json out = {{"seed", gen.seed},
                        {"tenants", traces.size()},
                        {"placement", nlohmann::json::array()},
                        {"replicas", nlohmann::json::array()}};
  const std::array<const char*, 3> patterns = {rm::patternName(rm::UtilPattern::kPeriodic),
                                               rm::patternName(rm::UtilPattern::kConstant),
                                               rm::patternName(rm::UtilPattern::kUnpredictable)};
  const std::array<const char*, 3> lengths = {rm::jobLengthName(rm::JobLength::kShort),
                                              rm::jobLengthName(rm::JobLength::kMedium),
                                              rm::jobLengthName(rm::JobLength::kLong)};
  const std::array<const char*, 3> placements = {"in-class", "outside-classes", "no-class"};
  for (auto s : strategies) {
    auto r = sim::runHarvestSim(traces, *jobs, s, ho);
    if (!r.isOk()) return fail(r.status().message());
    out["placement"].push_back(
        {{"strategy", sim::strategyName(s)},
         {"jobs", r->jobs},
         {"jobs_finished", r->jobs_finished},
         {"tasks_run", r->tasks_run},
         {"task_kills", r->task_kills},
         {"mean_jct_s", r->mean_jct_s},
         {"p50_jct_s", r->p50_jct_s},
         {"p95_jct_s", r->p95_jct_s},
         {"harvested_util", r->harvested_util},
         {"primary_util", r->primary_util},
         {"lost_core_s", r->lost_core_s},
         {"memory_kills", r->memory_kills},
         {"throttled_task_s", r->throttled_task_s},
         {"throttle_lost_core_s", r->throttle_lost_core_s},
         {"throttled_task_s_by_pattern", breakdown(r->throttled_task_s_by_pattern, patterns)},
         {"jobs_without_class", r->jobs_without_class},
         {"tasks_outside_class", r->tasks_outside_class},
         {"tenants_mislabelled", r->tenants_mislabelled},
         {"held_task_s", r->held_task_s},
         {"tasks_placed_after_hold", r->tasks_placed_after_hold},
         {"tasks_by_placement", breakdown(r->tasks_by_placement, placements)},
         {"throttled_task_s_by_placement", breakdown(r->throttled_task_s_by_placement, placements)},
         {"throttled_task_s_by_length", breakdown(r->throttled_task_s_by_length, lengths)},
         {"kills_by_pattern", breakdown(r->kills_by_pattern, patterns)},
         {"kills_by_length", breakdown(r->kills_by_length, lengths)},
         {"jobs_by_length", breakdown(r->jobs_by_length, lengths)},
         {"mean_jct_by_length_s", breakdown(r->mean_jct_by_length_s, lengths)},
         {"floor_mean_jct_s", r->floor_mean_jct_s},
         {"floor_p95_jct_s", r->floor_p95_jct_s},
         {"floor_mean_jct_by_length_s", breakdown(r->floor_mean_jct_by_length_s, lengths)}});
  }
  for (auto s : {sim::ReplicaStrategy::kAlgorithm2, sim::ReplicaStrategy::kRandom,
                 sim::ReplicaStrategy::kBestFirst}) {
    auto r = sim::runReplicaSim(traces, s, ro);
    if (!r.isOk()) return fail(r.status().message());
    out["replicas"].push_back({{"strategy", sim::replicaStrategyName(s)},
                               {"blocks", r->blocks},
                               {"lost", r->lost},
                               {"unavailable", r->unavailable}});
  }
  if (json) {
    std::cout << out.dump(2) << "\n";
    return 0;
  }
  std::printf("seed %llu, %zu primary tenants\n", static_cast<unsigned long long>(gen.seed),
              traces.size());
  std::printf("%-22s %6s %8s %8s %8s %10s %10s %10s %9s\n", "placement", "jobs", "finished",
              "tasks", "kills", "mean JCT s", "p50 JCT s", "p95 JCT s", "harvested");
  for (const auto& p : out["placement"]) {
    std::printf("%-22s %6lld %8lld %8lld %8lld %10.1f %10.1f %10.1f %8.1f%%\n",
                p["strategy"].get<std::string>().c_str(), p["jobs"].get<long long>(),
                p["jobs_finished"].get<long long>(), p["tasks_run"].get<long long>(),
                p["task_kills"].get<long long>(), p["mean_jct_s"].get<double>(),
                p["p50_jct_s"].get<double>(), p["p95_jct_s"].get<double>(),
                100 * p["harvested_util"].get<double>());
  }
  for (const auto& p : out["placement"]) {
    std::printf(
        "%-22s lost %.1f core-h; throttled %.1f task-h (%.1f core-h slower); memory kills %lld; "
        "jobs without class %lld; tasks outside their classes %lld; tenants misclassified %lld; "
        "held %.1f task-h, %lld tasks placed after the hold; kills on",
        p["strategy"].get<std::string>().c_str(), p["lost_core_s"].get<double>() / 3600,
        p["throttled_task_s"].get<double>() / 3600, p["throttle_lost_core_s"].get<double>() / 3600,
        p["memory_kills"].get<long long>(), p["jobs_without_class"].get<long long>(),
        p["tasks_outside_class"].get<long long>(), p["tenants_mislabelled"].get<long long>(),
        p["held_task_s"].get<double>() / 3600, p["tasks_placed_after_hold"].get<long long>());
    for (const auto& [k, v] : p["kills_by_pattern"].items())
      std::printf(" %s %lld", k.c_str(), v.get<long long>());
    std::printf("; throttled task-h on");
    for (const auto& [k, v] : p["throttled_task_s_by_pattern"].items())
      std::printf(" %s %.0f", k.c_str(), v.get<double>() / 3600);
    std::printf("; per job length (jobs / kills / mean JCT s / throttled task-h):");
    for (const char* l : lengths) {
      std::printf(" %s %lld/%lld/%.0f/%.0f", l, p["jobs_by_length"][l].get<long long>(),
                  p["kills_by_length"][l].get<long long>(),
                  p["mean_jct_by_length_s"][l].get<double>(),
                  p["throttled_task_s_by_length"][l].get<double>() / 3600);
    }
    if (p["strategy"] == "history") {
      std::printf("; tasks placed (throttled task-h)");
      for (const char* k : placements) {
        std::printf(" %s %lld (%.0f)", k, p["tasks_by_placement"][k].get<long long>(),
                    p["throttled_task_s_by_placement"][k].get<double>() / 3600);
      }
    }
    std::printf("\n");
  }
  for (const auto& p : out["placement"]) {
    // What no placement can beat: the same finished jobs had none waited or
    // been killed (HarvestSimResult::floor_*).
    const double fm = p["floor_mean_jct_s"].get<double>(), fp = p["floor_p95_jct_s"].get<double>(),
                 fl = p["floor_mean_jct_by_length_s"]["long"].get<double>();
    std::printf(
        "%-22s floor (no wait, no kill) mean %.1f s, p95 %.1f s, long jobs %.0f s: JCT over floor "
        "mean %.2fx, p95 %.2fx, long %.2fx\n",
        p["strategy"].get<std::string>().c_str(), fm, fp, fl,
        p["mean_jct_s"].get<double>() / std::max(fm, 1e-9),
        p["p95_jct_s"].get<double>() / std::max(fp, 1e-9),
        p["mean_jct_by_length_s"]["long"].get<double>() / std::max(fl, 1e-9));
  }
  std::printf("%-22s %8s %8s %12s\n", "replicas", "blocks", "lost", "unavailable");
  for (const auto& p : out["replicas"]) {
    std::printf("%-22s %8lld %8lld %11.4f%%\n", p["strategy"].get<std::string>().c_str(),
                p["blocks"].get<long long>(), p["lost"].get<long long>(),
                100 * p["unavailable"].get<double>());
  }
  return 0;
}
