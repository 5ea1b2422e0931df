// Open-loop load on a real morpheus-rm (an open-loop load
// generator). This process is the generator; the RM is a separate process it
// starts (tests/integration/harness.h). It simulates N node managers and the
// AMs of A applications over real gRPC on loopback:
//
// - Node i's k-th heartbeat has the intended send time
//   t0 + k * interval + i * interval / N (evenly spread). It is sent at that
//   time whatever the RM's latency: a slow RM builds a backlog of calls in
//   flight instead of slowing the load (no coordinated omission). Latency is
//   measured from the intended send time, so it includes any delay of the
//   generator itself (its own send lag is reported apart).
// - Each heartbeat carries the statuses of the node's containers; a container
//   is reported COMPLETE once its run time (uniform in [min, max] s) ends.
// - Each app's AM calls Allocate once per interval at its intended time, at
//   most one call in flight (as YARN's AMRMClient); a call due while the
//   previous one is in flight is sent when it returns, its latency still
//   counted from its intended time. Asks replace earlier ones (YARN
//   semantics): the count asked is what is owed (per-app + completions seen -
//   containers received).
// - The RM's AM launches go to a ContainerManager served by this process.
//
// Calls use gRPC's callback API over a few channels (separate TCP
// connections): a few sender threads keep thousands of calls in flight, so it
// scales to 10,000 NMs on 2 cores; no thread per NM.
//
// Report: offered vs delivered heartbeats/s, allocations/s (fill and steady),
// heartbeat and allocate latency percentiles (the measured window; the fill
// and its drain apart; and from the first heartbeat, fill included),
// containers running, whether the RM's backlog grew (first vs last minute of
// the measured window: latency and calls in flight), CPU of both processes
// (/proc) and peak RSS. The last line
// is one JSON object with the figures and targets (--json prints only it).
//
// usage: bench_rm_open_load [--nodes N] [--apps A] [--per-app C] [--seconds S]
//   [--max-warmup S] [--min-duration S] [--max-duration S] [--interval-ms MS]
//   [--senders T] [--channels K] [--full-report-every N] [--rm-bin PATH]
//   [--short-containers] [--null-rm] [--json]
// --short-containers sets container run times to 1-3 s (as --min-duration 1
// --max-duration 3), so allocations/s are bounded by the RM, not by how fast
// the workload's containers complete (10-20 s containers at 100k complete
// only ~6,700/s).
// --null-rm runs against a trivial RM (null_rm.h) with no apps: it measures
// the generator alone. --rm-bin runs another morpheus-rm build (the old one,
// with --full-report-every 1 as its NMs sent).
// Defaults are the 10,000-NM target: 600 apps x 500 containers that
// run 600-900 s (so the measured window holds >= 300k containers); for the
// 2,700-NM churn comparison use --nodes 2700 --apps 200 --short-containers.
// Submissions and the AMs' Allocate calls use their own connection (as
// clients and AMs do), so they do not queue behind the heartbeats.
#include <grpcpp/grpcpp.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <fstream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "common/mutex_tuning.h"
#include "common/wire.h"
#include "harness.h"
#include "morpheus/v1/application_master.grpc.pb.h"
#include "morpheus/v1/client.grpc.pb.h"
#include "morpheus/v1/container_manager.grpc.pb.h"
#include "morpheus/v1/resource_tracker.grpc.pb.h"
#include "null_rm.h"
#include "report/bench_report.h"

using namespace morpheus;
using namespace std::chrono_literals;
using SteadyClock = std::chrono::steady_clock;
using SteadyTime = SteadyClock::time_point;

namespace {

struct Options {
  int nodes = 10000;
  int apps = 600;
  int per_app = 510;     // 600 x 510 = 306,000: the target is >= 300,000 running
  int seconds = 300;     // measured window, s
  int max_warmup = 180;  // fill phase at most this long, s
  // After the fill, churn at least this long before measuring (s): with short
  // containers the fill's cohort completes and is refilled in waves that take
  // several lifetimes to spread out.
  int min_settle = 0;
  int min_duration = 600, max_duration = 900;  // container run time, s
  int interval_ms = 1000;                      // NM and AM heartbeat interval
  // Heartbeat sender threads and TCP connections to the RM. 8 and 16 offer
  // 10,000 NMs/s against the null RM on the shared machine (2 and 8 reached
  // ~5,300/s there: each sender's share of a loaded CPU caps it).
  int senders = 8;
  int channels = 16;
  // Heartbeats per full container report (as nm.full-report-every); between
  // them a heartbeat lists only new and completed containers. 1 = every
  // heartbeat lists every container (the NM before change reports).
  int full_report_every = 10;
  bool null_rm = false;              // against a trivial RM that does no work (null_rm.h)
  std::string rm_bin;                // morpheus-rm binary; "" = the one built with this bench
  std::vector<std::string> rm_sets;  // extra `--set KEY=VALUE` for the RM (--rm-set)
};

double secondsSince(SteadyTime a, SteadyTime b) {
  return std::chrono::duration<double>(b - a).count();
}

// Per-second tallies of the whole run, keyed by the second of the intended
// send time (heartbeats, allocates) or of receipt (allocations).
class Timeline {
 public:
  explicit Timeline(SteadyTime t0) : t0_(t0) {}
  void offered(SteadyTime intended) {
    std::lock_guard<std::mutex> lk(mu_);
    atLocked(intended).offered++;
  }
  // A call intended at `intended` returned `latency_s` later (now).
  void delivered(SteadyTime intended, double latency_s, bool ok) {
    std::lock_guard<std::mutex> lk(mu_);
    Second& s = atLocked(intended);
    (ok ? s.delivered : s.failed)++;
    s.latencies.push_back(static_cast<float>(latency_s));
    atLocked(SteadyClock::now()).completed++;
  }
  // A call intended at `intended` was sent `lag_s` later (now).
  void sent(SteadyTime intended, double lag_s) {
    std::lock_guard<std::mutex> lk(mu_);
    atLocked(intended).send_lags.push_back(static_cast<float>(lag_s));
    atLocked(SteadyClock::now()).sent++;
  }
  void allocated(SteadyTime when, int n) {
    std::lock_guard<std::mutex> lk(mu_);
    atLocked(when).allocations += n;
  }
  void inFlight(SteadyTime when, int64_t n) {
    std::lock_guard<std::mutex> lk(mu_);
    atLocked(when).in_flight = n;
  }
  struct Second {
    // offered/delivered/failed/latencies/send_lags by intended second;
    // sent/completed/allocations/in_flight by the second they happened in.
    int64_t offered = 0, delivered = 0, failed = 0, sent = 0, completed = 0, allocations = 0,
            in_flight = 0;
    std::vector<float> latencies, send_lags;
  };
  // Seconds [from, to) merged; caller must have stopped all writers.
  Second merge(int from, int to) const {
    Second m;
    for (int i = std::max(from, 0); i < to && i < static_cast<int>(secs_.size()); i++) {
      const Second& s = secs_[static_cast<size_t>(i)];
      m.offered += s.offered;
      m.delivered += s.delivered;
      m.failed += s.failed;
      m.completed += s.completed;
      m.sent += s.sent;
      m.allocations += s.allocations;
      m.in_flight = std::max(m.in_flight, s.in_flight);
      m.latencies.insert(m.latencies.end(), s.latencies.begin(), s.latencies.end());
      m.send_lags.insert(m.send_lags.end(), s.send_lags.begin(), s.send_lags.end());
    }
    return m;
  }
  int secondOf(SteadyTime t) const { return static_cast<int>(std::floor(secondsSince(t0_, t))); }

