// RM under load (benchmark 1): a real morpheus-rm process; this
// process simulates N node managers (register + 1 s heartbeats carrying their
// containers' statuses, over real gRPC on loopback), a ContainerManager that
// accepts the RM's AM launches, and the AMs of A applications that keep
// asking for 1-vcore containers that run 10-20 s (so ~100k containers churn
// at ~6,700/s). Prints sustained
// allocations per second, heartbeat latency p50/p99, the RM's CPU and peak RSS.
// Targets (2-core machine): no growing backlog, heartbeat p99 <= 100 ms,
// >= 5,000 allocations/s end to end.
//
// This bench is closed-loop (each of 8 threads sends its heartbeats serially,
// so a slow RM slows the load: coordinated omission); it is kept as the
// reference of earlier figures. bench_rm_open_load is the open-loop one.
//
// Heartbeats report containers as the NM does (nodemanager/heartbeat_report.h):
// every --full-report-every-th heartbeat lists all of them, the others only
// those started since the last heartbeat and the completed ones (1 = every
// heartbeat lists all, the NM before change reports).
//
// usage: bench_rm_load [--nodes N] [--apps A] [--seconds S] [--per-app C] [--warmup S]
//   [--full-report-every N] [--rm-bin PATH] [--json]
#include <grpcpp/grpcpp.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <fstream>
#include <map>
#include <mutex>
#include <random>
#include <sstream>
#include <thread>

#include "common/mutex_tuning.h"
#include "common/wire.h"
#include "harness.h"
#include "morpheus/v1/application_master.grpc.pb.h"
#include "morpheus/v1/client.grpc.pb.h"
#include "morpheus/v1/container_manager.grpc.pb.h"
#include "morpheus/v1/resource_tracker.grpc.pb.h"
#include "report/bench_report.h"

using namespace morpheus;
using namespace std::chrono_literals;

namespace {

int64_t nowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

struct SimNode {
  std::mutex mu;
  std::map<std::string, int64_t> running;  // container -> end ms
  std::vector<std::string> done;           // completed, to report once
  std::vector<std::string> fresh;          // started since the last heartbeat
  int64_t beats = 0;                       // heartbeats built
};

// Adds a running container to `n` (REQUIRES n.mu).
void startOn(SimNode& n, const std::string& id, int64_t end_ms) {
  if (n.running.emplace(id, end_ms).second) n.fresh.push_back(id);
}

struct AmInfo {
  std::string app, token;
};

std::vector<SimNode> g_nodes;
std::mutex g_am_mu;
std::vector<AmInfo> g_new_ams;

int nodeIndex(const std::string& node_id) { return std::atoi(node_id.c_str() + 4); }  // "sim-<i>"

class FakeContainerManager final : public v1::ContainerManager::Service {
 public:
  grpc::Status StartContainers(grpc::ServerContext*, const v1::StartContainersRequest* req,
                               v1::StartContainersResponse* resp) override {
    for (const auto& r : req->requests()) {
      const auto& env = r.launch_context().env();
      auto app = env.find("MORPHEUS_APP_ID");
      auto tok = env.find("MORPHEUS_AM_TOKEN");
      if (app != env.end() && tok != env.end()) {
        std::lock_guard<std::mutex> lk(g_am_mu);
        g_new_ams.push_back({app->second, tok->second});
      }
      SimNode& n = g_nodes[static_cast<size_t>(nodeIndex(r.container().node_id()))];
      std::lock_guard<std::mutex> lk(n.mu);
      startOn(n, r.container().container_id(), INT64_MAX);  // AMs run until the end
      resp->add_started(r.container().container_id());
    }
    return grpc::Status::OK;
  }
};

double percentile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[static_cast<size_t>(q * static_cast<double>(v.size() - 1))];
}

void procStats(pid_t pid, double* cpu_s, long* hwm_kib) {
  std::ifstream st("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  std::getline(st, line);
  std::istringstream in(line.substr(line.rfind(')') + 2));
  std::string f;
  unsigned long long ut = 0, stt = 0;
  for (int i = 3; i <= 15; i++) {
    in >> f;
    if (i == 14) ut = std::stoull(f);
    if (i == 15) stt = std::stoull(f);
  }
  *cpu_s = static_cast<double>(ut + stt) / static_cast<double>(sysconf(_SC_CLK_TCK));
  std::ifstream s("/proc/" + std::to_string(pid) + "/status");
  while (std::getline(s, line)) {
    if (line.rfind("VmHWM:", 0) == 0) *hwm_kib = std::atol(line.c_str() + 6);
  }
}

}  // namespace

