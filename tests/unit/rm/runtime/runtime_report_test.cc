// RmRuntime fed change-only node reports (NMs list only new and
// completed containers between full reports, nodemanager/heartbeat_report.h)
// decides exactly as when fed full reports. Each run has its own RM (real
// RmCore, AppManager over SQLite, RmRuntime: tests/support/inproc_rm.h under
// a scripted plan) on its own virtual clock with the same start, so container
// ids and decisions can be compared verbatim.
#include <gtest/gtest.h>

#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "../test_db.h"
#include "common/wire.h"
#include "inproc_rm.h"
#include "rm/runtime/runtime.h"
#include "scripted_plan.h"

namespace morpheus::rm {
namespace {

// One RM and the NMs and AMs around it, played by direct calls.
class World {
 public:
  World(const std::string& tag, int full_every) : full_every_(full_every) {
    testing::InProcRmOptions o;
    o.state_store = freshTestDb(tag);
    o.token_secret = "secret";
    o.apps.queues = {"root.a", "root.b", "root.default"};
    o.runtime.queue_weights = {{"root.a", 3}, {"root.b", 1}};
    o.runtime.preemption_grace = Millis(1000);
    o.scripted_plan = scriptedR1Plan(&guarantee_);
    auto rm = testing::InProcRm::start(clock_, std::move(o));
    EXPECT_TRUE(rm.isOk()) << rm.status().toString();
    rm_ = std::move(rm).value();
  }

  void addNode(const std::string& id, int vcores) {
    Status st = rm_->registerNode(testing::nodeRegistration(id, vcores));
    ASSERT_TRUE(st.isOk()) << st.toString();
    nodes_[id];
  }

  // Submits an app and runs its AM (placed by a heartbeat of `node`).
  AppId runningApp(const std::string& queue, const std::string& node,
                   const std::string& reservation = "") {
    AppSpec s;
    s.name = "app";
    s.user = UserId("u-" + queue);
    s.queue = queue;
    s.reservation = ReservationId(reservation);
    s.am_resource = Resource(1024, 1);
    s.am_launch_context = "x";
    AppId id = rm_->apps().submit(s, [](const BindTarget&) { return Status::ok(); })->id;
    heartbeat(node);
    EXPECT_TRUE(rm_->registerAm(id).isOk());
    return id;
  }

  // The AM's allocate: asks for `count` more (replacing its ask) and starts
  // what it got on the simulated NMs, each running 2-4 s.
  void allocate(const AppId& app, int count, const std::vector<std::string>& releases = {}) {
    v1::AllocateRequest req = testing::taskAsk(app, rm_->apps().amToken(app, 1), count);
    for (const auto& r : releases) req.add_releases(r);
    v1::AllocateResponse resp;
    ASSERT_TRUE(rm_->allocate(req, &resp).isOk());
    std::ostringstream line;
    line << "alloc " << app.value() << ":";
    for (const auto& c : resp.allocated()) {
      line << " " << c.container_id() << "@" << c.node_id();
      Millis run(2000 + 1000 * (started_++ % 3));
      nodes_[c.node_id()].containers[c.container_id()] = {clock_.now() + run, false, false};
    }
    line << " completed:";
    for (const auto& c : resp.completed()) line << " " << c.container_id();
    trace_.push_back(line.str());
  }

  // One heartbeat of `node` as the NM reports (full every full_every-th).
  void heartbeat(const std::string& node) {
    SimNm& nm = nodes_[node];
    const bool full = nm.beats++ % full_every_ == 0;
    v1::NodeHeartbeatRequest req;
    req.set_node_id(node);
    int32_t running = 0;
    for (auto& [id, c] : nm.containers) {
      if (!c.done && c.end <= clock_.now()) c.done = true;
      if (!c.done) running++;
      if (!c.done && !full && c.reported) continue;
      auto* s = req.add_container_statuses();
      s->set_container_id(id);
      s->set_state(c.done ? v1::CONTAINER_COMPLETE : v1::CONTAINER_RUNNING);
      c.reported = true;
    }
    req.set_changes_only(!full);
    req.set_running_containers(running);
    v1::NodeHeartbeatResponse resp;
    Status st = rm_->nodeHeartbeat(req, &resp);
    EXPECT_TRUE(st.isOk()) << st.toString();
    std::ostringstream line;
    line << "hb " << node << " kill:";
    for (const auto& k : resp.containers_to_kill()) {
      line << " " << k;
      if (auto it = nm.containers.find(k); it != nm.containers.end()) it->second.end = clock_.now();
    }
    line << " ack:";
    for (const auto& k : resp.containers_to_acknowledge()) {
      line << " " << k;
      nm.containers.erase(k);
    }
    trace_.push_back(line.str());
  }