 private:
  Second& atLocked(SteadyTime t) {
    size_t i = static_cast<size_t>(std::max(0, secondOf(t)));
    if (i >= secs_.size()) secs_.resize(i + 1);
    return secs_[i];
  }
  SteadyTime t0_;
  std::mutex mu_;
  std::vector<Second> secs_;  // GUARDED_BY(mu_)
};

// The simulated nodes' containers. Thread-safe (one mutex per node).
class Fleet {
 public:
  explicit Fleet(int nodes) : nodes_(static_cast<size_t>(nodes)) {}
  static std::string name(int i) { return "sim-" + std::to_string(i); }
  static int index(const std::string& node_id) { return std::atoi(node_id.c_str() + 4); }
  int size() const { return static_cast<int>(nodes_.size()); }

  void add(const std::string& node_id, const std::string& container, SteadyTime end) {
    Node& n = nodes_[static_cast<size_t>(index(node_id))];
    std::lock_guard<std::mutex> lk(n.mu);
    if (!n.running.emplace(container, end).second) return;
    running_++;
    n.fresh.push_back(container);
  }
  // Statuses of node i's containers as the NM reports them
  // (nodemanager/heartbeat_report.h): the first and every `full_every`-th
  // heartbeat (at the node's own phase) all of them, else those started
  // since the last heartbeat; those past their end are reported COMPLETE
  // once and forgotten. (The NM repeats a change until a heartbeat is
  // answered; here a failed heartbeat's changes are not repeated, which the
  // RM does not need for containers it allocated.)
  void fillHeartbeat(int i, SteadyTime now, int full_every, v1::NodeHeartbeatRequest* req) {
    Node& n = nodes_[static_cast<size_t>(i)];
    std::lock_guard<std::mutex> lk(n.mu);
    // Full after registration, then every full_every-th, each node at its
    // own phase (HeartbeatReporter's jitter), so full reports do not all
    // land in the same second.
    const bool full = n.beats == 0 || (n.beats + i) % full_every == 0;
    n.beats++;
    for (auto it = n.running.begin(); it != n.running.end();) {
      bool done = it->second <= now;
      if (done || full) {
        auto* s = req->add_container_statuses();
        s->set_container_id(it->first);
        s->set_state(done ? v1::CONTAINER_COMPLETE : v1::CONTAINER_RUNNING);
      }
      if (done) {
        it = n.running.erase(it);
        running_--;
      } else {
        ++it;
      }
    }
    for (const auto& id : n.fresh) {
      if (full || !n.running.count(id)) continue;
      auto* s = req->add_container_statuses();
      s->set_container_id(id);
      s->set_state(v1::CONTAINER_RUNNING);
    }
    n.fresh.clear();
    req->set_changes_only(!full);
    req->set_running_containers(static_cast<int32_t>(n.running.size()));
  }
  void kill(int i, const std::string& container) {
    Node& n = nodes_[static_cast<size_t>(i)];
    std::lock_guard<std::mutex> lk(n.mu);
    if (auto it = n.running.find(container); it != n.running.end()) it->second = SteadyTime::min();
  }
  int64_t running() const { return running_.load(); }

 private:
  struct Node {
    std::mutex mu;
    std::unordered_map<std::string, SteadyTime> running;  // container -> end
    std::vector<std::string> fresh;                       // added since the last heartbeat
    int64_t beats = 0;                                    // heartbeats built
  };
  std::vector<Node> nodes_;
  std::atomic<int64_t> running_{0};
};

struct AmInfo {
  std::string app, token;
};

// Accepts the RM's AM launches: the AM runs until the end of the bench.
class FakeContainerManager final : public v1::ContainerManager::Service {
 public:
  explicit FakeContainerManager(Fleet& fleet) : fleet_(fleet) {}
  grpc::Status StartContainers(grpc::ServerContext*, const v1::StartContainersRequest* req,
                               v1::StartContainersResponse* resp) override {
    for (const auto& r : req->requests()) {
      const auto& env = r.launch_context().env();
      auto app = env.find("MORPHEUS_APP_ID");
      auto tok = env.find("MORPHEUS_AM_TOKEN");
      if (app != env.end() && tok != env.end()) {
        std::lock_guard<std::mutex> lk(mu_);
        launched_.push_back({app->second, tok->second});
        cv_.notify_all();
      }
      fleet_.add(r.container().node_id(), r.container().container_id(), SteadyTime::max());
      resp->add_started(r.container().container_id());
    }
    return grpc::Status::OK;
  }
  // AMs launched since the last call (waits up to `wait` for one).
  std::vector<AmInfo> take(std::chrono::milliseconds wait) {
    std::unique_lock<std::mutex> lk(mu_);
    cv_.wait_for(lk, wait, [this] { return !launched_.empty(); });
    return std::exchange(launched_, {});
  }

