// Scheduler core throughput (benchmark 2): RmRuntime with its real
// collaborators (RmCore, AppManager over SQLite) and the virtual clock, no
// network. 2,700 nodes (40 vcores, 100 GiB each) heartbeat once per virtual
// second; 200 running apps in 4 weighted ad-hoc queues keep asking for 1-vcore
// containers that run 30-90 virtual seconds, so the cluster holds ~100k
// containers. Prints the allocation throughput while filling the empty
// cluster (target >= 100,000/s; YARN's Hydra reports > 40,000/s per cluster)
// and the cost of a heartbeat in steady state.
#include <unistd.h>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <random>

#include "common/wire.h"
#include "report/bench_report.h"
#include "rm/grpc/am_service.h"
#include "rm/runtime/runtime.h"

using namespace morpheus;
using namespace morpheus::rm;

namespace {

constexpr int kNodes = 2700;
constexpr int kApps = 200;

struct Running {
  std::string id;
  int64_t end_ms;
};

double runOnce(int seconds, int64_t* allocated_out, size_t* in_use_out, double* fill_rate) {
  auto dir = std::filesystem::temp_directory_path() /
             ("morpheus-bench-sched-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::filesystem::remove(dir / "state.db");
  auto store = std::move(store::openStateStore("sqlite", (dir / "state.db").string())).value();
  VirtualClock clock(fromEpochMs(1'800'000'000'000));
  MetricsRegistry metrics;
  RmOptions opts;
  RmCore core(opts, clock, metrics, "bench-secret");
  AppManagerOptions ao;
  ao.queues = {"root.q0", "root.q1", "root.q2", "root.q3"};
  ao.max_pending_apps_per_user = kApps;  // the bench's users are not bounded
  ao.max_apps_per_user = kApps;
  AppManager apps(
      ao, *store, clock, metrics, core.signer(),
      [](const JobKey&) { return std::vector<BindTarget>{}; },
      [](const ReservationId&) -> std::optional<BindTarget> { return std::nullopt; });
  RuntimeOptions ro;
  ro.queue_weights = {{"root.q0", 4}, {"root.q1", 3}, {"root.q2", 2}, {"root.q3", 1}};
  RmRuntime rt(
      ro, core, apps, clock, metrics, nullptr, [](const ReservationId&) { return false; },
      [](const ReservationId&, TimePoint) { return Resource(); });
  for (int n = 0; n < kNodes; n++) {
    NodeInfo info;
    info.id = NodeId("n" + std::to_string(n));
    info.container_manager_address = "127.0.0.1:1";
    info.total = Resource(102400, 40);
    (void)core.registerNode(info);
    rt.onNodeRegistered({info.id, info.container_manager_address, "", info.total, {}});
  }
  std::vector<AppId> ids;
  for (int a = 0; a < kApps; a++) {
    AppSpec s;
    s.name = "app" + std::to_string(a);
    s.user = UserId("user" + std::to_string(a % 20));
    s.queue = "root.q" + std::to_string(a % 4);
    s.am_resource = Resource(1024, 1);
    s.am_launch_context = "x";
    ids.push_back(apps.submit(s, [](const BindTarget&) { return Status::ok(); })->id);
  }
  std::vector<std::vector<Running>> on_node(kNodes);
  std::mt19937_64 rng(7);
  auto beat = [&](int n, bool count_tasks) {
    NodeHeartbeatCall call;
    call.node = NodeId("n" + std::to_string(n));
    int64_t now = toEpochMs(clock.now());
    auto& list = on_node[static_cast<size_t>(n)];
    for (auto it = list.begin(); it != list.end();) {
      if (it->end_ms <= now) {
        ContainerReport st;
        st.id = ContainerId(it->id);
        st.complete = true;
        call.containers.push_back(std::move(st));
        it = list.erase(it);
      } else {
        ++it;
      }
    }
    rt.onNodeHeartbeat(std::move(call));
    (void)count_tasks;
  };
  // AMs start and register.
  for (int n = 0; n < kNodes && apps.list({AppState::kSubmitted}, "").size() > 0; n++)
    beat(n, false);
  for (const auto& id : ids) {
    (void)rt.registerAm({id, apps.amToken(id, 1)});
  }
  auto askMore = [&]() {
    int64_t got = 0;
    for (const auto& id : ids) {
      v1::AllocateRequest req;
      req.set_application_id(id.value());
      req.set_am_token(apps.amToken(id, 1));
      auto* a = req.add_asks();
      a->set_request_id("t");
      a->set_priority(1);
      toProto(Resource(1024, 1), a->mutable_capability());
      a->set_count(1000);
      v1::AllocateResponse resp;
      (void)serveAllocate(rt, core, req, &resp);  // as the AM service runs it
      for (const auto& c : resp.allocated()) {
        int n = std::stoi(c.node_id().substr(1));
        int64_t dur = std::uniform_int_distribution<int64_t>(30000, 90000)(rng);
        on_node[static_cast<size_t>(n)].push_back({c.container_id(), toEpochMs(clock.now()) + dur});
        got++;
      }
    }
    return got;
  };
  askMore();
  // Phase 1, fill: every app asks for 1000 containers; heartbeat rounds until
  // the cluster is full. Timed: scheduling (heartbeats) plus the AMs' Allocate
  // calls that hand the containers out.
  {
    int64_t filled = 0;
    auto t0 = std::chrono::steady_clock::now();
    for (int round = 0; round < 10; round++) {
      for (int n = 0; n < kNodes; n++) beat(n, true);
      int64_t got = askMore();
      filled += got;
      if (got == 0) break;
    }
    double dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::printf("  fill: %lld containers allocated in %.3f s wall = %.0f allocations/s\n",
                static_cast<long long>(filled), dt, static_cast<double>(filled) / dt);
    *fill_rate = static_cast<double>(filled) / dt;
  }
  // Phase 2, churn: containers end after 30-90 virtual s and are replaced.
  int64_t allocated = 0;
  double wall = 0;
  for (int sec = 0; sec < 60 + seconds; sec++) {
    bool timed = sec >= 60;
    auto t0 = std::chrono::steady_clock::now();
    for (int n = 0; n < kNodes; n++) {
      if (n % 270 == 0) clock.advance(Millis(100));
      beat(n, true);
    }
    int64_t got = askMore();
    double dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (timed) {
      allocated += got;
      wall += dt;
    }
  }
  size_t in_use = 0;
  for (const auto& l : on_node) in_use += l.size();
  *allocated_out = allocated;
  *in_use_out = in_use;
  std::filesystem::remove_all(dir);
  std::printf(
      "  churn: %d virtual s of %d heartbeats each took %.3f s wall (%.1f us per heartbeat)\n",
      seconds, kNodes, wall, wall * 1e6 / (seconds * kNodes));
  return static_cast<double>(allocated) / wall;
}

}  // namespace

int main(int argc, char** argv) {
  morpheus::bench::BenchReport report("scheduler", &argc, argv);
  int reps = argc > 1 ? std::atoi(argv[1]) : 3;
  std::printf(
      "== scheduler core: %d nodes x 40 vcores, %d apps in 4 weighted queues, virtual clock ==\n",
      kNodes, kApps);
  std::vector<double> fills, churns;
  for (int r = 0; r < reps; r++) {
    int64_t allocated = 0;
    size_t in_use = 0;
    double fill = 0;
    double rate = runOnce(20, &allocated, &in_use, &fill);
    fills.push_back(fill);
    churns.push_back(rate);
    std::printf(
        "rep %d: churn replaced %lld containers (%.0f per wall s), %zu containers in use at the "
        "end\n",
        r + 1, static_cast<long long>(allocated), rate, in_use);
  }
  std::sort(fills.begin(), fills.end());
  std::printf("median fill throughput %.0f allocations/s (target >= 100,000/s)\n",
              fills[fills.size() / 2]);
  std::sort(churns.begin(), churns.end());
  report.figures() = {{"fill_allocations_per_s_median", fills[fills.size() / 2]},
                      {"churn_allocations_per_wall_s_median", churns[churns.size() / 2]},
                      {"reps", reps}};
  report.targets() = {{"fill_allocations_per_s_min", 100000}};
  report.emit();
  return 0;
}
