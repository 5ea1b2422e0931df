// Scheduler core alone (benchmark 2): morpheus_scheduler in process,
// virtual time passed as TimePoints, no RM around it. 2,700 nodes (40 vcores,
// 100 GiB each, 108,000 vcores), 200 ad-hoc apps of 20 users in 4 weighted
// queues plus 20 reservation queues (periodic and one-off) each with an app.
// Containers are 1 vcore / 2 GiB and run 30-90 virtual seconds, so the
// cluster holds ~108k containers. Every virtual second each node heartbeats
// once (nodeUpdate), ended containers complete and apps re-ask; every 60
// virtual seconds the plan follower changes the guarantees (preemptions).
//
// Prints, as the median of several runs: allocations/s while filling the
// empty cluster, sustained allocations/s in steady state (scheduler time
// only: completions, asks, heartbeats), and the cost of a heartbeat.
// Target >= 100,000 allocations/s (YARN's Hydra reports > 40,000/s).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <random>
#include <string>
#include <unordered_map>
#include <vector>

#include "report/bench_report.h"
#include "scheduler/scheduler.h"

using namespace morpheus;
using namespace morpheus::sched;

namespace {

constexpr int kNodes = 2700;
constexpr int kAdhocApps = 200;
constexpr int kReservations = 20;
constexpr int kSteadySeconds = 180;
constexpr int kRuns = 5;

using WallClock = std::chrono::steady_clock;

struct RunResult {
  double fill_rate = 0;     // allocations/s while filling
  double steady_rate = 0;   // allocations/s in steady state
  double heartbeat_us = 0;  // mean scheduler time per heartbeat in steady state
  int64_t steady_allocs = 0;
  size_t containers = 0;  // running at the end
  int64_t preempted = 0;
};

double seconds(WallClock::duration d) { return std::chrono::duration<double>(d).count(); }

RunResult runOnce(uint32_t seed) {
  std::mt19937 rng(seed);
  SchedulerOptions opts;
  opts.adhoc_queues = {{"root.q0", 4}, {"root.q1", 3}, {"root.q2", 2}, {"root.q3", 1}};
  auto sched = std::move(Scheduler::create(opts)).value();
  const TimePoint t0 = fromEpochMs(1'800'000'000'000);
  std::vector<NodeId> nodes;
  for (int n = 0; n < kNodes; n++) {
    nodes.emplace_back("n" + std::to_string(n));
    std::map<std::string, std::string> attrs{{"rack", "r" + std::to_string(n / 40)}};
    (void)sched->addNode(nodes.back(), Resource(102400, 40), attrs);
  }
  const Resource cap(2048, 1);
  std::vector<AppId> apps;
  std::vector<ReservationId> res;
  for (int r = 0; r < kReservations; r++) {
    res.emplace_back("r" + std::to_string(r));
    (void)sched->setReservation(
        res.back(), r % 2 == 0 ? ReservationKind::kPeriodic : ReservationKind::kOneOff, cap * 1000);
    apps.emplace_back("res_app" + std::to_string(r));
    (void)sched->addApp(apps.back(), UserId("svc" + std::to_string(r)),
                        QueueRef::reservation(res.back()));
  }
  for (int a = 0; a < kAdhocApps; a++) {
    apps.emplace_back("app" + std::to_string(a));
    (void)sched->addApp(apps.back(), UserId("user" + std::to_string(a % 20)),
                        QueueRef::adhoc("root.q" + std::to_string(a % 4)));
  }
  // Each app wants a bit more than its share so the cluster stays saturated.
  std::vector<int32_t> want(apps.size(), 600);
  std::vector<bool> dirty(apps.size(), true);
  std::unordered_map<AppId, size_t> app_index;
  for (size_t i = 0; i < apps.size(); i++) app_index[apps[i]] = i;
  auto pushAsks = [&]() {
    for (size_t i = 0; i < apps.size(); i++) {
      if (!dirty[i]) continue;
      dirty[i] = false;
      ResourceRequest rq;
      rq.request_id = "tasks";
      rq.priority = 1;
      rq.capability = cap;
      rq.count = want[i];
      (void)sched->updateAsks(apps[i], {rq});
    }
  };

  constexpr int kMaxLife = 91;
  std::vector<std::vector<ContainerId>> ends(kMaxLife);  // ring by virtual second
  std::uniform_int_distribution<int> life(30, 90);
  RunResult out;
  auto onAllocated = [&](const NodeUpdateResult& r, int sec) {
    for (const auto& a : r.allocations) {
      size_t i = app_index[a.app];
      want[i]--;
      ends[static_cast<size_t>((sec + life(rng)) % kMaxLife)].push_back(a.container);
    }
  };

  // Fill the empty cluster: one heartbeat per node at t0.
  pushAsks();
  int64_t filled = 0;
  auto f0 = WallClock::now();
  std::vector<NodeUpdateResult> results(nodes.size());
  for (size_t n = 0; n < nodes.size(); n++) {
    results[n] = std::move(sched->nodeUpdate(nodes[n], t0)).value();
    filled += static_cast<int64_t>(results[n].allocations.size());
  }
  auto f1 = WallClock::now();
  out.fill_rate = static_cast<double>(filled) / seconds(f1 - f0);
  for (const auto& r : results) onAllocated(r, 0);
  for (size_t i = 0; i < apps.size(); i++) dirty[i] = true;

  // Steady state.
  WallClock::duration busy{};
  int64_t allocs = 0;
  int64_t heartbeats = 0;
  std::vector<ContainerId> kills;
  for (int sec = 1; sec <= kSteadySeconds; sec++) {
    TimePoint now = t0 + Seconds(sec);
    auto& due = ends[static_cast<size_t>(sec % kMaxLife)];
    auto b0 = WallClock::now();
    if (sec % 60 == 0) {
      // Plan step: guarantees move (some reservations grow, some shrink).
      for (int r = 0; r < kReservations; r++) {
        int64_t n = 200 + static_cast<int64_t>(rng() % 3000);
        (void)sched->setReservation(
            res[static_cast<size_t>(r)],
            r % 2 == 0 ? ReservationKind::kPeriodic : ReservationKind::kOneOff, cap * n);
        // The job's next stage: it asks for about its new guarantee, which
        // the free capacity of a full cluster cannot meet -> preemption.
        want[static_cast<size_t>(r)] = static_cast<int32_t>(n);
        dirty[static_cast<size_t>(r)] = true;
      }
    }
    for (const auto& c : due) {
      auto done = sched->containerCompleted(c);
      if (!done.isOk()) continue;  // preempted earlier
      size_t i = app_index[done->app];
      want[i]++;
      dirty[i] = true;
    }
    for (const auto& c : kills) {
      auto done = sched->containerCompleted(c);
      if (!done.isOk()) continue;
      size_t i = app_index[done->app];
      want[i]++;  // the AM asks again for the preempted work
      dirty[i] = true;
    }
    kills.clear();
    pushAsks();
    for (size_t n = 0; n < nodes.size(); n++) {
      results[n] = std::move(sched->nodeUpdate(nodes[n], now)).value();
    }
    busy += WallClock::now() - b0;
    heartbeats += kNodes;
    due.clear();
    for (const auto& r : results) {
      allocs += static_cast<int64_t>(r.allocations.size());
      onAllocated(r, sec);
      for (const auto& k : r.to_kill) kills.push_back(k.container);
      out.preempted += static_cast<int64_t>(r.to_kill.size());
    }
    for (const auto& a : apps) (void)sched->takePreemptionNotices(a);
  }
  out.steady_allocs = allocs;
  out.steady_rate = static_cast<double>(allocs) / seconds(busy);
  out.heartbeat_us = seconds(busy) * 1e6 / static_cast<double>(heartbeats);
  out.containers = sched->numContainers();
  return out;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  morpheus::bench::BenchReport report("scheduler_core", &argc, argv);
  std::printf(
      "bench_scheduler_core: %d nodes x <100 GiB, 40 vcores>, %d ad-hoc apps in 4 weighted queues, "
      "%d reservation queues, 1-vcore/2-GiB containers living 30-90 virtual s\n",
      kNodes, kAdhocApps, kReservations);
  std::vector<double> fill, steady, hb;
  for (int r = 0; r < kRuns; r++) {
    uint32_t seed = 1000u + static_cast<uint32_t>(r);
    RunResult res = runOnce(seed);
    std::printf(
        "  run %d (seed %u): fill %.0f alloc/s, steady %.0f alloc/s (%lld allocations in %d "
        "virtual s), "
        "%.1f us/heartbeat, %zu containers running, %lld preempted\n",
        r, seed, res.fill_rate, res.steady_rate, static_cast<long long>(res.steady_allocs),
        kSteadySeconds, res.heartbeat_us, res.containers, static_cast<long long>(res.preempted));
    fill.push_back(res.fill_rate);
    steady.push_back(res.steady_rate);
    hb.push_back(res.heartbeat_us);
  }
  std::printf("fill (empty cluster): %.0f allocations/s (median of %d)\n", median(fill), kRuns);
  std::printf(
      "sustained (steady state): %.0f allocations/s (median of %d), %.1f us per heartbeat\n",
      median(steady), kRuns, median(hb));
  std::printf("target: >= 100,000 allocations/s\n");
  report.figures() = {{"fill_allocations_per_s_median", median(fill)},
                      {"steady_allocations_per_s_median", median(steady)},
                      {"heartbeat_us_median", median(hb)},
                      {"runs", kRuns}};
  report.targets() = {{"allocations_per_s_min", 100000}};
  report.emit();
  return 0;
}