 private:
  Fleet& fleet_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<AmInfo> launched_;  // GUARDED_BY(mu_)
};

// Channels to one address on separate TCP connections (a local subchannel
// pool each), so calls are spread over several HTTP/2 connections.
std::vector<std::shared_ptr<grpc::Channel>> makeChannels(const std::string& addr, int k) {
  std::vector<std::shared_ptr<grpc::Channel>> out;
  for (int i = 0; i < k; i++) {
    grpc::ChannelArguments args;
    args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
    args.SetMaxReceiveMessageSize(64 * 1024 * 1024);
    out.push_back(grpc::CreateCustomChannel(addr, grpc::InsecureChannelCredentials(), args));
  }
  return out;
}

// Open-loop node heartbeats (see the file comment): `senders` threads, thread
// t sends for nodes i with i % senders == t.
class HeartbeatLoad {
 public:
  HeartbeatLoad(const Options& o, Fleet& fleet, Timeline& tl,
                const std::vector<std::shared_ptr<grpc::Channel>>& channels)
      : o_(o), fleet_(fleet), tl_(tl) {
    for (const auto& c : channels) stubs_.push_back(v1::ResourceTracker::NewStub(c));
  }
  void start(SteadyTime t0) {
    for (int t = 0; t < o_.senders; t++) threads_.emplace_back([this, t, t0] { run(t, t0); });
  }
  void stop() {
    stop_ = true;
    for (auto& t : threads_) t.join();
    // Calls still in flight finish within their deadline.
    while (in_flight_.load() > 0) std::this_thread::sleep_for(10ms);
  }
  int64_t inFlight() const { return in_flight_.load(); }
  // Containers the RM ordered killed (preemption, releases).
  int64_t kills() const { return kills_.load(); }

 private:
  struct Call {
    grpc::ClientContext ctx;
    v1::NodeHeartbeatRequest req;
    v1::NodeHeartbeatResponse resp;
    int node = 0;
    SteadyTime intended;
  };
  void run(int t, SteadyTime t0) {
    const auto interval = std::chrono::milliseconds(o_.interval_ms);
    for (int64_t round = 0; !stop_; round++) {
      for (int i = t; i < o_.nodes && !stop_; i += o_.senders) {
        SteadyTime intended = t0 + round * interval + interval * i / o_.nodes;
        std::this_thread::sleep_until(intended);
        send(i, intended, *stubs_[static_cast<size_t>(i) % stubs_.size()]);
      }
    }
  }
  void send(int node, SteadyTime intended, v1::ResourceTracker::Stub& stub) {
    auto* call = new Call;
    call->node = node;
    call->intended = intended;
    call->req.set_node_id(Fleet::name(node));
    SteadyTime now = SteadyClock::now();
    fleet_.fillHeartbeat(node, now, o_.full_report_every, &call->req);
    call->ctx.set_deadline(std::chrono::system_clock::now() + 10s);
    tl_.offered(intended);
    tl_.sent(intended, secondsSince(intended, now));
    in_flight_++;
    stub.async()->NodeHeartbeat(&call->ctx, &call->req, &call->resp,
                                [this, call](grpc::Status st) { done(call, st); });
  }
  void done(Call* call, const grpc::Status& st) {
    tl_.delivered(call->intended, secondsSince(call->intended, SteadyClock::now()), st.ok());
    if (st.ok()) {
      for (const auto& k : call->resp.containers_to_kill()) fleet_.kill(call->node, k);
      kills_ += call->resp.containers_to_kill_size();
    }
    delete call;
    in_flight_--;
  }

  const Options& o_;
  Fleet& fleet_;
  Timeline& tl_;
  std::vector<std::unique_ptr<v1::ResourceTracker::Stub>> stubs_;
  std::vector<std::thread> threads_;
  std::atomic<bool> stop_{false};
  std::atomic<int64_t> in_flight_{0}, kills_{0};
};

// The AMs (see the file comment). One thread registers launched AMs and
// schedules every app's Allocate at its intended times.
class AmLoad {
 public:
  AmLoad(const Options& o, Fleet& fleet, Timeline& alloc_tl, FakeContainerManager& cm,
         std::shared_ptr<grpc::Channel> channel)
      : o_(o),
        fleet_(fleet),
        tl_(alloc_tl),
        cm_(cm),
        stub_(v1::ApplicationMaster::NewStub(channel)) {}
  void start(SteadyTime t0) {
    thread_ = std::thread([this, t0] { run(t0); });
  }
  void stop() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
    while (in_flight_.load() > 0) std::this_thread::sleep_for(10ms);
  }
  int64_t allocatedTotal() const { return allocated_.load(); }
  int64_t completionsSeen() const { return completed_.load(); }
  int64_t registerFailures() const { return register_failures_.load(); }
  // When the first ask for containers was sent (max() before that): the
  // fill is timed from there, so it includes the RM's scheduling of the asks.
  SteadyTime firstAsk() const { return SteadyTime(SteadyTime::duration(first_ask_ns_.load())); }
  int registered() const { return static_cast<int>(registered_.load()); }

