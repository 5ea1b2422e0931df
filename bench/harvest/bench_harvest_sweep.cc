// bench_harvest_sweep: the harvesting evaluation as a sweep over the primary
// tenants' mean CPU utilisation (Zhang et al., OSDI'16 §6): at every point
// and seed, the SWIM day under history-based placement (Algorithm 1),
// primary-aware placement without history (the paper's baseline: YARN told
// each primary's current usage) and random placement, with the NMs'
// throttle-then-kill policy (sim/harvest/harvest_sim.h), and the floor (the
// same jobs with no wait, no kill, no throttle); then blocks lost and
// unavailable under reimaging with 3 and 4 replicas, Algorithm 2 against
// random placement. Prints progress on stderr, tables on stdout, and ends
// with one JSON line (figures per point, targets, met or not). Block losses
// cluster by seed (one seed's reimage times decide which tenant sets lose
// blocks), so loss ratios come with a 95% interval from resampling seeds;
// --storage-only runs the storage side alone, e.g. over many seeds;
// --no-storage the jobs alone. --strategies picks the task placements
// (default history, primary-aware, random; the clairvoyant bounds of
// sim/harvest/harvest_sim.h on request); the targets need history and
// primary-aware.
//   bench_harvest_sweep --swim data/swim/swim-fb2009-24h.tsv
//   bench_harvest_sweep --swim FILE --utils 0.8 --no-storage --strategies
//     clairvoyant-best-fit,clairvoyant-most-room
//   bench_harvest_sweep --swim FILE --utils 0.2,0.5,0.8 --seeds 1 --tenants 30
//   bench_harvest_sweep --swim FILE --storage-only --seeds $(seq -s, 1 30) --blocks 20000
// Exit codes: 0 done (targets met or not), 2 bad input.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>

#include "report/bench_report.h"
#include "sim/harvest/harvest_cli.h"
#include "sim/harvest/harvest_sim.h"

using namespace morpheus;

namespace {

double since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

double mean(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return v.empty() ? 0 : s / static_cast<double>(v.size());
}

constexpr size_t kLong = static_cast<size_t>(rm::JobLength::kLong);

std::string ratioText(double x) {
  if (!std::isfinite(x)) return "inf";
  char b[32];
  std::snprintf(b, sizeof b, "%.0fx", x);
  return b;
}

}  // namespace