int main(int argc, char** argv) {
  disableAbseilDeadlockDetection();  // common/mutex_tuning.h
  morpheus::bench::BenchReport report("rm_load", &argc, argv);
  int nodes = 2700, apps = 200, seconds = 30, per_app = 500, warmup = 60, min_dur = 10,
      max_dur = 20, full_every = 10;
  std::string rm_bin;  // another morpheus-rm build (old figures); "" = the one built with this
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string a = argv[i];
    if (a == "--rm-bin") {
      rm_bin = argv[i + 1];
      continue;
    }
    int v = std::atoi(argv[i + 1]);
    if (a == "--nodes")
      nodes = v;
    else if (a == "--apps")
      apps = v;
    else if (a == "--seconds")
      seconds = v;
    else if (a == "--per-app")
      per_app = v;
    else if (a == "--warmup")
      warmup = v;
    else if (a == "--min-duration")
      min_dur = v;
    else if (a == "--max-duration")
      max_dur = v;
    else if (a == "--full-report-every")
      full_every = std::max(1, v);
  }
  std::printf(
      "== rm-load: %d simulated NMs (40 vcores), %d apps x %d containers, %d s measured ==\n",
      nodes, apps, per_app, seconds);
  g_nodes = std::vector<SimNode>(static_cast<size_t>(nodes));
  FakeContainerManager cm;
  grpc::ServerBuilder sb;
  int cm_port = 0;
  sb.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &cm_port);
  sb.RegisterService(&cm);
  auto cm_server = sb.BuildAndStart();
  std::string cm_addr = "127.0.0.1:" + std::to_string(cm_port);

  std::string dir = morpheus::testing::freshDir("rm-load");
  std::vector<std::string> rm_args = {"--set", "rm.node-expiry=60s",   "--set", "log.level=warn",
                                      "--set", "rm.auth-disabled=true"};
  morpheus::testing::Process rm;
  std::string rm_addr;
  if (rm_bin.empty()) {
    rm = morpheus::testing::Process::startDaemon("rm", dir, rm_args);
    rm_addr = rm.grpcAddress();
  } else {  // as startDaemon does, from rm_bin
    std::vector<std::string> all = {"--data-dir", dir, "--grpc-port", "0", "--http-port", "0"};
    all.insert(all.end(), rm_args.begin(), rm_args.end());
    rm = morpheus::testing::Process::start(rm_bin, all, dir + ".log");
    for (int i = 0; i < 2000 && rm_addr.empty() && rm.running(); i++) {
      std::this_thread::sleep_for(10ms);
      std::ifstream in(dir + "/rm.endpoints.json");
      auto j = nlohmann::json::parse(in, nullptr, false);
      if (!j.is_discarded()) rm_addr = j.value("grpc", "");
    }
  }
  if (rm_addr.empty()) {
    std::fprintf(stderr, "RM did not start: %s\n", rm.log().c_str());
    return 1;
  }
  auto channel = makeChannel(rm_addr, TlsOptions{});
  auto tracker = v1::ResourceTracker::NewStub(channel);
  for (int i = 0; i < nodes; i++) {
    v1::RegisterNodeRequest r;
    r.set_node_id("sim-" + std::to_string(i));
    r.set_container_manager_address(cm_addr);
    toProto(Resource(102400, 40), r.mutable_total());
    v1::RegisterNodeResponse resp;
    auto ctx = makeContext(Millis(10000));
    if (!tracker->RegisterNode(ctx.get(), r, &resp).ok()) {
      std::fprintf(stderr, "registration failed\n");
      return 1;
    }
  }
  std::atomic<bool> stop{false};
  std::mutex lat_mu;
  std::vector<double> latencies;
  std::atomic<bool> measuring{false};
  // Node threads: each owns a slice of the nodes and heartbeats each once per second.
  const int kNodeThreads = 8;
  std::vector<std::thread> threads;
  for (int t = 0; t < kNodeThreads; t++) {
    threads.emplace_back([&, t] {
      auto stub = v1::ResourceTracker::NewStub(makeChannel(rm_addr, TlsOptions{}));
      std::vector<int> mine;
      for (int i = t; i < nodes; i += kNodeThreads) mine.push_back(i);
      while (!stop) {
        auto round = std::chrono::steady_clock::now();
        for (int i : mine) {
          if (stop) break;
          SimNode& n = g_nodes[static_cast<size_t>(i)];
          v1::NodeHeartbeatRequest req;
          req.set_node_id("sim-" + std::to_string(i));
          int64_t now = nowMs();
          {
            std::lock_guard<std::mutex> lk(n.mu);
            const bool full = n.beats++ % full_every == 0;
            for (auto it = n.running.begin(); it != n.running.end();) {
              bool done = it->second <= now;
              if (done || full) {
                auto* s = req.add_container_statuses();
                s->set_container_id(it->first);
                s->set_state(done ? v1::CONTAINER_COMPLETE : v1::CONTAINER_RUNNING);
              }
              it = done ? n.running.erase(it) : std::next(it);
            }
            for (const auto& id : n.fresh) {
              if (full || !n.running.count(id)) continue;
              auto* s = req.add_container_statuses();
              s->set_container_id(id);
              s->set_state(v1::CONTAINER_RUNNING);
            }
            n.fresh.clear();
            req.set_changes_only(!full);
            req.set_running_containers(static_cast<int32_t>(n.running.size()));
          }
          v1::NodeHeartbeatResponse resp;
          auto ctx = makeContext(Millis(10000));
          auto s0 = std::chrono::steady_clock::now();
          grpc::Status st = stub->NodeHeartbeat(ctx.get(), req, &resp);
          double ms =
              std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - s0)
                  .count();
          if (measuring) {
            std::lock_guard<std::mutex> lk(lat_mu);
            latencies.push_back(ms);
          }
          if (st.ok()) {
            std::lock_guard<std::mutex> lk(n.mu);
            for (const auto& k : resp.containers_to_kill())
              n.running[k] = 0;  // completes next beat
          }
        }
        std::this_thread::sleep_until(round + 1s);
      }
    });
  }
  // Submit the apps; their AMs arrive through the fake ContainerManager.
  auto client = v1::ClientService::NewStub(channel);
  for (int a = 0; a < apps; a++) {
    v1::SubmitApplicationRequest req;
    req.set_name("load-" + std::to_string(a));
    req.set_user("user" + std::to_string(a % 20));
    toProto(Resource(1024, 1), req.mutable_am_resource());
    req.mutable_am_launch_context()->set_command("/bin/true");
    v1::SubmitApplicationResponse resp;
    auto ctx = makeContext(Millis(10000));
    (void)client->SubmitApplication(ctx.get(), req, &resp);
  }
  // AM threads: register new AMs, then keep `per_app` containers running each.
  std::atomic<int64_t> allocated{0};
  const int kAmThreads = 4;
  std::vector<std::vector<AmInfo>> ams(kAmThreads);
  std::mutex ams_mu;
  for (int t = 0; t < kAmThreads; t++) {
    threads.emplace_back([&, t] {
      auto am = v1::ApplicationMaster::NewStub(makeChannel(rm_addr, TlsOptions{}));
      std::mt19937_64 rng(static_cast<uint64_t>(t));
      // Per app: containers asked for and not yet received (our view of the
      // RM's outstanding count). Asks replace earlier ones (YARN semantics),
      // so an ask is sent only to add completions to what is outstanding.
      std::map<std::string, int64_t> asked, received;
      std::map<std::string, bool> started;
      while (!stop) {
        auto round = std::chrono::steady_clock::now();
        {
          std::lock_guard<std::mutex> lk(g_am_mu);
          for (auto it = g_new_ams.begin(); it != g_new_ams.end();) {
            if (std::hash<std::string>()(it->app) % kAmThreads == static_cast<size_t>(t)) {
              v1::RegisterApplicationMasterRequest r;
              r.set_application_id(it->app);
              r.set_am_token(it->token);
              v1::RegisterApplicationMasterResponse rr;
              auto ctx = makeContext(Millis(10000));
              (void)am->RegisterApplicationMaster(ctx.get(), r, &rr);
              std::lock_guard<std::mutex> lk2(ams_mu);
              ams[static_cast<size_t>(t)].push_back(*it);
              it = g_new_ams.erase(it);
            } else {
              ++it;
            }
          }
        }
        std::vector<AmInfo> mine;
        {
          std::lock_guard<std::mutex> lk(ams_mu);
          mine = ams[static_cast<size_t>(t)];
        }
        for (const auto& a : mine) {
          v1::AllocateRequest req;
          req.set_application_id(a.app);
          req.set_am_token(a.token);
          if (!started[a.app]) {
            started[a.app] = true;
            asked[a.app] = per_app;
            auto* ask = req.add_asks();
            ask->set_request_id("t");
            ask->set_priority(1);
            toProto(Resource(1024, 1), ask->mutable_capability());
            ask->set_count(per_app);
          }
          v1::AllocateResponse resp;
          auto ctx = makeContext(Millis(10000));
          if (!am->Allocate(ctx.get(), req, &resp).ok()) continue;
          int64_t now = nowMs();
          for (const auto& c : resp.allocated()) {
            SimNode& n = g_nodes[static_cast<size_t>(nodeIndex(c.node_id()))];
            std::lock_guard<std::mutex> lk(n.mu);
            startOn(n, c.container_id(),
                    now + 1000 * std::uniform_int_distribution<int64_t>(min_dur, max_dur)(rng));
          }
          received[a.app] += resp.allocated_size();
          if (measuring) allocated += resp.allocated_size();
          if (resp.completed_size() > 0) {
            // Replace the outstanding count: what is still owed plus the completions.
            asked[a.app] += resp.completed_size();
            v1::AllocateRequest more;
            more.set_application_id(a.app);
            more.set_am_token(a.token);
            auto* ask = more.add_asks();
            ask->set_request_id("t");
            ask->set_priority(1);
            toProto(Resource(1024, 1), ask->mutable_capability());
            ask->set_count(
                static_cast<int32_t>(std::max<int64_t>(0, asked[a.app] - received[a.app])));
            v1::AllocateResponse r2;
            auto c2 = makeContext(Millis(10000));
            if (am->Allocate(c2.get(), more, &r2).ok()) {
              for (const auto& c : r2.allocated()) {
                SimNode& n = g_nodes[static_cast<size_t>(nodeIndex(c.node_id()))];
                std::lock_guard<std::mutex> lk(n.mu);
                startOn(n, c.container_id(),
                        now + 1000 * std::uniform_int_distribution<int64_t>(min_dur, max_dur)(rng));
              }
              received[a.app] += r2.allocated_size();
              if (measuring) allocated += r2.allocated_size();
              asked[a.app] += 0;
              // Completions in r2 are counted on the next round.
              if (r2.completed_size() > 0) asked[a.app] += r2.completed_size();
            }
          }
        }
        std::this_thread::sleep_until(round + 1s);
      }
    });
  }
  // Warm up until the cluster holds most of its containers, then measure.
  std::printf("warming up (%d s)...\n", warmup);
  std::fflush(stdout);
  std::this_thread::sleep_for(std::chrono::seconds(warmup));
  double cpu0 = 0;
  long hwm = 0;
  procStats(rm.pid(), &cpu0, &hwm);
  measuring = true;
  auto m0 = std::chrono::steady_clock::now();
  std::this_thread::sleep_for(std::chrono::seconds(seconds));
  measuring = false;
  double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - m0).count();
  double cpu1 = 0;
  procStats(rm.pid(), &cpu1, &hwm);
  size_t in_use = 0;
  for (auto& n : g_nodes) {
    std::lock_guard<std::mutex> lk(n.mu);
    in_use += n.running.size();
  }
  size_t beats = latencies.size();
  std::printf("containers in use: %zu; heartbeats: %zu (%.0f/s, expected %d/s)\n", in_use, beats,
              static_cast<double>(beats) / wall, nodes);
  std::printf("allocations: %.0f/s (target >= 5,000/s)\n",
              static_cast<double>(allocated.load()) / wall);
  std::printf("heartbeat latency: p50 %.1f ms, p99 %.1f ms (target p99 <= 100 ms)\n",
              percentile(latencies, 0.5), percentile(latencies, 0.99));
  std::printf("RM: CPU %.0f%% of one core, peak RSS %ld MiB\n", 100.0 * (cpu1 - cpu0) / wall,
              hwm / 1024);
  stop = true;
  for (auto& t : threads) t.join();
  cm_server->Shutdown();
  rm.signalAndWait(SIGTERM, 10s);
  report.figures() = {{"nodes", nodes},
                      {"full_report_every", full_every},
                      {"containers_in_use", in_use},
                      {"heartbeats_per_s", static_cast<double>(beats) / wall},
                      {"allocations_per_s", static_cast<double>(allocated.load()) / wall},
                      {"heartbeat_latency_ms_closed_loop",
                       {{"p50", percentile(latencies, 0.5)}, {"p99", percentile(latencies, 0.99)}}},
                      {"rm_cpu_cores", (cpu1 - cpu0) / wall},
                      {"rm_peak_rss_mib", hwm / 1024}};
  report.targets() = {{"heartbeat_p99_ms_max", 100}, {"allocations_per_s_min", 5000}};
  report.emit();
  return 0;
}