 private:
  struct App {
    AmInfo am;
    std::mutex mu;
    int64_t asked = 0, received = 0;  // GUARDED_BY(mu)
    // `asked` as of the last ask the RM answered: an AM sends its ask only
    // when it changed (as YARN's AMRMClient does). Re-sending the remaining
    // count on every call raced with the heartbeats allocating in between,
    // so the RM granted up to a third more containers than the apps wanted.
    int64_t asked_acked = 0;  // GUARDED_BY(mu)
    bool in_flight = false;   // GUARDED_BY(mu)
    bool due = false;         // GUARDED_BY(mu): a call waits for the one in flight
    SteadyTime due_intended;  // GUARDED_BY(mu)
  };
  struct Call {
    grpc::ClientContext ctx;
    v1::AllocateRequest req;
    v1::AllocateResponse resp;
    App* app = nullptr;
    int64_t asked_sent = -1;  // app.asked this call's ask carried; -1 = no ask
    SteadyTime intended;
  };
  // App j's k-th call is due at t0 + k*interval + j*interval/A (A = apps
  // registered), like the heartbeats: AMs heartbeat at their own phases.
  // (All AMs calling at the same instant every second was a burst that no
  // real cluster sends; it was part of the 2,700-NM tail, see RESULTS.md.)
  void run(SteadyTime t0) {
    const auto interval = std::chrono::milliseconds(o_.interval_ms);
    SteadyTime next = t0;
    while (!stop_) {
      registerLaunched();
      next += interval;
      std::vector<App*> round;
      {
        std::lock_guard<std::mutex> lk(apps_mu_);
        for (auto& app : apps_) round.push_back(app.get());
      }
      const auto n = static_cast<int64_t>(round.size());
      for (int64_t j = 0; j < n && !stop_; j++) {
        const SteadyTime at = next + interval * j / n;
        std::this_thread::sleep_until(at);
        due(*round[static_cast<size_t>(j)], at);
      }
      if (n == 0) std::this_thread::sleep_until(next);
    }
  }
  // An AM whose registration fails (the RM refused it while its strand was
  // full, or the deadline passed) tries again next round, as morpheus-dag-am
  // retries a transient failure; it used to be dropped, and its app never ran.
  void registerLaunched() {
    std::vector<AmInfo> todo = std::exchange(unregistered_, {});
    for (AmInfo& am : cm_.take(0ms)) todo.push_back(std::move(am));
    for (const AmInfo& am : todo) {
      v1::RegisterApplicationMasterRequest r;
      r.set_application_id(am.app);
      r.set_am_token(am.token);
      v1::RegisterApplicationMasterResponse rr;
      auto ctx = makeContext(Millis(10000));
      if (!stub_->RegisterApplicationMaster(ctx.get(), r, &rr).ok()) {
        register_failures_++;
        unregistered_.push_back(am);
        continue;
      }
      auto app = std::make_unique<App>();
      app->am = am;
      app->asked = o_.per_app;
      std::lock_guard<std::mutex> lk(apps_mu_);
      apps_.push_back(std::move(app));
      registered_++;
    }
  }
  // The app's call for `intended`: sent now, or when the one in flight
  // returns.
  void due(App& app, SteadyTime intended) {
    std::lock_guard<std::mutex> lk(app.mu);
    tl_.offered(intended);
    if (app.in_flight) {
      if (!app.due) app.due_intended = intended;
      app.due = true;
      return;
    }
    sendLocked(app, intended);
  }
  void sendLocked(App& app, SteadyTime intended) {
    auto* call = new Call;
    call->app = &app;
    call->intended = intended;
    call->req.set_application_id(app.am.app);
    call->req.set_am_token(app.am.token);
    if (app.asked != app.asked_acked) {
      auto* ask = call->req.add_asks();
      ask->set_request_id("t");
      ask->set_priority(1);
      toProto(Resource(1024, 1), ask->mutable_capability());
      ask->set_count(static_cast<int32_t>(std::max<int64_t>(0, app.asked - app.received)));
      call->asked_sent = app.asked;
    }
    if (call->asked_sent > 0) {
      SteadyTime::rep none = SteadyTime::max().time_since_epoch().count();
      first_ask_ns_.compare_exchange_strong(none, SteadyClock::now().time_since_epoch().count());
    }
    call->ctx.set_deadline(std::chrono::system_clock::now() + 10s);
    app.in_flight = true;
    in_flight_++;
    stub_->async()->Allocate(&call->ctx, &call->req, &call->resp,
                             [this, call](grpc::Status st) { done(call, st); });
  }
  void done(Call* call, const grpc::Status& st) {
    SteadyTime now = SteadyClock::now();
    tl_.delivered(call->intended, secondsSince(call->intended, now), st.ok());
    App& app = *call->app;
    if (st.ok()) record(app, call->resp, now);
    {
      std::lock_guard<std::mutex> lk(app.mu);
      if (st.ok() && call->asked_sent >= 0) app.asked_acked = call->asked_sent;
      app.in_flight = false;
      if (app.due && !stop_) {
        app.due = false;
        sendLocked(app, app.due_intended);
      }
    }
    delete call;
    in_flight_--;
  }
  void record(App& app, const v1::AllocateResponse& resp, SteadyTime now) {
    thread_local std::mt19937_64 rng(std::hash<std::thread::id>()(std::this_thread::get_id()));
    std::uniform_int_distribution<int> run_s(o_.min_duration, o_.max_duration);
    for (const auto& c : resp.allocated()) {
      fleet_.add(c.node_id(), c.container_id(), now + std::chrono::seconds(run_s(rng)));
    }
    allocated_ += resp.allocated_size();
    tl_.allocated(now, resp.allocated_size());
    std::lock_guard<std::mutex> lk(app.mu);
    app.received += resp.allocated_size();
    app.asked += resp.completed_size();
    completed_ += resp.completed_size();
  }

  const Options& o_;
  Fleet& fleet_;
  Timeline& tl_;
  FakeContainerManager& cm_;
  std::unique_ptr<v1::ApplicationMaster::Stub> stub_;
  std::thread thread_;
  std::atomic<bool> stop_{false};
  std::atomic<int64_t> in_flight_{0}, allocated_{0}, registered_{0}, completed_{0};
  std::atomic<int64_t> register_failures_{0};
  std::vector<AmInfo> unregistered_;  // used by run()'s thread only
  std::atomic<SteadyTime::rep> first_ask_ns_{SteadyTime::max().time_since_epoch().count()};
  std::mutex apps_mu_;
  std::vector<std::unique_ptr<App>> apps_;  // GUARDED_BY(apps_mu_)
};

struct ProcSample {
  double cpu_s = 0;  // user + system
  long hwm_kib = 0;  // peak RSS
};