int main(int argc, char** argv) {
  bench::BenchReport report("harvest_sweep", &argc, argv);
  CLI::App app{"bench_harvest_sweep: harvesting over a primary-utilisation sweep"};
  std::string swim;
  std::vector<double> utils = {0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8};
  std::vector<uint64_t> seeds = {1, 2, 3};
  std::string mix_spec = "1,1,1";
  bool storage_only = false, no_storage = false;
  std::vector<std::string> strategy_names = {"history", "primary-aware", "random"};
  int tenants = 100;
  sim::HarvestSimOptions ho;
  ho.servers_per_tenant = 30;
  ho.job_sample = 1.0;
  ho.cpu_kill_after = Millis(24 * 3600 * 1000);
  ho.primary_memory = 0.5;
  ho.drain = Millis(2 * 86400 * 1000);
  double duration_scale = 300, cpu_kill_after_s = 86400, drain_s = 2 * 86400;
  int64_t blocks = 50000;
  app.add_option("--swim", swim, "SWIM trace (TSV) of the batch jobs")->required();
  app.add_option("--utils", utils, "Mean primary CPU shares of the sweep")->delimiter(',');
  app.add_option("--seeds", seeds, "Seeds (series, job draws, reimages)")->delimiter(',');
  app.add_option("--tenants", tenants, "Primary tenants")->check(CLI::Range(3, 100000));
  app.add_option("--servers-per-tenant", ho.servers_per_tenant, "Servers per tenant")
      ->check(CLI::Range(1, 100000));
  app.add_option("--mix", mix_spec,
                 "Relative shares of periodic, constant and unpredictable tenants, P,C,U");
  app.add_flag("--storage-only", storage_only,
               "Only the storage side (blocks lost and unavailable), no jobs");
  app.add_flag("--no-storage", no_storage, "Only the jobs, no storage side");
  app.add_option("--strategies", strategy_names,
                 "Task placements run: history, primary-aware, random, clairvoyant-best-fit, "
                 "clairvoyant-most-room, clairvoyant-wait")
      ->delimiter(',');
  app.add_option("--job-sample", ho.job_sample, "Share of SWIM jobs simulated")
      ->check(CLI::Range(0.0, 1.0));
  app.add_option("--duration-scale", duration_scale, "Multiplies SWIM task durations")
      ->check(CLI::PositiveNumber);
  app.add_option("--cpu-kill-after", cpu_kill_after_s,
                 "nm.harvest.cpu-kill-after of the NMs, seconds (default: 1 day, i.e. CPU "
                 "overlap is only throttled)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--primary-memory", ho.primary_memory,
                 "Primary memory share as a multiple of its CPU share")
      ->check(CLI::Range(0.0, 1.0));
  app.add_option("--drain", drain_s, "Seconds jobs may run on after the day")
      ->check(CLI::Range(0.0, 7 * 86400.0));
  app.add_option("--blocks", blocks, "Blocks per storage run")->check(CLI::Range(1, 10000000));
  sim::HistoryCli history_cli;
  sim::addHistoryOptions(app, &history_cli, &ho);
  CLI11_PARSE(app, argc, argv);
  if (Status st = sim::applyHistoryOptions(history_cli, &ho); !st.isOk()) {
    std::cerr << "bench_harvest_sweep: --" << st.message() << "\n";
    return 2;
  }
  if (utils.empty() || seeds.empty()) {
    std::cerr << "bench_harvest_sweep: " << (utils.empty() ? "--utils" : "--seeds")
              << ": at least one value\n";
    return 2;
  }
  for (double u : utils) {
    if (!(u > 0 && u <= 0.95)) {
      std::cerr << "bench_harvest_sweep: --utils: " << u << " is not in (0, 0.95]\n";
      return 2;
    }
  }
  if (storage_only && no_storage) {
    std::cerr << "bench_harvest_sweep: --no-storage: cannot be combined with --storage-only\n";
    return 2;
  }
  std::vector<sim::PlacementStrategy> strategies;
  for (const auto& name : strategy_names) {
    auto s = sim::parsePlacementStrategy(name);
    if (!s.isOk()) {
      std::cerr << "bench_harvest_sweep: --strategies: '" << name << "' is not one of history, "
                << "primary-aware, random, clairvoyant-best-fit, clairvoyant-most-room, "
                   "clairvoyant-wait\n";
      return 2;
    }
    if (std::find(strategies.begin(), strategies.end(), *s) != strategies.end()) {
      std::cerr << "bench_harvest_sweep: --strategies: '" << name << "' is given twice\n";
      return 2;
    }
    strategies.push_back(*s);
  }
  if (strategies.empty() && !storage_only) {
    std::cerr << "bench_harvest_sweep: --strategies: at least one value\n";
    return 2;
  }
  auto mix = sim::parseClassMix(mix_spec);
  if (!mix.isOk()) {
    std::cerr << "bench_harvest_sweep: --" << mix.status().message() << "\n";
    return 2;
  }
  ho.cpu_kill_after = Millis(static_cast<int64_t>(cpu_kill_after_s * 1000));
  ho.drain = Millis(static_cast<int64_t>(drain_s * 1000));
  auto jobs = sim::loadSwimTrace(swim, sim::SwimRates{});
  if (!jobs.isOk()) {
    std::cerr << "bench_harvest_sweep: --swim: " << jobs.status().message() << "\n";
    return 2;
  }
  for (auto& j : *jobs) {
    j.map_task_duration = Millis(
        static_cast<int64_t>(static_cast<double>(j.map_task_duration.count()) * duration_scale));
    j.reduce_task_duration = Millis(
        static_cast<int64_t>(static_cast<double>(j.reduce_task_duration.count()) * duration_scale));
  }
  const auto started = std::chrono::steady_clock::now();
  nlohmann::json points = nlohmann::json::array();
  const size_t runs = utils.size() * seeds.size();
  size_t done = 0;
  std::printf(
      "%d tenants x %d servers, 16 cores, class shares %g,%g,%g (periodic,constant,"
      "unpredictable), SWIM x%.0f (sample %.2f), cpu-kill-after %.0f s, primary memory %.2f x "
      "CPU, history fallback %s (hold %.0f s, rise quantile %.2f)%s\n",
      tenants, ho.servers_per_tenant, (*mix)[0], (*mix)[1], (*mix)[2], duration_scale,
      ho.job_sample, cpu_kill_after_s, ho.primary_memory,
      sim::historyFallbackName(ho.history_fallback), history_cli.hold_s, ho.history_rise_quantile,
      storage_only ? ", storage only" : (no_storage ? ", no storage" : ""));
  for (double u : utils) {
    // Per strategy, per seed.
    std::map<std::string, std::vector<nlohmann::json>> per;
    for (uint64_t seed : seeds) {
      sim::PrimaryGenOptions gen;
      gen.tenants = tenants;
      gen.mix = *mix;
      gen.seed = seed;
      gen.mean_util = u;
      auto traces = sim::generatePrimaryTraces(gen);
      if (!traces.isOk()) {
        std::cerr << "bench_harvest_sweep: " << traces.status().message() << "\n";
        return 2;
      }
      ho.seed = seed;
      for (auto s : strategies) {
        if (storage_only) break;
        auto r = sim::runHarvestSim(*traces, *jobs, s, ho);
        if (!r.isOk()) {
          std::cerr << "bench_harvest_sweep: " << r.status().message() << "\n";
          return 2;
        }
        per[sim::strategyName(s)].push_back(
            {{"seed", seed},
             {"primary_util", r->primary_util},
             {"harvested_util", r->harvested_util},
             {"jobs", r->jobs},
             {"jobs_finished", r->jobs_finished},
             {"mean_jct_s", r->mean_jct_s},
             {"p95_jct_s", r->p95_jct_s},
             {"long_mean_jct_s", r->mean_jct_by_length_s[kLong]},
             {"kills", r->task_kills},
             {"memory_kills", r->memory_kills},
             {"lost_core_h", r->lost_core_s / 3600},
             {"throttled_task_h", r->throttled_task_s / 3600},
             {"throttle_lost_core_h", r->throttle_lost_core_s / 3600},
             {"jobs_without_class", r->jobs_without_class},
             {"tasks_outside_class", r->tasks_outside_class},
             {"tenants_mislabelled", r->tenants_mislabelled},
             {"held_task_h", r->held_task_s / 3600},
             {"tasks_placed_after_hold", r->tasks_placed_after_hold},
             {"tasks_outside_classes_throttled_task_h", r->throttled_task_s_by_placement[1] / 3600},
             {"tasks_without_class_throttled_task_h", r->throttled_task_s_by_placement[2] / 3600},
             {"long_throttled_task_h", r->throttled_task_s_by_length[kLong] / 3600},
             {"floor_mean_jct_s", r->floor_mean_jct_s},
             {"floor_p95_jct_s", r->floor_p95_jct_s},
             {"floor_long_mean_jct_s", r->floor_mean_jct_by_length_s[kLong]}});
      }
      for (int replicas : {3, 4}) {
        if (no_storage) break;
        sim::ReplicaSimOptions ro;
        ro.servers_per_tenant = ho.servers_per_tenant;
        ro.blocks = blocks;
        ro.replicas = replicas;
        ro.seed = seed;
        const int64_t servers = static_cast<int64_t>(tenants) * ho.servers_per_tenant;
        ro.free_blocks_per_server = std::max<int64_t>(1, 2 * blocks * replicas / servers);
        for (auto s : {sim::ReplicaStrategy::kAlgorithm2, sim::ReplicaStrategy::kRandom}) {
          auto r = sim::runReplicaSim(*traces, s, ro);
          if (!r.isOk()) {
            std::cerr << "bench_harvest_sweep: " << r.status().message() << "\n";
            return 2;
          }
          nlohmann::json row = {{"seed", seed},
                                {"lost", r->lost},
                                {"lost_1_tenant", r->lost_by_tenants[1]},
                                {"lost_2_tenants", r->lost_by_tenants[2]},
                                {"lost_3_tenants", r->lost_by_tenants[3]},
                                {"lost_4_tenants", r->lost_by_tenants[4]},
                                {"unavailable", r->unavailable}};
          // Where the fourth replica went: by its tenant's reimage rate.
          for (size_t i = 0; i < r->fourth_by_rate.size(); i++) {
            row["placed_fourth_rate" + std::to_string(i)] = r->fourth_by_rate[i];
            row["lost_fourth_rate" + std::to_string(i)] = r->lost_fourth_by_rate[i];
          }
          per[std::string("replicas") + std::to_string(replicas) + "-" +
              sim::replicaStrategyName(s)]
              .push_back(row);
        }
      }
      done++;
      std::fprintf(stderr, "[%zu/%zu] util %.2f seed %llu done, %.0f s elapsed\n", done, runs, u,
                   static_cast<unsigned long long>(seed), since(started));
    }
    // Seed means.
    nlohmann::json point = {{"target_util", u}};
    for (auto& [name, rows] : per) {
      nlohmann::json m = nlohmann::json::object();
      for (const auto& [k, v] : rows.front().items()) {
        if (k == "seed") continue;
        std::vector<double> xs;
        for (const auto& row : rows) xs.push_back(row[k].get<double>());
        m[k] = mean(xs);
        if (k.rfind("lost", 0) == 0 && name.rfind("replicas", 0) == 0)
          m[k + "_sum"] = mean(xs) * static_cast<double>(xs.size());
      }
      m["seeds"] = rows;
      point[name] = m;
    }
    points.push_back(point);
  }
  const double wall = since(started);

  // Tables: per point, the floor, then one row per strategy run.
  nlohmann::json gains = nlohmann::json::array();
  double gain_top = 0, worst_floor = 0, min_kill_cut = 0, min_throttle_cut = 0;
  bool grows = true;
  std::vector<std::string> names;
  for (auto s : strategies) names.push_back(sim::strategyName(s));
  const bool with_pa = std::find(names.begin(), names.end(), "primary-aware") != names.end();
  const bool targets =
      !storage_only && with_pa && std::find(names.begin(), names.end(), "history") != names.end();
  if (!storage_only) {
    std::printf(
        "\nJCT (mean of %zu seeds; s): mean / p95 / long jobs' mean | kills (memory kills) / "
        "throttled task-h / work lost to kills core-h | mean over the floor's, primary-aware's "
        "mean over this one's, throttled task-h against primary-aware's\n",
        seeds.size());
    std::printf("%5s %6s %-22s | %7s %7s %7s | %7s %7s %8s %7s | %6s %6s %7s\n", "util", "real",
                "strategy", "mean", "p95", "long", "kills", "(mem)", "thr-h", "lost-h", "x/fl",
                "PA/x", "thr/PA");
    for (const auto& p : points) {
      const auto& first = p[names.front()];
      const double f = first["floor_mean_jct_s"].get<double>();
      std::printf("%5.2f %5.1f%% %-22s | %7.0f %7.0f %7.0f |\n", p["target_util"].get<double>(),
                  100 * first["primary_util"].get<double>(), "floor", f,
                  first["floor_p95_jct_s"].get<double>(),
                  first["floor_long_mean_jct_s"].get<double>());
      for (const auto& n : names) {
        const auto& x = p[n];
        char vs[48] = "     -      -       -";
        if (with_pa) {
          const auto& pa = p["primary-aware"];
          const double pt = pa["throttled_task_h"].get<double>();
          std::snprintf(
              vs, sizeof vs, "%5.2fx %+6.0f%%",
              pa["mean_jct_s"].get<double>() / std::max(1e-9, x["mean_jct_s"].get<double>()),
              pt > 0 ? 100 * (x["throttled_task_h"].get<double>() / pt - 1) : 0.0);
        }
        std::printf("%5s %6s %-22s | %7.0f %7.0f %7.0f | %7.0f %7.0f %8.0f %7.0f | %5.2fx %s\n", "",
                    "", n.c_str(), x["mean_jct_s"].get<double>(), x["p95_jct_s"].get<double>(),
                    x["long_mean_jct_s"].get<double>(), x["kills"].get<double>(),
                    x["memory_kills"].get<double>(), x["throttled_task_h"].get<double>(),
                    x["lost_core_h"].get<double>(),
                    x["mean_jct_s"].get<double>() / std::max(1e-9, f), vs);
      }
    }
  }
  if (targets) {
    // Targets (OSDI'16: "up to 90%" better JCT at the sweep's end).
    const auto& top = points.back();
    gain_top = top["primary-aware"]["mean_jct_s"].get<double>() /
               std::max(1e-9, top["history"]["mean_jct_s"].get<double>());
    double prev = 0;
    for (const auto& p : points) {
      const double g = p["primary-aware"]["mean_jct_s"].get<double>() /
                       std::max(1e-9, p["history"]["mean_jct_s"].get<double>());
      gains.push_back(g);
      if (g < prev - 0.02) grows = false;
      prev = std::max(prev, g);
      worst_floor =
          std::max(worst_floor, p["history"]["mean_jct_s"].get<double>() /
                                    std::max(1e-9, p["history"]["floor_mean_jct_s"].get<double>()));
    }
    const double pk = top["primary-aware"]["kills"].get<double>(),
                 hk = top["history"]["kills"].get<double>();
    const double pt = top["primary-aware"]["throttled_task_h"].get<double>(),
                 ht = top["history"]["throttled_task_h"].get<double>();
    min_kill_cut = pk > 0 ? 1 - hk / pk : 0;
    min_throttle_cut = pt > 0 ? 1 - ht / pt : 0;
  }

  // Storage: counts summed over the seeds; random / Algorithm 2 with its
  // 95% interval over seed resamples.
  if (!no_storage) {
    std::printf(
        "\nStorage (%lld blocks x %zu seeds): blocks lost (sum over seeds) / mean unavailable "
        "share of time\n",
        static_cast<long long>(blocks), seeds.size());
    std::printf("%5s | %-19s | %-19s | %-26s | %-25s | %-19s | %-19s\n", "util",
                "3 replicas: Alg. 2", "random", "random/Alg. 2 (95% seeds)",
                "random lost on 1/2/3 ten.", "4 replicas: Alg. 2", "random");
  }
  std::string loss_verdict = "met";
  nlohmann::json loss_points = nlohmann::json::array();
  int64_t a2_lost4_all = 0;
  for (const auto& p : no_storage ? nlohmann::json::array() : points) {
    auto cell = [&](const std::string& s) {
      char b[64];
      std::snprintf(b, sizeof b, "%6.0f %10.5f%%", p[s]["lost_sum"].get<double>(),
                    100 * p[s]["unavailable"].get<double>());
      return std::string(b);
    };
    std::vector<double> a2, rnd;
    for (const auto& row : p["replicas3-algorithm2"]["seeds"])
      a2.push_back(row["lost"].get<double>());
    for (const auto& row : p["replicas3-random"]["seeds"]) rnd.push_back(row["lost"].get<double>());
    const double sa = p["replicas3-algorithm2"]["lost_sum"], sr = p["replicas3-random"]["lost_sum"];
    const double ratio = sa > 0 ? sr / sa : std::numeric_limits<double>::infinity();
    // No Algorithm 2 loss at all: every resample's ratio is infinite, which
    // says nothing about how large the ratio is; its lower end is then random's
    // count over 3, the one-sided 95% Poisson bound of a zero count.
    const auto [lo, hi] = sa > 0
                              ? sim::seedRatioInterval(rnd, a2).value()
                              : std::make_pair(sr / 3.0, std::numeric_limits<double>::infinity());
    const char* verdict = lo >= 100 ? "met" : hi < 100 ? "not met" : "unresolved";
    if (std::string(verdict) == "not met" ||
        (std::string(verdict) == "unresolved" && loss_verdict == "met"))
      loss_verdict = verdict;
    a2_lost4_all += static_cast<int64_t>(p["replicas4-algorithm2"]["lost_sum"].get<double>());
    char rr[64], by[64];
    std::snprintf(rr, sizeof rr, "%s (%s-%s) %s", ratioText(ratio).c_str(), ratioText(lo).c_str(),
                  ratioText(hi).c_str(), verdict);
    std::snprintf(by, sizeof by, "%.0f / %.0f / %.0f",
                  p["replicas3-random"]["lost_1_tenant_sum"].get<double>(),
                  p["replicas3-random"]["lost_2_tenants_sum"].get<double>(),
                  p["replicas3-random"]["lost_3_tenants_sum"].get<double>());
    std::printf("%5.2f | %s | %s | %-26s | %-25s | %s | %s\n", p["target_util"].get<double>(),
                cell("replicas3-algorithm2").c_str(), cell("replicas3-random").c_str(), rr, by,
                cell("replicas4-algorithm2").c_str(), cell("replicas4-random").c_str());
    loss_points.push_back(
        {{"target_util", p["target_util"]},
         {"lost3_algorithm2", sa},
         {"lost3_random", sr},
         {"ratio", std::isfinite(ratio) ? nlohmann::json(ratio) : nlohmann::json(nullptr)},
         {"ratio_low95", std::isfinite(lo) ? nlohmann::json(lo) : nlohmann::json(nullptr)},
         {"ratio_high95", std::isfinite(hi) ? nlohmann::json(hi) : nlohmann::json(nullptr)},
         {"verdict", verdict}});
  }

  if (!no_storage) {
    const std::vector<double> rates = sim::ReplicaSimOptions{}.reimage_rates;
    std::printf(
        "\n4 replicas, Algorithm 2: the fourth replica's tenant by reimage rate (a month), share "
        "of blocks / blocks lost (sum over seeds)\n");
    for (const auto& p : points) {
      const auto& a2 = p["replicas4-algorithm2"];
      double placed = 0;
      for (size_t i = 0; i < rates.size(); i++)
        placed += a2.value("placed_fourth_rate" + std::to_string(i), 0.0);
      std::printf("%5.2f |", p["target_util"].get<double>());
      for (size_t i = 0; i < rates.size(); i++) {
        const std::string k = std::to_string(i);
        std::printf(" %g: %.3f / %.0f |", rates[i],
                    placed > 0 ? a2.value("placed_fourth_rate" + k, 0.0) / placed : 0.0,
                    a2.value("lost_fourth_rate" + k + "_sum", 0.0));
      }
      std::printf("\n");
    }
  }

  std::printf("\nTargets: ");
  if (targets) {
    std::printf(
        "gain at %.2f = %.2fx (>= 1.9: %s); grows with utilisation: %s; kills cut "
        "%.0f%%, throttled time cut %.0f%% at the top (>= 80%%: %s); history / floor at most %.3f "
        "(<= 1.10: %s); ",
        points.back()["target_util"].get<double>(), gain_top, gain_top >= 1.9 ? "met" : "NOT met",
        grows ? "yes" : "no", 100 * min_kill_cut, 100 * min_throttle_cut,
        min_kill_cut >= 0.8 && min_throttle_cut >= 0.8 ? "met" : "NOT met", worst_floor,
        worst_floor <= 1.10 ? "met" : "NOT met");
  } else if (!storage_only) {
    std::printf("job targets need history and primary-aware; ");
  }
  if (!no_storage) {
    std::printf(
        "3 replicas random / Alg. 2 >= 100x at every point: %s; 4 replicas Alg. 2 lost %lld (0: "
        "%s); ",
        loss_verdict.c_str(), static_cast<long long>(a2_lost4_all),
        a2_lost4_all == 0 ? "met" : "NOT met");
  }
  std::printf("wall %.0f s\n", wall);

  report.figures()["points"] = points;
  report.figures()["storage_only"] = storage_only;
  report.figures()["no_storage"] = no_storage;
  report.figures()["strategies"] = names;
  report.figures()["mix"] = *mix;
  report.figures()["history_fallback"] = sim::historyFallbackName(ho.history_fallback);
  report.figures()["history_hold_s"] = history_cli.hold_s;
  report.figures()["history_rise_quantile"] = ho.history_rise_quantile;
  if (targets) {
    report.figures()["gain_by_util"] = gains;
    report.figures()["gain_top"] = gain_top;
    report.figures()["gain_grows"] = grows;
    report.figures()["kill_cut_top"] = min_kill_cut;
    report.figures()["throttle_cut_top"] = min_throttle_cut;
    report.figures()["history_over_floor_max"] = worst_floor;
    report.targets()["gain_top_min"] = 1.9;
    report.targets()["kill_cut_top_min"] = 0.8;
    report.targets()["throttle_cut_top_min"] = 0.8;
    report.targets()["history_over_floor_max"] = 1.10;
  }
  if (!no_storage) {
    report.figures()["loss3_by_point"] = loss_points;
    report.figures()["loss3_verdict"] = loss_verdict;
    report.figures()["lost4_algorithm2_sum"] = a2_lost4_all;
    report.targets()["lost3_ratio_min"] = 100;
    report.targets()["lost4_algorithm2_max"] = 0;
  }
  report.figures()["wall_s"] = wall;
  report.emit();
  return 0;
}