  // A container the NM still runs that the RM took for gone.
  void nodeLost(const std::string& node) { rm_->runtime().onNodeLost(NodeId(node)); }
  // A container of `app` (its AM excluded) that `node` runs; "" if none.
  std::string runningOf(const std::string& node, const AppId& app) const {
    for (const auto& [id, c] : nodes_.at(node).containers) {
      if (!c.done && RmRuntime::appOf(id) == app) return id;
    }
    return "";
  }

  VirtualClock clock_{fromEpochMs(1800000000000)};
  Resource guarantee_;
  std::vector<std::string> trace_;

 private:
  struct SimContainer {
    TimePoint end;
    bool done = false;      // completed, reported until acknowledged
    bool reported = false;  // its RUNNING status was sent once
  };
  struct SimNm {
    std::map<std::string, SimContainer> containers;
    int64_t beats = 0;
  };
  const int full_every_;
  int64_t started_ = 0;
  std::map<std::string, SimNm> nodes_;
  std::unique_ptr<testing::InProcRm> rm_;
};

// Two queues churning 2-4 s containers on two nodes, a release, and a
// reservation whose guarantee rises mid-run (so borrowed containers are
// preempted): every allocation, completion, kill and acknowledgement.
std::vector<std::string> churn(int full_every) {
  World w("rt-report-" + std::to_string(full_every), full_every);
  w.addNode("n1", 6);
  w.addNode("n2", 6);
  AppId a = w.runningApp("root.a", "n1");
  AppId b = w.runningApp("root.b", "n2");
  AppId r = w.runningApp("root.a", "n1", "r1");
  for (int round = 0; round < 16; round++) {
    w.clock_.advance(Millis(1000));
    if (round == 8) w.guarantee_ = Resource(4096, 4);
    w.allocate(a, 6);
    w.allocate(b, 6);
    w.allocate(r, round >= 8 ? 4 : 0);
    if (round == 5) {
      std::string victim = w.runningOf("n1", a);
      EXPECT_FALSE(victim.empty());
      if (!victim.empty()) w.allocate(a, 6, {victim});
    }
    w.heartbeat("n1");
    w.heartbeat("n2");
  }
  return w.trace_;
}

}  // namespace

// Change-only reports (full every 3rd or 10th) give the same decisions as a full report on every
// heartbeat.
TEST(RuntimeReportTest, ChangeReportsDecideAsFullReports) {
  std::vector<std::string> full = churn(1);
  ASSERT_GE(full.size(), 80u);
  int kills = 0;
  for (const auto& line : full) kills += line.find("kill: ") != std::string::npos ? 1 : 0;
  ASSERT_GT(kills, 0) << "the run must kill (release, preemption)";
  EXPECT_EQ(churn(3), full);
  EXPECT_EQ(churn(10), full);
}

// A container the RM took for gone (its node was lost) but the NM still runs is ordered killed at
// the NM's next full report, within full_every heartbeats; change reports before it do not.
TEST(RuntimeReportTest, ContainerTheRmTookForGoneIsKilledAtTheNextFullReport) {
  World w("rt-report-lost", 3);
  w.addNode("n1", 4);
  AppId a = w.runningApp("root.a", "n1");  // heartbeat 0: full
  w.allocate(a, 2);
  w.heartbeat("n1");  // 1: the RM grants
  w.allocate(a, 0);   // the AM starts them
  w.heartbeat("n1");  // 2: change report listing them
  w.heartbeat("n1");  // 3: full
  std::string c = w.runningOf("n1", a);
  ASSERT_FALSE(c.empty());
  w.nodeLost("n1");
  size_t before = w.trace_.size();
  for (int i = 0; i < 3; i++) w.heartbeat("n1");  // 4, 5: change reports; 6: full
  ASSERT_EQ(w.trace_.size(), before + 3);
  auto killed = [&](const std::string& line) { return line.find(c) < line.find(" ack:"); };
  EXPECT_FALSE(killed(w.trace_[before])) << w.trace_[before];
  EXPECT_FALSE(killed(w.trace_[before + 1])) << w.trace_[before + 1];
  EXPECT_TRUE(killed(w.trace_[before + 2])) << w.trace_[before + 2];
}

}  // namespace morpheus::rm