ProcSample procSample(const std::string& pid) {
  ProcSample p;
  std::ifstream st("/proc/" + pid + "/stat");
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
  p.cpu_s = static_cast<double>(ut + stt) / static_cast<double>(sysconf(_SC_CLK_TCK));
  std::ifstream s("/proc/" + pid + "/status");
  while (std::getline(s, line)) {
    if (line.rfind("VmHWM:", 0) == 0) p.hwm_kib = std::atol(line.c_str() + 6);
  }
  return p;
}

double percentileMs(std::vector<float> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t i = static_cast<size_t>(std::ceil(q * static_cast<double>(v.size()))) - 1;
  return 1000.0 * v[std::min(i, v.size() - 1)];
}

Options parse(int argc, char** argv) {
  Options o;
  std::map<std::string, int*> ints = {{"--nodes", &o.nodes},
                                      {"--apps", &o.apps},
                                      {"--per-app", &o.per_app},
                                      {"--seconds", &o.seconds},
                                      {"--max-warmup", &o.max_warmup},
                                      {"--min-settle", &o.min_settle},
                                      {"--min-duration", &o.min_duration},
                                      {"--max-duration", &o.max_duration},
                                      {"--interval-ms", &o.interval_ms},
                                      {"--senders", &o.senders},
                                      {"--channels", &o.channels},
                                      {"--full-report-every", &o.full_report_every}};
  for (int i = 1; i < argc; i++) {
    std::string a = argv[i];
    if (ints.count(a) && i + 1 < argc) {
      *ints[a] = std::atoi(argv[++i]);
    } else if (a == "--short-containers") {
      // Churn bounded by the RM, not the workload: containers of
      // 1-3 s complete faster than any RM here can refill them.
      o.min_duration = 1;
      o.max_duration = 3;
    } else if (a == "--null-rm") {
      o.null_rm = true;
    } else if (a == "--rm-bin" && i + 1 < argc) {
      o.rm_bin = argv[++i];
    } else if (a == "--rm-set" && i + 1 < argc) {
      o.rm_sets.push_back(argv[++i]);
    } else {
      std::fprintf(stderr, "bench_rm_open_load: unknown or incomplete option %s\n", a.c_str());
      std::exit(2);
    }
  }
  if (o.nodes < 1 || o.apps < 1 || o.per_app < 1 || o.seconds < 1 || o.senders < 1 ||
      o.channels < 1 || o.interval_ms < 1 || o.min_duration < 1 ||
      o.max_duration < o.min_duration || o.full_report_every < 1 || o.min_settle < 0) {
    std::fprintf(stderr, "bench_rm_open_load: option out of range\n");
    std::exit(2);
  }
  return o;
}

// Registers every node, at most kRegisterInFlight calls in flight: below
// the RM's default grpc.max-threads (256), since each RegisterNode holds a
// server thread and a call beyond the bound is answered RESOURCE_EXHAUSTED
// ("Server Threadpool Exhausted"). Prints the first failure and how many
// failed to stderr; false when any failed.
constexpr int kRegisterInFlight = 128;

bool registerNodes(const Options& o, const std::string& cm_addr,
                   const std::vector<std::shared_ptr<grpc::Channel>>& channels) {
  std::atomic<int> ok{0}, left{o.nodes};
  std::mutex err_mu;
  std::string first_error;  // GUARDED_BY(err_mu)
  std::vector<std::unique_ptr<v1::ResourceTracker::Stub>> stubs;
  for (const auto& c : channels) stubs.push_back(v1::ResourceTracker::NewStub(c));
  struct Call {
    grpc::ClientContext ctx;
    v1::RegisterNodeRequest req;
    v1::RegisterNodeResponse resp;
  };
  for (int i = 0; i < o.nodes; i++) {
    auto* call = new Call;
    call->req.set_node_id(Fleet::name(i));
    call->req.set_container_manager_address(cm_addr);
    toProto(Resource(102400, 40), call->req.mutable_total());
    call->ctx.set_deadline(std::chrono::system_clock::now() + 60s);
    stubs[static_cast<size_t>(i) % stubs.size()]->async()->RegisterNode(
        &call->ctx, &call->req, &call->resp, [&, call](grpc::Status st) {
          ok += st.ok() ? 1 : 0;
          if (!st.ok()) {
            std::lock_guard<std::mutex> lk(err_mu);
            if (first_error.empty()) first_error = call->req.node_id() + ": " + st.error_message();
          }
          delete call;
          left--;
        });
    while (i - (o.nodes - left.load()) >= kRegisterInFlight) {
      std::this_thread::sleep_for(1ms);  // bounded burst
    }
  }
  while (left.load() > 0) std::this_thread::sleep_for(5ms);
  if (ok.load() != o.nodes) {
    std::fprintf(stderr, "%d of %d registrations failed, first: %s\n", o.nodes - ok.load(), o.nodes,
                 first_error.c_str());
  }
  return ok.load() == o.nodes;
}

nlohmann::json latencyJson(const std::vector<float>& v) {
  return {{"p50", percentileMs(v, 0.50)},
          {"p90", percentileMs(v, 0.90)},
          {"p99", percentileMs(v, 0.99)},
          {"p999", percentileMs(v, 0.999)},
          {"max", percentileMs(v, 1.0)}};
}

// Share of the heartbeats scheduled in a stretch (by intended time) that
// were answered or failed by the end of the run (calls still in flight at
// the end are waited for, so a low share means the generator could not even
// send them: its send path was stalled behind the RM).
double answeredShare(const Timeline::Second& s, double scheduled) {
  return scheduled > 0 ? static_cast<double>(s.delivered + s.failed) / scheduled : 1.0;
}

// Latency, calls in flight and answered share of one stretch of the
// measured window.
nlohmann::json stretchJson(const Timeline::Second& s, double scheduled) {
  return {{"p50_ms", percentileMs(s.latencies, 0.5)},
          {"p99_ms", percentileMs(s.latencies, 0.99)},
          {"in_flight_max", s.in_flight},
          {"answered_share", answeredShare(s, scheduled)}};
}

// The backlog grew when, from the first to the last minute of the measured
// window, the median heartbeat latency rose by more than max(20 ms, half of
// the first minute's), the most calls in flight more than doubled (+100), or
// under 99% of the last minute's scheduled heartbeats were answered.
bool backlogGrew(const Timeline::Second& first, const Timeline::Second& last,
                 double scheduled_per_stretch) {
  double p50a = percentileMs(first.latencies, 0.5), p50b = percentileMs(last.latencies, 0.5);
  return p50b - p50a > std::max(20.0, 0.5 * p50a) || last.in_flight > 2 * first.in_flight + 100 ||
         answeredShare(last, scheduled_per_stretch) < 0.99;
}

struct Fill {
  double seconds = 0;         // first ask to the end of the fill
  bool reached = false;       // 95% of apps x per-app running
  int64_t allocated = 0;      // containers received by then
  double settle_seconds = 0;  // after the fill, until the heartbeat backlog drained
  bool settled = false;
};

// Fill phase: from the first ask until 95% of the containers wanted run
// (or max_warmup).
Fill fill(const Options& o, Fleet& fleet, Timeline& hb_tl, HeartbeatLoad& hb, AmLoad& am) {
  const int64_t wanted = static_cast<int64_t>(o.apps) * o.per_app * 95 / 100;
  SteadyTime begin = SteadyClock::now();
  while (secondsSince(begin, SteadyClock::now()) < o.max_warmup) {
    std::this_thread::sleep_for(50ms);
    SteadyTime now = SteadyClock::now();
    hb_tl.inFlight(now, hb.inFlight());
    if (fleet.running() - o.apps >= wanted) {
      return {secondsSince(std::min(am.firstAsk(), now), now), true, am.allocatedTotal()};
    }
  }
  SteadyTime now = SteadyClock::now();
  return {secondsSince(std::min(am.firstAsk(), now), now), false, am.allocatedTotal()};
}

// After the fill: the heartbeats queued behind the fill's scheduling drain
// before the steady state is measured. Settled when the calls in flight stay
// at most max(100, 2% of the nodes) for 3 s in a row, and at least
// min_settle has passed; gives up when the whole warm-up (fill included)
// reaches max_warmup + min_settle. The fill's and settling's latencies are
// reported apart ("before_measuring").
void settle(const Options& o, Timeline& hb_tl, HeartbeatLoad& hb, Fill& f) {
  const int64_t calm = std::max<int64_t>(100, o.nodes / 50);
  SteadyTime begin = SteadyClock::now();
  int calm_for = 0;
  auto waited = [&] { return secondsSince(begin, SteadyClock::now()); };
  while (waited() < o.min_settle ||
         (f.seconds + waited() < o.max_warmup + o.min_settle && calm_for < 6)) {
    std::this_thread::sleep_for(500ms);
    const int64_t n = hb.inFlight();
    hb_tl.inFlight(SteadyClock::now(), n);
    calm_for = n <= calm ? calm_for + 1 : 0;
  }
  f.settle_seconds = secondsSince(begin, SteadyClock::now());
  f.settled = calm_for >= 6;
}

void submitApps(const Options& o, const std::shared_ptr<grpc::Channel>& channel) {
  auto client = v1::ClientService::NewStub(channel);
  for (int a = 0; a < o.apps; a++) {
    v1::SubmitApplicationRequest req;
    req.set_name("load-" + std::to_string(a));
    req.set_user("user" + std::to_string(a % 20));
    toProto(Resource(1024, 1), req.mutable_am_resource());
    req.mutable_am_launch_context()->set_command("/bin/true");
    v1::SubmitApplicationResponse resp;
    auto ctx = makeContext(Millis(10000));
    grpc::Status st = client->SubmitApplication(ctx.get(), req, &resp);
    if (!st.ok()) std::fprintf(stderr, "submit %d: %s\n", a, st.error_message().c_str());
  }
}

struct Measured {
  double wall_s = 0;
  ProcSample rm0, rm1, self0, self1;
  int first_second = 0, end_second = 0;  // [first, end) of the timelines
  int64_t running = 0;
};

Measured measure(const Options& o, pid_t rm_pid, Fleet& fleet, Timeline& hb_tl, HeartbeatLoad& hb) {
  Measured m;
  std::string rm = std::to_string(rm_pid);
  SteadyTime m0 = SteadyClock::now();
  m.rm0 = procSample(rm);
  m.self0 = procSample("self");
  for (SteadyTime next = m0 + 1s; next <= m0 + std::chrono::seconds(o.seconds); next += 1s) {
    std::this_thread::sleep_until(next);
    hb_tl.inFlight(SteadyClock::now(), hb.inFlight());
  }
  SteadyTime m1 = SteadyClock::now();
  m.rm1 = procSample(rm);
  m.self1 = procSample("self");
  m.wall_s = secondsSince(m0, m1);
  m.first_second = hb_tl.secondOf(m0) + 1;
  m.end_second = hb_tl.secondOf(m1);
  m.running = fleet.running();
  return m;
}

nlohmann::json report(const Options& o, const Measured& m, const Timeline& hb_tl,
                      const Timeline& am_tl, const Fill& fill_s) {
  const int a = m.first_second, b = m.end_second;
  const double win = std::max(1, b - a);
  Timeline::Second hb = hb_tl.merge(a, b), am = am_tl.merge(a, b);
  const int w = std::max(1, std::min(60, (b - a) / 3));
  Timeline::Second first = hb_tl.merge(a, a + w), last = hb_tl.merge(b - w, b);
  const double scheduled_per_s = 1000.0 * o.nodes / o.interval_ms;
  nlohmann::json j;
  j["config"] = {{"nodes", o.nodes},
                 {"apps", o.apps},
                 {"per_app", o.per_app},
                 {"seconds", o.seconds},
                 {"interval_ms", o.interval_ms},
                 {"full_report_every", o.full_report_every},
                 {"null_rm", o.null_rm},
                 {"rm_bin", o.rm_bin},
                 {"rm_sets", o.rm_sets},
                 {"container_seconds", {o.min_duration, o.max_duration}}};
  j["heartbeats"] = {{"offered_per_s", scheduled_per_s},
                     {"sent_per_s", static_cast<double>(hb.sent) / win},
                     {"delivered_per_s", static_cast<double>(hb.completed) / win},
                     {"failed", hb.failed},
                     {"latency_ms", latencyJson(hb.latencies)},
                     {"generator_send_lag_ms", latencyJson(hb.send_lags)}};
  j["allocate"] = {{"offered_per_s", static_cast<double>(am.offered) / win},
                   {"failed", am.failed},
                   {"latency_ms", latencyJson(am.latencies)}};
  j["allocations_per_s"] = static_cast<double>(am.allocations) / win;
  j["fill"] = {{"seconds", fill_s.seconds},
               {"reached_95_percent", fill_s.reached},
               {"allocations_per_s",
                static_cast<double>(fill_s.allocated) / std::max(0.001, fill_s.seconds)}};
  j["fill"]["settle_seconds"] = fill_s.settle_seconds;
  j["fill"]["settled"] = fill_s.settled;
  j["before_measuring"] = {{"heartbeat_latency_ms", latencyJson(hb_tl.merge(0, a).latencies)},
                           {"allocate_latency_ms", latencyJson(am_tl.merge(0, a).latencies)}};
  // Everything from the first heartbeat to the end of the measured window,
  // the fill included: what an operator's dashboard would show for the run.
  j["from_start"] = {{"heartbeat_latency_ms", latencyJson(hb_tl.merge(0, b).latencies)},
                     {"allocate_latency_ms", latencyJson(am_tl.merge(0, b).latencies)}};
  j["containers_running"] = m.running - o.apps;
  j["backlog"] = {{"compared_seconds", w},
                  {"first", stretchJson(first, scheduled_per_s * w)},
                  {"last", stretchJson(last, scheduled_per_s * w)},
                  {"growing", backlogGrew(first, last, scheduled_per_s * w)}};
  j["rm"] = {{"cpu_cores", (m.rm1.cpu_s - m.rm0.cpu_s) / m.wall_s},
             {"peak_rss_mib", m.rm1.hwm_kib / 1024}};
  j["generator"] = {{"cpu_cores", (m.self1.cpu_s - m.self0.cpu_s) / m.wall_s},
                    {"peak_rss_mib", m.self1.hwm_kib / 1024}};
  return j;
}

void printHuman(const nlohmann::json& j) {
  const auto& hb = j["heartbeats"];
  std::printf("heartbeats: offered (scheduled) %.0f/s, sent %.0f/s, answered %.0f/s, %lld failed\n",
              hb["offered_per_s"].get<double>(), hb["sent_per_s"].get<double>(),
              hb["delivered_per_s"].get<double>(),
              static_cast<long long>(hb["failed"].get<int64_t>()));
  std::printf(
      "heartbeat latency from intended send: p50 %.1f p99 %.1f p99.9 %.1f max %.1f ms (target p99 "
      "<= 100 ms)\n",
      hb["latency_ms"]["p50"].get<double>(), hb["latency_ms"]["p99"].get<double>(),
      hb["latency_ms"]["p999"].get<double>(), hb["latency_ms"]["max"].get<double>());
  std::printf("generator send lag: p50 %.1f p99 %.1f ms\n",
              hb["generator_send_lag_ms"]["p50"].get<double>(),
              hb["generator_send_lag_ms"]["p99"].get<double>());
  std::printf("allocate latency from intended send: p50 %.1f p99 %.1f ms\n",
              j["allocate"]["latency_ms"]["p50"].get<double>(),
              j["allocate"]["latency_ms"]["p99"].get<double>());
  std::printf(
      "allocations: %.0f/s measured, %.0f/s during fill (%.1f s, 95%% reached: %s; target >= "
      "20,000/s)\n",
      j["allocations_per_s"].get<double>(), j["fill"]["allocations_per_s"].get<double>(),
      j["fill"]["seconds"].get<double>(),
      j["fill"]["reached_95_percent"].get<bool>() ? "yes" : "no");
  std::printf(
      "before measuring (fill, then %.1f s until the backlog drained%s): heartbeat p50 %.1f p99 "
      "%.1f ms, allocate p99 %.1f ms\n",
      j["fill"]["settle_seconds"].get<double>(),
      j["fill"]["settled"].get<bool>() ? "" : ", gave up at --max-warmup",
      j["before_measuring"]["heartbeat_latency_ms"]["p50"].get<double>(),
      j["before_measuring"]["heartbeat_latency_ms"]["p99"].get<double>(),
      j["before_measuring"]["allocate_latency_ms"]["p99"].get<double>());
  std::printf(
      "from the first heartbeat, fill included: heartbeat p50 %.1f p99 %.1f ms, allocate "
      "p99 %.1f ms\n",
      j["from_start"]["heartbeat_latency_ms"]["p50"].get<double>(),
      j["from_start"]["heartbeat_latency_ms"]["p99"].get<double>(),
      j["from_start"]["allocate_latency_ms"]["p99"].get<double>());
  std::printf("containers running: %lld (target >= 300,000 at 10,000 NMs)\n",
              static_cast<long long>(j["containers_running"].get<int64_t>()));
  const auto& bl = j["backlog"];
  std::printf(
      "backlog: first %ds p50 %.1f ms (in flight <= %lld, %.1f%% answered), last %ds p50 %.1f ms "
      "(in flight <= %lld, %.1f%% answered): %s\n",
      bl["compared_seconds"].get<int>(), bl["first"]["p50_ms"].get<double>(),
      static_cast<long long>(bl["first"]["in_flight_max"].get<int64_t>()),
      100 * bl["first"]["answered_share"].get<double>(), bl["compared_seconds"].get<int>(),
      bl["last"]["p50_ms"].get<double>(),
      static_cast<long long>(bl["last"]["in_flight_max"].get<int64_t>()),
      100 * bl["last"]["answered_share"].get<double>(),
      bl["growing"].get<bool>() ? "GROWING" : "steady");
  std::printf("RM: %.2f cores, peak RSS %lld MiB; generator: %.2f cores, peak RSS %lld MiB\n",
              j["rm"]["cpu_cores"].get<double>(),
              static_cast<long long>(j["rm"]["peak_rss_mib"].get<int64_t>()),
              j["generator"]["cpu_cores"].get<double>(),
              static_cast<long long>(j["generator"]["peak_rss_mib"].get<int64_t>()));
}

struct RmProcess {
  morpheus::testing::Process proc;
  std::string grpc;  // "" when it did not start
};

// Starts morpheus-rm as harness.h's startDaemon does, from `o.rm_bin` when
// set (an older build, for side-by-side figures).
RmProcess startRm(const Options& o, const std::string& dir) {
  std::vector<std::string> args = {"--set", "rm.node-expiry=60s",   "--set", "log.level=warn",
                                   "--set", "rm.auth-disabled=true"};
  for (const auto& kv : o.rm_sets) {
    args.push_back("--set");
    args.push_back(kv);
  }
  if (o.rm_bin.empty()) {
    auto p = morpheus::testing::Process::startDaemon("rm", dir, args);
    std::string grpc = p.grpcAddress();
    return {std::move(p), grpc};
  }
  std::vector<std::string> all = {"--data-dir", dir, "--grpc-port", "0", "--http-port", "0"};
  all.insert(all.end(), args.begin(), args.end());
  RmProcess rm{morpheus::testing::Process::start(o.rm_bin, all, dir + ".log"), ""};
  const std::string ep = dir + "/rm.endpoints.json";
  for (int i = 0; i < 2000 && rm.grpc.empty() && rm.proc.running(); i++) {
    std::this_thread::sleep_for(10ms);
    std::ifstream in(ep);
    auto j = nlohmann::json::parse(in, nullptr, false);
    if (!j.is_discarded()) rm.grpc = j.value("grpc", "");
  }
  return rm;
}

}  // namespace

int main(int argc, char** argv) {
  disableAbseilDeadlockDetection();  // common/mutex_tuning.h: else gRPC caps the load
  bench::BenchReport out("rm_open_load", &argc, argv);
  const Options o = parse(argc, argv);
  bench::NullRm null_rm;  // forked before this process creates any gRPC object
  if (o.null_rm) {
    null_rm = bench::startNullRm();
    if (null_rm.address.empty()) {
      std::fprintf(stderr, "the null RM did not start\n");
      return 1;
    }
  }
  auto say = [](const std::string& s) {
    std::printf("%s\n", s.c_str());
    std::fflush(stdout);
  };
  say("== rm-open-load: " + std::to_string(o.nodes) + " NMs (40 vcores) at " +
      std::to_string(o.interval_ms) + " ms, " + std::to_string(o.apps) + " apps x " +
      std::to_string(o.per_app) + " containers, " + std::to_string(o.seconds) + " s measured ==");
  Fleet fleet(o.nodes);
  FakeContainerManager cm(fleet);
  grpc::ServerBuilder sb;
  int cm_port = 0;
  sb.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &cm_port);
  sb.RegisterService(&cm);
  auto cm_server = sb.BuildAndStart();
  RmProcess rm;
  pid_t rm_pid = null_rm.pid;
  std::string rm_addr = null_rm.address;
  if (!o.null_rm) {
    rm = startRm(o, morpheus::testing::freshDir("rm-open-load"));
    if (rm.grpc.empty()) {
      std::fprintf(stderr, "RM did not start: %s\n", rm.proc.log().c_str());
      return 1;
    }
    rm_pid = rm.proc.pid();
    rm_addr = rm.grpc;
  }
  auto channels = makeChannels(rm_addr, o.channels);
  if (!registerNodes(o, "127.0.0.1:" + std::to_string(cm_port), channels)) {
    std::fprintf(stderr, "node registration failed\n");
    return 1;
  }
  // Clients and AMs connect on their own (not behind a heartbeat backlog).
  auto control = makeChannels(rm_addr, 1).front();
  // Apps are submitted before the heartbeat load starts: at 10,000 NMs a
  // saturated RM answered SubmitApplication about once a second (some past
  // their 10 s deadline), so submitting 600 apps under load took longer than
  // the run. Their AMs are placed once heartbeats begin; the fill is timed
  // from the first ask.
  if (!o.null_rm) submitApps(o, control);
  SteadyTime t0 = SteadyClock::now() + 100ms;
  Timeline hb_tl(t0), am_tl(t0);
  HeartbeatLoad hb(o, fleet, hb_tl, channels);
  AmLoad am(o, fleet, am_tl, cm, control);
  Fill fill_s;
  hb.start(t0);
  if (!o.null_rm) {
    am.start(t0);
    say("filling (at most " + std::to_string(o.max_warmup) + " s)...");
    fill_s = fill(o, fleet, hb_tl, hb, am);
    say("settling (heartbeats queued during the fill drain)...");
    settle(o, hb_tl, hb, fill_s);
  }
  say("measuring...");
  Measured m = measure(o, rm_pid, fleet, hb_tl, hb);
  hb.stop();
  am.stop();
  nlohmann::json j = report(o, m, hb_tl, am_tl, fill_s);
  j["whole_run"] = {{"allocated", am.allocatedTotal()},
                    {"completions_seen_by_ams", am.completionsSeen()},
                    {"ams_registered", am.registered()},
                    {"am_register_failures", am.registerFailures()},
                    {"killed_by_rm", hb.kills()}};
  printHuman(j);
  cm_server->Shutdown();
  if (o.null_rm) {
    kill(null_rm.pid, SIGTERM);
    waitpid(null_rm.pid, nullptr, 0);
  } else {
    rm.proc.signalAndWait(SIGTERM, 10s);
  }
  out.figures() = j;
  out.targets() = {{"heartbeat_p99_ms_max", 100},
                   {"fill_allocations_per_s_min", 20000},
                   {"containers_running_min", 300000},
                   {"backlog_growing", false},
                   {"note",
                    "targets at 10,000 NMs; at 2,700 NMs: 2x the closed-loop "
                    "bench_rm_load's allocations/s at equal or lower p99"}};
  out.emit();
  return 0;
}
