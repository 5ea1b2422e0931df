// RmRuntime scheduling with its real collaborators (RmCore, AppManager over
// SQLite, wired by tests/support/inproc_rm.h under a scripted plan) and the
// virtual clock; NMs and AMs are played by direct calls with the wire
// messages. No AM is actually launched (the launcher is not started), except
// in RuntimeAmLaunchTest at the end: there the runtime runs and launches AMs
// over gRPC on a scripted in-process ContainerManager.
#include "rm/runtime/runtime.h"

#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

#include "common/wire.h"
#include "inproc_rm.h"
#include "scripted_plan.h"

#include "../test_db.h"

namespace morpheus::rm {
namespace {

class RuntimeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    testing::InProcRmOptions o;
    o.state_store = freshTestDb("rt");
    o.token_secret = "secret";
    o.apps.queues = {"root.a", "root.b", "root.default", "root.p.x", "root.p.y"};
    o.runtime.queue_weights = {
        {"root.a", 3}, {"root.b", 1}, {"root.p", 1}, {"root.p.x", 3}, {"root.p.y", 1}};
    o.runtime.preemption_grace = Millis(1000);
    o.scripted_plan = scriptedR1Plan(&guarantee_);
    auto rm = testing::InProcRm::start(clock_, std::move(o));
    ASSERT_TRUE(rm.isOk()) << rm.status().toString();
    rm_ = std::move(rm).value();
  }
  // `address`: the node's ContainerManager (nothing listens at the default).
  void addNode(const std::string& id, int vcores, std::map<std::string, std::string> attrs = {},
               const std::string& address = "127.0.0.1:1") {
    Status st = rm_->registerNode(testing::nodeRegistration(id, vcores, attrs, address));
    ASSERT_TRUE(st.isOk()) << st.toString();
  }
  v1::NodeHeartbeatResponse heartbeat(const std::string& node,
                                      std::vector<v1::ContainerStatus> statuses = {}) {
    v1::NodeHeartbeatRequest req;
    req.set_node_id(node);
    for (auto& s : statuses) *req.add_container_statuses() = s;
    v1::NodeHeartbeatResponse resp;
    Status st = rm_->nodeHeartbeat(req, &resp);
    EXPECT_TRUE(st.isOk()) << st.toString();
    return resp;
  }
  // Node `id` (4 vcores) registers with the runtime only, as after an RM
  // restart when the core knows it already.
  void reregister(const std::string& id) {
    rm_->runtime().onNodeRegistered(
        {NodeId(id), "127.0.0.1:1", "", Resource(4 * 1024, 4), /*attributes=*/{}});
  }
  // Submits an app and starts its AM (AM container placed by a heartbeat of `node`).
  AppId runningApp(const std::string& queue, const std::string& user, const std::string& node,
                   const std::string& reservation = "", const std::string& key = "") {
    AppSpec s;
    s.name = "app";
    s.user = UserId(user);
    s.queue = queue;
    s.reservation = ReservationId(reservation);
    s.recurrence_key = JobKey(key);
    s.am_resource = Resource(1024, 1);
    s.am_launch_context = "x";
    AppId id = rm_->apps().submit(s, [](const BindTarget&) { return Status::ok(); })->id;
    heartbeat(node);
    EXPECT_EQ(rm_->apps().get(id)->state, AppState::kRunning);
    EXPECT_TRUE(rm_->registerAm(id).isOk());
    return id;
  }
  v1::AllocateResponse ask(const AppId& app, int count, int gang = 0,
                           std::vector<v1::PlacementConstraint> cons = {}) {
    v1::AllocateRequest req = stageReport(app);
    if (count >= 0) {
      req = testing::taskAsk(app, rm_->apps().amToken(app, 1), count);
      auto* a = req.mutable_asks(0);
      a->set_gang_size(gang);
      for (auto& c : cons) *a->add_constraints() = c;
    }
    v1::AllocateResponse resp;
    Status st = rm_->allocate(req, &resp);
    EXPECT_TRUE(st.isOk()) << st.toString();
    return resp;
  }
  Status finish(const AppId& app, const v1::AllocateRequest& final_report = {}) {
    v1::FinishApplicationMasterRequest req;
    req.set_application_id(app.value());
    req.set_am_token(rm_->apps().amToken(app, 1));
    req.set_final_status(v1::FINAL_STATUS_SUCCEEDED);
    *req.mutable_stages() = final_report.stages();
    return rm_->finishAm(req);
  }
  // An AllocateRequest of `app` carrying only stage reports.
  v1::AllocateRequest stageReport(const AppId& app) {
    v1::AllocateRequest req;
    req.set_application_id(app.value());
    req.set_am_token(rm_->apps().amToken(app, 1));
    return req;
  }
  static v1::StageReport* addStage(v1::AllocateRequest& req, const std::string& name, int tasks,
                                   int completed, int64_t mean_ms,
                                   std::vector<std::string> deps = {}) {
    auto* st = req.add_stages();
    st->set_name(name);
    st->set_tasks(tasks);
    st->set_completed(completed);
    st->set_mean_task_ms(mean_ms);
    for (const auto& d : deps) st->add_depends_on(d);
    return st;
  }
  // Bob's app bound to reservation r1, which guarantees 2 vcores from now on.
  AppId submitReserved() {
    guarantee_ = Resource(2048, 2);
    AppSpec s;
    s.name = "reserved";
    s.user = UserId("bob");
    s.reservation = ReservationId("r1");
    s.am_resource = Resource(1024, 1);
    s.am_launch_context = "x";
    return rm_->apps().submit(s, [](const BindTarget&) { return Status::ok(); })->id;
  }
  int running(const AppId& app) {
    int32_t n = 0;
    Resource used;
    rm_->runtime().usage(app, &n, &used);
    return n;
  }

  VirtualClock clock_{fromEpochMs(1800000000000)};
  Resource guarantee_;  // of reservation r1 (scriptedR1Plan)
  std::unique_ptr<testing::InProcRm> rm_;
};

TEST_F(RuntimeTest, AdHocQueuesShareByWeight) {
  addNode("n1", 8);
  AppId a = runningApp("root.a", "alice", "n1");
  AppId b = runningApp("root.b", "bob", "n1");
  ask(a, 20);
  ask(b, 20);
  heartbeat("n1");
  // 8 vcores, weights 3:1 -> 6 : 2 (AM containers included).
  EXPECT_EQ(running(a), 6);
  EXPECT_EQ(running(b), 2);
  EXPECT_EQ(ask(a, -1).allocated_size(), 5);
}

TEST_F(RuntimeTest, QueueHierarchySharesAtEachLevel) {
  addNode("n1", 16);
  AppId b = runningApp("root.b", "bob", "n1");     // weight 1 at the top level
  AppId x = runningApp("root.p.x", "xena", "n1");  // root.p (weight 1) > x (3)
  AppId y = runningApp("root.p.y", "yann", "n1");  // root.p (weight 1) > y (1)
  ask(b, 30);
  ask(x, 30);
  ask(y, 30);
  heartbeat("n1");
  // Top level: root.b and root.p split 16 vcores 8 : 8; inside root.p, x : y = 3 : 1 -> 6 : 2.
  EXPECT_EQ(running(b), 8);
  EXPECT_EQ(running(x), 6);
  EXPECT_EQ(running(y), 2);
}

TEST_F(RuntimeTest, DrfBetweenUsersInsideAQueue) {
  addNode("n1", 8);
  AppId a1 = runningApp("root.a", "alice", "n1");
  AppId a2 = runningApp("root.a", "alice", "n1");
  AppId c = runningApp("root.a", "carol", "n1");
  ask(a1, 10);
  ask(a2, 10);
  ask(c, 10);
  heartbeat("n1");
  // alice has 2 AMs, carol 1: the 5 free vcores even out the users: 4 : 4.
  EXPECT_EQ(running(a1) + running(a2), 4);
  EXPECT_EQ(running(c), 4);
}

TEST_F(RuntimeTest, GangsAreAllOrNothingAndHardConstraintsBind) {
  addNode("n1", 4, {{"rack", "r1"}});
  addNode("n2", 4, {{"rack", "r2"}});
  AppId a = runningApp("root.a", "alice", "n1");  // AM on n1: 3 vcores left there
  v1::PlacementConstraint onR2;
  onR2.set_key("rack");
  onR2.add_values("r2");
  onR2.set_hard(true);
  ask(a, 4, 4, {onR2});
  heartbeat("n1");
  EXPECT_EQ(running(a), 1) << "nothing on r1";
  heartbeat("n2");
  auto r = ask(a, -1);
  ASSERT_EQ(r.allocated_size(), 4);
  for (const auto& c : r.allocated()) EXPECT_EQ(c.node_id(), "n2");
}

TEST_F(RuntimeTest, SoftConstraintsArePreferencesThatExpire) {
  addNode("n1", 4, {{"disk", "hdd"}});
  addNode("n2", 4, {{"disk", "ssd"}});
  AppId a = runningApp("root.a", "alice", "n1");
  v1::PlacementConstraint ssd;
  ssd.set_key("disk");
  ssd.add_values("ssd");
  ssd.set_hard(false);
  ask(a, 1, 0, {ssd});
  heartbeat("n1");
  EXPECT_EQ(running(a), 1) << "n1 lacks the preferred attribute: wait";
  heartbeat("n2");
  EXPECT_EQ(running(a), 2);
  auto r = ask(a, -1);
  ASSERT_EQ(r.allocated_size(), 1);
  EXPECT_EQ(r.allocated(0).node_id(), "n2");
  // A new ask; only n1 heartbeats: it is used once the ask waited its patience.
  ask(a, 1, 0, {ssd});
  heartbeat("n1");
  EXPECT_EQ(running(a), 2);
  clock_.advance(Millis(3500));
  heartbeat("n1");
  EXPECT_EQ(running(a), 3);
}

TEST_F(RuntimeTest, ReservationPreemptsBorrowedContainersAfterTheGrace) {
  addNode("n1", 4);
  AppId adhoc = runningApp("root.a", "alice", "n1");
  ask(adhoc, 10);
  heartbeat("n1");
  ASSERT_EQ(running(adhoc), 4);
  // A reservation whose allocation starts now: 2 vcores guaranteed.
  AppId res = submitReserved();
  clock_.advance(Millis(300));  // the preemption pass runs at most every 250 ms
  heartbeat("n1");
  auto notices = ask(adhoc, -1);
  ASSERT_EQ(notices.preemptions_size(), 1);
  EXPECT_EQ(rm_->apps().get(res)->state, AppState::kSubmitted);
  clock_.advance(Millis(1200));
  auto resp = heartbeat("n1");
  ASSERT_EQ(resp.containers_to_kill_size(), 1);
  EXPECT_EQ(resp.containers_to_kill(0), notices.preemptions(0).container_id());
  // The NM reports it killed; the reservation's AM gets the room at once.
  v1::ContainerStatus st;
  st.set_container_id(resp.containers_to_kill(0));
  st.set_state(v1::CONTAINER_COMPLETE);
  st.set_exit_status(137);
  heartbeat("n1", {st});
  EXPECT_EQ(rm_->apps().get(res)->state, AppState::kRunning);
  auto done = ask(adhoc, -1);
  ASSERT_EQ(done.completed_size(), 1);
  EXPECT_EQ(done.completed(0).exit_reason(), v1::EXIT_REASON_PREEMPTED);
}

// Asynchronous scheduling: the report part of a heartbeat acks
// completions and grants nothing; scheduleNode grants; only one scheduling
// per node is asked for until it ran; a kill that scheduling chooses goes out
// with the node's next report.
TEST_F(RuntimeTest, ReportAnswersAtOnceAndSchedulingFollowsOncePerNode) {
  addNode("n1", 4);
  AppId adhoc = runningApp("root.a", "alice", "n1");
  ask(adhoc, 10);
  rm::NodeHeartbeatCall req;  // copied into each report (the runtime consumes it)
  req.node = NodeId("n1");
  rm::NodeHeartbeatAnswer resp;
  EXPECT_TRUE(rm_->runtime().onNodeReport(req, &resp));
  EXPECT_EQ(running(adhoc), 1);  // the AM only: nothing granted yet
  rm::NodeHeartbeatAnswer again;
  EXPECT_FALSE(rm_->runtime().onNodeReport(req, &again));  // its scheduling is pending
  rm_->runtime().scheduleNode(NodeId("n1"));
  EXPECT_EQ(running(adhoc), 4);
  EXPECT_TRUE(rm_->runtime().onNodeReport(req, &again));  // ran: the next report asks again
  rm_->runtime().scheduleNode(NodeId("n1"));
  rm_->runtime().scheduleNode(NodeId("gone"));  // a node the RM does not know: nothing happens

  // A reservation needs 2 vcores: scheduling picks the victim after the grace;
  // the kill reaches the NM in the next report's answer.
  (void)submitReserved();
  clock_.advance(Millis(300));
  ASSERT_TRUE(rm_->runtime().onNodeReport(req, &again));
  rm_->runtime().scheduleNode(NodeId("n1"));
  clock_.advance(Millis(1200));
  rm::NodeHeartbeatAnswer before_kill;
  ASSERT_TRUE(rm_->runtime().onNodeReport(req, &before_kill));
  EXPECT_EQ(before_kill.to_kill.size(), 0u);
  rm_->runtime().scheduleNode(NodeId("n1"));  // the grace is over: the victim is chosen now
  rm::NodeHeartbeatAnswer with_kill;
  (void)rm_->runtime().onNodeReport(req, &with_kill);
  EXPECT_EQ(with_kill.to_kill.size(), 1u);
}

// The reservation's app is gone before the grace ends, so the
// notice is withdrawn: nothing is killed, and the container ending later on
// its own is not reported as preempted.
TEST_F(RuntimeTest, WithdrawnNoticeKillsNothingAndIsNotReportedPreempted) {
  addNode("n1", 4);
  AppId adhoc = runningApp("root.a", "alice", "n1");
  ask(adhoc, 10);
  heartbeat("n1");
  ASSERT_EQ(running(adhoc), 4);
  AppId res = submitReserved();
  clock_.advance(Millis(300));
  heartbeat("n1");
  auto notices = ask(adhoc, -1);
  ASSERT_EQ(notices.preemptions_size(), 1);
  ASSERT_TRUE(rm_->apps().kill(res, UserId("bob"), true, "changed my mind").isOk());
  clock_.advance(Millis(1200));
  EXPECT_EQ(heartbeat("n1").containers_to_kill_size(), 0);
  v1::ContainerStatus st;
  st.set_container_id(notices.preemptions(0).container_id());
  st.set_state(v1::CONTAINER_COMPLETE);
  st.set_exit_status(0);
  heartbeat("n1", {st});
  auto done = ask(adhoc, -1);
  ASSERT_EQ(done.completed_size(), 1);
  EXPECT_NE(done.completed(0).exit_reason(), v1::EXIT_REASON_PREEMPTED);
}

// The DRA input per reservation: containers in use (AM included) and pending asks.
TEST_F(RuntimeTest, ReservationDemandSumsItsBoundApps) {
  addNode("n1", 4);
  AppId adhoc = runningApp("root.a", "alice", "n1");
  AppId res = runningApp("root.a", "bob", "n1", "r1");
  v1::AllocateRequest req;
  req.set_application_id(res.value());
  req.set_am_token(rm_->apps().amToken(res, 1));
  auto* a = req.add_asks();
  a->set_request_id("tasks");
  toProto(Resource(1024, 1), a->mutable_capability());
  a->set_count(5);
  v1::AllocateResponse resp;
  ASSERT_TRUE(rm_->allocate(req, &resp).isOk());
  heartbeat("n1");  // 2 of the 5 fit next to the two AMs
  ask(adhoc, 0);
  auto demand = rm_->runtime().reservationDemand();
  ASSERT_EQ(demand.size(), 1u);
  const ReservationDemand& d = demand.at(ReservationId("r1"));
  EXPECT_EQ(d.apps, std::vector<AppId>{res});
  EXPECT_EQ(d.used, Resource(3 * 1024, 3));
  EXPECT_EQ(d.am, Resource(1024, 1));
  EXPECT_EQ(d.pending, Resource(3 * 1024, 3));
}

// Jockey's input: the AM's stage reports reach the demand; a stage the run has
// not measured yet takes its duration from the key's last successful run.
TEST_F(RuntimeTest, StageReportsReachDemandWithDurationsFromTheLastRun) {
  addNode("n1", 4);
  AppId first = runningApp("root.a", "bob", "n1", "r1", "nightly");
  auto req = stageReport(first);
  addStage(req, "map", 4, 4, 10000);
  addStage(req, "reduce", 2, 2, 20000, {"map"});
  v1::AllocateResponse resp;
  ASSERT_TRUE(rm_->allocate(req, &resp).isOk());
  ASSERT_TRUE(finish(first).isOk());

  AppId next = runningApp("root.a", "bob", "n1", "r1", "nightly");
  req = stageReport(next);
  addStage(req, "map", 4, 1, 12000)->add_running_elapsed_ms(3000);
  addStage(req, "reduce", 2, 0, 0, {"map"});
  ASSERT_TRUE(rm_->allocate(req, &resp).isOk());
  auto stages = rm_->runtime().reservationDemand().at(ReservationId("r1")).stages;
  ASSERT_EQ(stages.size(), 2u);
  EXPECT_EQ(stages[0].task_duration, Millis(12000)) << "this run's own measurement";
  EXPECT_EQ(stages[0].running, std::vector<Millis>{Millis(3000)});
  EXPECT_EQ(stages[1].task_duration, Millis(20000)) << "from the last run of 'nightly'";
  EXPECT_EQ(stages[1].deps, std::vector<size_t>{0});
  auto saved = rm_->store().get("stage-history", "nightly");
  ASSERT_TRUE(saved.isOk() && saved->has_value());

  // A bad report names its field and leaves the previous one in place.
  req = stageReport(next);
  addStage(req, "map", 4, 1, 12000);
  addStage(req, "reduce", 2, 0, 0, {"mapp"});
  Status st = rm_->allocate(req, &resp);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("stages[1].depends_on"), std::string::npos) << st.message();
  EXPECT_EQ(rm_->runtime().reservationDemand().at(ReservationId("r1")).stages[0].running.size(),
            1u);
  req = stageReport(next);
  auto* over = addStage(req, "map", 4, 3, 0);
  over->add_running_elapsed_ms(1);
  over->add_running_elapsed_ms(1);  // 2 running of 1 unfinished
  st = rm_->allocate(req, &resp);
  EXPECT_NE(st.message().find("stages[0].running_elapsed_ms"), std::string::npos) << st.message();
}

// The history is the final stage report sent with the finish (the last
// allocate may predate the last tasks); it survives an RM restart (state store
// table "stage-history"). A bad final report is refused before the app ends.
TEST_F(RuntimeTest, StageHistoryIsRecoveredAfterARestart) {
  addNode("n1", 4);
  AppId first = runningApp("root.a", "bob", "n1", "r1", "nightly");
  auto req = stageReport(first);
  addStage(req, "map", 2, 1, 5000);
  v1::AllocateResponse resp;
  ASSERT_TRUE(rm_->allocate(req, &resp).isOk());
  auto bad = stageReport(first);
  addStage(bad, "map", 2, 3, 7000);
  Status st = finish(first, bad);
  EXPECT_NE(st.message().find("stages[0].completed"), std::string::npos) << st.message();
  EXPECT_EQ(rm_->apps().get(first)->state, AppState::kRunning);
  auto final_report = stageReport(first);
  addStage(final_report, "map", 2, 2, 7000);
  ASSERT_TRUE(finish(first, final_report).isOk());
  AppId next = runningApp("root.a", "bob", "n1", "r1", "nightly");

  ASSERT_TRUE(rm_->replaceRuntime({}).isOk());  // restarted: telemetry recovered from the store
  ASSERT_TRUE(rm_->registerAm(next).isOk());
  req = stageReport(next);
  addStage(req, "map", 2, 0, 0);
  ASSERT_TRUE(rm_->allocate(req, &resp).isOk());
  auto stages = rm_->runtime().reservationDemand().at(ReservationId("r1")).stages;
  ASSERT_EQ(stages.size(), 1u);
  EXPECT_EQ(stages[0].task_duration, Millis(7000));
}

// An AM that exited while no RM was up (restart or HA failover) is reported
// complete by its re-registered NM to an RM that never knew the container:
// the attempt still ends (next attempt), instead of the app staying RUNNING
// with no AM. An unknown completed task container is only acknowledged.
TEST_F(RuntimeTest, AmThatExitedWhileNoRmWatchedEndsItsAttempt) {
  addNode("n1", 4);
  AppId app = runningApp("root.a", "bob", "n1");
  const ContainerId am = rm_->apps().get(app)->am_container;
  ASSERT_FALSE(am.value().empty());
  ASSERT_EQ(rm_->apps().get(app)->attempt, 1);

  ASSERT_TRUE(rm_->replaceRuntime({}).isOk());
  reregister("n1");  // the NM re-registers with the new RM
  v1::ContainerStatus exited;
  exited.set_container_id(am.value());
  exited.set_state(v1::CONTAINER_COMPLETE);
  exited.set_exit_status(1);
  toProto(Resource(1024, 1), exited.mutable_resource());
  v1::ContainerStatus task = exited;
  task.set_container_id(am.value() + "-not-an-am");
  auto resp = heartbeat("n1", {exited, task});
  EXPECT_EQ(resp.containers_to_acknowledge_size(), 2);
  auto rec = rm_->apps().get(app);
  ASSERT_TRUE(rec.isOk());
  EXPECT_EQ(rec->attempt, 2) << "the exit ended attempt 1 and the next AM was placed";
  EXPECT_NE(rec->am_container, am);
}

// A node reports only on containers the RM allocated to it: another node's
// COMPLETE status for the AM container (known to this RM, or known only from
// the app's record after a restart) is ignored, neither ending the attempt
// nor acknowledged; the AM's own node still ends it.
TEST_F(RuntimeTest, AnotherNodesStatusForAContainerIsIgnored) {
  addNode("n1", 4);
  addNode("n2", 4);
  AppId app = runningApp("root.a", "bob", "n1");
  const ContainerId am = rm_->apps().get(app)->am_container;
  ASSERT_EQ(rm_->apps().get(app)->am_node, NodeId("n1"));
  v1::ContainerStatus spoofed;
  spoofed.set_container_id(am.value());
  spoofed.set_state(v1::CONTAINER_COMPLETE);
  spoofed.set_exit_status(1);
  toProto(Resource(1024, 1), spoofed.mutable_resource());
  for (int i = 0; i < 2; i++) {
    auto resp = heartbeat("n2", {spoofed});
    EXPECT_EQ(resp.containers_to_acknowledge_size(), 0);
  }
  EXPECT_EQ(rm_->apps().get(app)->attempt, 1);
  EXPECT_EQ(rm_->apps().get(app)->state, AppState::kRunning);

  // After an RM restart the AM container is known only from the app record.
  ASSERT_TRUE(rm_->replaceRuntime({}).isOk());
  for (const char* n : {"n1", "n2"}) reregister(n);
  EXPECT_EQ(heartbeat("n2", {spoofed}).containers_to_acknowledge_size(), 0);
  EXPECT_EQ(rm_->apps().get(app)->attempt, 1) << "n2 ended n1's AM after a restart";
  EXPECT_EQ(heartbeat("n1", {spoofed}).containers_to_acknowledge_size(), 1);
  EXPECT_EQ(rm_->apps().get(app)->attempt, 2) << "n1's own report ends the attempt";
}

// The skyline a run leaves (telemetry) counts the containers DRA
// counts as used, AM included; a reservation fitted to it and a next run of
// the same shape is at its plan, and DRA grants nothing.
TEST_F(RuntimeTest, TelemetryMatchesDraUsedAndARunAtItsSkylineGetsNoGrant) {
  addNode("n1", 8);
  AppId first = runningApp("root.a", "bob", "n1", "r1", "nightly");
  ask(first, 3);
  heartbeat("n1");
  ASSERT_EQ(running(first), 4) << "AM + 3 tasks";
  const Resource unit(1024, 1);
  int64_t dra_used =
      rm_->runtime().reservationDemand().at(ReservationId("r1")).used.countCovering(unit);
  clock_.advance(Millis(60000));  // one telemetry step
  ASSERT_TRUE(finish(first).isOk());
  auto runs = rm_->runtime().telemetry("nightly");
  ASSERT_EQ(runs.size(), 1u);
  ASSERT_EQ(runs[0].skyline.size(), 1u);
  EXPECT_EQ(runs[0].container, unit);
  EXPECT_DOUBLE_EQ(runs[0].skyline[0], static_cast<double>(dra_used))
      << "telemetry counts what DRA counts as used";

  // The reservation fitted to that skyline, and the next run of the same shape.
  auto dbpath = freshTestDb("rt-plan");
  auto plan_store = std::move(store::openStateStore("sqlite", dbpath)).value();
  ReservationManager mgr(ReservationManagerOptions{},
                         std::move(planner::Planner::create({}, Resource())).value(), *plan_store,
                         clock_, rm_->metrics());
  mgr.onCapacity(Resource(8 * 1024, 8), true);
  planner::ReservationDefinition def;
  def.user = UserId("bob");
  def.queue = "default";
  def.arrival = clock_.now() + Millis(60000);
  def.deadline = def.arrival + Millis(30 * 60000);
  def.period = Millis(1440 * 60000);
  auto n = static_cast<int>(std::ceil(runs[0].skyline[0]));
  def.stages = {{runs[0].container, n, 1, Millis(30 * 60000)}};
  ASSERT_TRUE(mgr.submit(ReservationId("r1"), def, 100 * 60000, nullptr).isOk());
  clock_.advance(Millis(2 * 60000));
  AppId next = runningApp("root.a", "bob", "n1", "r1", "nightly");
  ask(next, 3);
  heartbeat("n1");
  ASSERT_EQ(running(next), 4);
  DraOptions o;
  DraMonitor monitor(
      o, reprovision::makeMorpheusDra(o.dra), mgr,
      [this] { return rm_->runtime().reservationDemand(); }, clock_, rm_->metrics());
  monitor.tick();
  EXPECT_TRUE(mgr.get(ReservationId("r1"))->history.empty()) << "no DRA review asked for more";
  EXPECT_EQ(mgr.guaranteedAt(ReservationId("r1"), clock_.now()), unit * n);
}

// A container the AM releases without launching it (a surplus grant) stops
// counting at the release: the app's usage, DRA's used and the telemetry
// skyline drop, though no NM ever reports it complete.
TEST_F(RuntimeTest, ReleasedContainerNeverLaunchedEndsAtTheRelease) {
  addNode("n1", 8);
  AppId app = runningApp("root.a", "bob", "n1", "r1", "nightly");
  ask(app, 3);
  heartbeat("n1");
  auto granted = ask(app, 0);
  ASSERT_EQ(granted.allocated_size(), 3);
  ASSERT_EQ(running(app), 4) << "AM + 3 tasks";
  v1::AllocateRequest rel = stageReport(app);
  rel.add_releases(granted.allocated(2).container_id());
  v1::AllocateResponse resp;
  ASSERT_TRUE(rm_->allocate(rel, &resp).isOk());
  EXPECT_EQ(running(app), 3);
  const Resource unit(1024, 1);
  EXPECT_EQ(rm_->runtime().reservationDemand().at(ReservationId("r1")).used.countCovering(unit), 3);
  clock_.advance(Millis(60000));
  ASSERT_TRUE(finish(app).isOk());
  auto runs = rm_->runtime().telemetry("nightly");
  ASSERT_EQ(runs.size(), 1u);
  ASSERT_EQ(runs[0].skyline.size(), 1u);
  EXPECT_DOUBLE_EQ(runs[0].skyline[0], 3.0) << "the released container is not in the skyline";
}

// An app killed after its AM was granted a task container but before the
// node first reported it: the grant may never start (its AM is gone), so it
// ends for the RM at the kill and the app's running count drops to its AM
// (before, nothing ended it, and a killed app kept showing it running). If the AM's start of it
// raced the kill, the node drops the kill (it did not know the container yet) and the RM kills it
// when the node first reports it running.
TEST_F(RuntimeTest, ContainerFirstReportedAfterItsAppWasKilledIsKilled) {
  addNode("n1", 8);
  AppId app = runningApp("root.a", "bob", "n1");
  ask(app, 1);
  heartbeat("n1");
  auto granted = ask(app, 0);
  ASSERT_EQ(granted.allocated_size(), 1);
  ASSERT_EQ(running(app), 2) << "AM + the task";
  const std::string task = granted.allocated(0).container_id();
  ASSERT_TRUE(rm_->apps().kill(app, UserId("bob"), true, "test").isOk());
  rm_->runtime().onAppKilled(app);  // as the client service does after a kill
  EXPECT_EQ(running(app), 1) << "the task the node never reported ended at the kill";
  (void)heartbeat("n1");  // the kills go out; the node knows no task yet
  v1::ContainerStatus st;
  st.set_container_id(task);
  st.set_state(v1::CONTAINER_RUNNING);
  auto resp = heartbeat("n1", {st});
  std::vector<std::string> kills(resp.containers_to_kill().begin(),
                                 resp.containers_to_kill().end());
  EXPECT_NE(std::find(kills.begin(), kills.end(), task), kills.end())
      << "a container of a killed app started after the kill is stopped";
  EXPECT_EQ(running(app), 1);
}

// An AM's heartbeat that crosses a grant still counts the granted task as
// pending: the grant buffered for it covers that ask, so no second container
// is granted for the same task (the AM would release it). A need beyond the
// undelivered grants is still asked for.
TEST_F(RuntimeTest, AnAskThatCrossesAGrantIsNotGrantedTwice) {
  addNode("n1", 8);
  AppId app = runningApp("root.a", "bob", "n1");
  ask(app, 1);
  heartbeat("n1");         // grants the task; the AM has not read it yet
  auto got = ask(app, 1);  // still one task pending as far as the AM knows
  ASSERT_EQ(got.allocated_size(), 1);
  heartbeat("n1");
  EXPECT_EQ(ask(app, 0).allocated_size(), 0) << "the delivered grant covered the repeated ask";
  EXPECT_EQ(running(app), 2) << "AM + the task";

  ask(app, 1);
  heartbeat("n1");
  got = ask(app, 2);  // the undelivered grant and one more
  ASSERT_EQ(got.allocated_size(), 1);
  heartbeat("n1");
  EXPECT_EQ(ask(app, 0).allocated_size(), 1) << "the need beyond the undelivered grant";
  EXPECT_EQ(running(app), 4);
}

TEST_F(RuntimeTest, AnAmActsOnlyForItsOwnApp) {
  addNode("n1", 4);
  AppId a = runningApp("root.a", "alice", "n1");
  AppId b = runningApp("root.b", "bob", "n1");
  v1::AllocateRequest req;
  req.set_application_id(b.value());
  req.set_am_token(rm_->apps().amToken(a, 1));
  v1::AllocateResponse resp;
  EXPECT_EQ(rm_->allocate(req, &resp).code(), StatusCode::kPermissionDenied);
  req.set_am_token(rm_->apps().amToken(b, 1));
  auto* bad = req.add_asks();
  bad->set_request_id("x");
  bad->set_count(-1);
  Status st = rm_->allocate(req, &resp);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("asks[0].count"), std::string::npos) << st.message();
}

// The edge parses a request before the runtime checks its token, yet a caller
// hears what is wrong with its request only once it proved to be the AM: a
// malformed request with another app's token is refused for the token, and
// nothing of it applies.
TEST_F(RuntimeTest, AMalformedRequestIsRefusedForItsTokenFirst) {
  addNode("n1", 4);
  AppId a = runningApp("root.a", "alice", "n1");
  AppId b = runningApp("root.b", "bob", "n1");
  v1::AllocateRequest req;
  req.set_application_id(b.value());
  req.set_am_token(rm_->apps().amToken(a, 1));
  req.set_progress(0.5f);
  req.add_asks()->set_count(-1);
  v1::AllocateResponse resp;
  EXPECT_EQ(rm_->allocate(req, &resp).code(), StatusCode::kPermissionDenied);
  req.clear_asks();
  req.add_stages()->set_tasks(1);  // no name
  EXPECT_EQ(rm_->allocate(req, &resp).code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(rm_->apps().get(b)->progress, 0.0f);
  v1::FinishApplicationMasterRequest f;
  f.set_application_id(b.value());
  f.set_am_token(rm_->apps().amToken(a, 1));  // and no final_status
  EXPECT_EQ(rm_->finishAm(f).code(), StatusCode::kPermissionDenied);
  f.set_am_token(rm_->apps().amToken(b, 1));
  Status st = rm_->finishAm(f);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(st.message().rfind("final_status", 0), 0u) << st.message();
  EXPECT_EQ(rm_->apps().get(b)->state, AppState::kRunning);
  // A finished app's AM is refused as not running before its asks are read.
  f.set_final_status(v1::FINAL_STATUS_SUCCEEDED);
  ASSERT_TRUE(rm_->finishAm(f).isOk());
  req.set_am_token(rm_->apps().amToken(b, 1));
  EXPECT_EQ(rm_->allocate(req, &resp).code(), StatusCode::kInfeasible);
  EXPECT_EQ(resp.ByteSizeLong(), 0u) << "an error leaves the reply untouched";
}

// A finished app's telemetry record carries the AM's final status, so the
// inference service can keep failed and killed runs out of its fits.
TEST_F(RuntimeTest, TelemetryCarriesTheAppsFinalStatus) {
  addNode("n1", 4);
  AppId ok = runningApp("root.a", "alice", "n1");
  AppId failed = runningApp("root.a", "alice", "n1");
  AppId killed = runningApp("root.b", "bob", "n1");
  auto finish = [&](const AppId& app, v1::FinalStatus status) {
    v1::FinishApplicationMasterRequest f;
    f.set_application_id(app.value());
    f.set_am_token(rm_->apps().amToken(app, 1));
    f.set_final_status(status);
    ASSERT_TRUE(rm_->finishAm(f).isOk());
  };
  finish(ok, v1::FINAL_STATUS_SUCCEEDED);
  finish(failed, v1::FINAL_STATUS_FAILED);
  finish(killed, v1::FINAL_STATUS_KILLED);
  std::map<AppId, AppOutcome> got;
  for (const auto& t : rm_->runtime().telemetry("")) got[t.app] = t.outcome;
  EXPECT_EQ(got.at(ok), AppOutcome::kSucceeded);
  EXPECT_EQ(got.at(failed), AppOutcome::kFailed);
  EXPECT_EQ(got.at(killed), AppOutcome::kKilled);
}

}  // namespace
}  // namespace morpheus::rm

namespace morpheus::rm {
namespace {

// Harvesting: the NM's harvest offer caps what the RM places on
// the node (its AM counts against it too); a larger offer frees room again.
TEST_F(RuntimeTest, HarvestOfferCapsPlacementOnTheNode) {
  addNode("n1", 8);
  AppId a = runningApp("root.a", "alice", "n1");
  ask(a, 20);
  auto harvestBeat = [&](Resource offer) {
    v1::NodeHeartbeatRequest req;
    req.set_node_id("n1");
    req.mutable_primary_usage()->set_tenant("web");
    req.mutable_primary_usage()->set_cpu_vcores(4.5);
    req.mutable_primary_usage()->set_memory_mib(4096);
    toProto(offer, req.mutable_harvest_offer());
    v1::NodeHeartbeatResponse resp;
    ASSERT_TRUE(rm_->nodeHeartbeat(req, &resp).isOk());
  };
  harvestBeat(Resource(3072, 3));
  EXPECT_EQ(running(a), 3);  // the AM and two tasks
  harvestBeat(Resource(0, 0));
  EXPECT_EQ(running(a), 3) << "running containers stay; the NM kills if it must";
  harvestBeat(Resource(8192, 8));
  EXPECT_EQ(running(a), 8);
}

}  // namespace
}  // namespace morpheus::rm

namespace morpheus::rm {
namespace {

using namespace std::chrono_literals;

// A node manager's ContainerManager answering StartContainers as scripted,
// one answer per call in order (then `fallback`): start the container,
// refuse it (a failed entry, as the NM's token and launch checks give), fail
// the call, or hold the call until released (or cancelled) and then start or
// refuse it.
class ScriptedNm final : public v1::ContainerManager::Service {
 public:
  enum class Answer { kStart, kRefuse, kError, kHoldThenStart, kHoldThenRefuse };

  grpc::Status StartContainers(grpc::ServerContext* ctx, const v1::StartContainersRequest* req,
                               v1::StartContainersResponse* resp) override {
    std::unique_lock<std::mutex> lk(mu_);
    calls_.push_back(req->requests(0).container().container_id());
    cv_.notify_all();
    Answer a = next();
    if (a == Answer::kHoldThenStart || a == Answer::kHoldThenRefuse) {
      while (!released_ && !ctx->IsCancelled()) cv_.wait_for(lk, 10ms);
      released_ = false;
      a = a == Answer::kHoldThenStart ? Answer::kStart : Answer::kRefuse;
    }
    lk.unlock();
    for (const auto& r : req->requests()) {
      const std::string& id = r.container().container_id();
      switch (a) {
        case Answer::kStart:
        case Answer::kHoldThenStart:
          resp->add_started(id);
          break;
        case Answer::kRefuse:
        case Answer::kHoldThenRefuse: {
          auto* f = resp->add_failed();
          f->set_container_id(id);
          f->set_code("FAILED_PRECONDITION");
          f->set_message("cannot execute /opt/am/run: No such file or directory");
          break;
        }
        case Answer::kError:
          return grpc::Status(grpc::StatusCode::UNAVAILABLE, "node not registered with the RM yet");
      }
    }
    return grpc::Status::OK;
  }

  void script(std::vector<Answer> answers, Answer fallback = Answer::kStart) {
    std::lock_guard<std::mutex> lk(mu_);
    answers_.assign(answers.begin(), answers.end());
    fallback_ = fallback;
  }
  void release() {
    std::lock_guard<std::mutex> lk(mu_);
    released_ = true;
    cv_.notify_all();
  }
  // Waits until `n` calls arrived; their container ids.
  std::vector<std::string> waitCalls(size_t n, std::chrono::milliseconds timeout = 10s) {
    std::unique_lock<std::mutex> lk(mu_);
    cv_.wait_for(lk, timeout, [&] { return calls_.size() >= n; });
    return calls_;
  }

 private:
  Answer next() {  // REQUIRES(mu_)
    if (answers_.empty()) return fallback_;
    Answer a = answers_.front();
    answers_.pop_front();
    return a;
  }
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Answer> answers_;  // GUARDED_BY(mu_)
  Answer fallback_ = Answer::kStart;
  bool released_ = false;           // GUARDED_BY(mu_)
  std::vector<std::string> calls_;  // GUARDED_BY(mu_)
};

// The AM launch failure path (runtime.cc onLaunched, am_launcher.cc): the
// runtime runs, its AmLauncher calls the scripted NM over gRPC on loopback.
class RuntimeAmLaunchTest : public RuntimeTest {
 protected:
  void SetUp() override {
    RuntimeTest::SetUp();
    grpc::ServerBuilder b;
    b.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &nm_port_);
    b.RegisterService(&nm_);
    nm_server_ = b.BuildAndStart();
    ASSERT_GT(nm_port_, 0);
    rm_->runtime().start();
  }
  void TearDown() override {
    nm_.release();
    rm_->runtime().stop();  // cancels launches in flight
    nm_server_->Shutdown();
  }
  std::string nmAddress() const { return "127.0.0.1:" + std::to_string(nm_port_); }
  // Alice's app in root.a (or bound to `reservation`) with an AM of 1 GiB / 1
  // vcore and `attempts` AM attempts.
  AppId submit(int attempts, const std::string& reservation = "") {
    AppSpec s;
    s.name = "etl";
    s.user = UserId("alice");
    s.queue = reservation.empty() ? "root.a" : "";
    s.reservation = ReservationId(reservation);
    s.am_resource = Resource(1024, 1);
    v1::ContainerLaunchContext lc;
    lc.set_command("/opt/am/run");
    s.am_launch_context = lc.SerializeAsString();
    s.max_attempts = attempts;
    auto rec = rm_->apps().submit(s, [](const BindTarget&) { return Status::ok(); });
    EXPECT_TRUE(rec.isOk()) << rec.status().toString();
    return rec.isOk() ? rec->id : AppId("");
  }
  // Node n1 (4 vcores) registers with the scripted NM as its ContainerManager,
  // which answers as `script` says (then starts); Alice's app (see submit) is
  // submitted and n1's heartbeat places its AM.
  AppId launchOnN1(std::vector<ScriptedNm::Answer> script, int attempts = 1,
                   const std::string& reservation = "") {
    addNode("n1", 4, {}, nmAddress());
    nm_.script(std::move(script));
    AppId app = submit(attempts, reservation);
    heartbeat("n1");
    return app;
  }
  // Waits until the app's record is final and expects it FAILED; the record.
  AppRecord waitFailed(const AppId& app) {
    AppRecord rec = waitApp(app, [](const AppRecord& r) { return isFinal(r.state); });
    EXPECT_EQ(rec.state, AppState::kFailed);
    return rec;
  }
  // Waits (real time: the launch completes on the launcher's thread) until
  // `done` holds for the app's record; returns the record.
  AppRecord waitApp(const AppId& id, const std::function<bool(const AppRecord&)>& done) {
    auto until = std::chrono::steady_clock::now() + 10s;
    while (std::chrono::steady_clock::now() < until) {
      auto rec = rm_->apps().get(id);
      if (rec.isOk() && done(*rec)) return *rec;
      std::this_thread::sleep_for(5ms);
    }
    ADD_FAILURE() << "app " << id.value() << " did not get there in 10 s";
    return *rm_->apps().get(id);
  }
  std::string amContainer(const AppId& id, int attempt) const {
    return id.value() + "_" + std::to_string(toEpochMs(clock_.now())) + "_am" +
           std::to_string(attempt);
  }
  // The scheduler core's view of a queue (ad-hoc path or reservation id).
  std::optional<sched::QueueView> queue(const std::string& name) const {
    for (const auto& q : rm_->runtime().queues()) {
      const std::string n =
          q.ref.isReservation() ? q.ref.reservationId().value() : q.ref.adhocPath();
      if (n == name) return q;
    }
    return std::nullopt;
  }
  // `app` runs its second attempt's AM, the one container accounted to it
  // and its queue root.a.
  void expectSecondAttemptRuns(const AppId& app) {
    AppRecord rec = rm_->apps().get(app).value();
    EXPECT_EQ(rec.state, AppState::kRunning);
    EXPECT_EQ(rec.attempt, 2);
    EXPECT_EQ(rec.am_container.value(), amContainer(app, 2));
    EXPECT_EQ(running(app), 1);
    EXPECT_EQ(queue("root.a")->used, Resource(1024, 1));
  }
  // The runtime counts no container and no usage of `app`.
  void expectNoUsage(const AppId& app) {
    int32_t n = -1;
    Resource used(1, 1);
    rm_->runtime().usage(app, &n, &used);
    EXPECT_EQ(n, 0);
    EXPECT_EQ(used, Resource());
  }
  // Nothing of `app` is accounted anywhere: no container, no usage in the
  // app, its queue or on node n1 (whose whole capacity an app can take).
  void expectNothingHeld(const AppId& app) {
    expectNoUsage(app);
    auto a = queue("root.a");
    ASSERT_TRUE(a.has_value());
    EXPECT_EQ(a->used, Resource());
    EXPECT_EQ(a->apps, 0) << "the failed app left the scheduler";
    EXPECT_TRUE(rm_->runtime().pendingReasons(app).empty());
  }

  ScriptedNm nm_;
  std::unique_ptr<grpc::Server> nm_server_;
  int nm_port_ = 0;
};

// The NM refuses the AM container (its launch command cannot run): with one
// attempt the app ends FAILED, the diagnostic names the node and the NM's
// reason, and nothing of it stays accounted — the node's whole capacity
// goes to the next app.
TEST_F(RuntimeAmLaunchTest, RefusedLaunchFailsTheAppNamingNodeAndCause) {
  AppId app = launchOnN1({ScriptedNm::Answer::kHoldThenRefuse});
  ASSERT_EQ(nm_.waitCalls(1).size(), 1u);
  // While the NM considers it, the AM container is accounted everywhere.
  EXPECT_EQ(running(app), 1);
  EXPECT_EQ(queue("root.a")->used, Resource(1024, 1));
  EXPECT_EQ(queue("root.a")->apps, 1);
  nm_.release();
  AppRecord rec = waitFailed(app);
  EXPECT_EQ(rec.attempt, 1);
  EXPECT_NE(rec.diagnostics.find("attempt 1: AM launch failed: "), std::string::npos)
      << rec.diagnostics;
  EXPECT_NE(rec.diagnostics.find("FAILED_PRECONDITION: cannot execute /opt/am/run"),
            std::string::npos)
      << rec.diagnostics;
  EXPECT_NE(rec.diagnostics.find("node n1"), std::string::npos)
      << "the diagnostic does not say which node refused: " << rec.diagnostics;
  EXPECT_NE(rec.diagnostics.find("(no attempts left of 1)"), std::string::npos) << rec.diagnostics;
  EXPECT_EQ(nm_.waitCalls(1), std::vector<std::string>{amContainer(app, 1)});
  expectNothingHeld(app);
  EXPECT_DOUBLE_EQ(rm_->metrics().counter("morpheus_rm_am_attempts_failed_total", "").value(), 1.0);

  AppSpec big;
  big.name = "big";
  big.user = UserId("bob");
  big.queue = "root.a";
  big.am_resource = Resource(4096, 4);
  v1::ContainerLaunchContext lc;
  lc.set_command("/opt/am/run");
  big.am_launch_context = lc.SerializeAsString();
  AppId next = rm_->apps().submit(big, [](const BindTarget&) { return Status::ok(); })->id;
  heartbeat("n1");
  EXPECT_EQ(waitApp(next, [](const AppRecord& r) { return r.state != AppState::kSubmitted; }).state,
            AppState::kRunning)
      << "the failed AM still holds part of n1";
}

// A refused first attempt is retried while attempts remain: the app goes
// back to SUBMITTED with attempt 1's diagnostic, the next heartbeat places
// attempt 2, which the NM starts; one AM container is accounted, not two.
TEST_F(RuntimeAmLaunchTest, RefusedLaunchIsRetriedWhileAttemptsRemain) {
  AppId app = launchOnN1({ScriptedNm::Answer::kRefuse}, 2);
  AppRecord retry = waitApp(app, [](const AppRecord& r) { return !r.diagnostics.empty(); });
  EXPECT_EQ(retry.state, AppState::kSubmitted);
  EXPECT_EQ(retry.attempt, 1);
  EXPECT_EQ(retry.diagnostics.rfind("attempt 1: AM launch failed: ", 0), 0u) << retry.diagnostics;
  EXPECT_EQ(running(app), 0);
  heartbeat("n1");
  EXPECT_EQ(nm_.waitCalls(2), (std::vector<std::string>{amContainer(app, 1), amContainer(app, 2)}));
  expectSecondAttemptRuns(app);
}

// An NM nothing listens at: the attempt fails naming the node and its
// address (the gRPC error), and the app ends FAILED holding nothing.
TEST_F(RuntimeAmLaunchTest, UnreachableNodeFailsTheAttemptNamingIt) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);  // bound, never listening
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&a), len), 0);
  ASSERT_EQ(::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len), 0);
  const std::string dead = "127.0.0.1:" + std::to_string(ntohs(a.sin_port));
  addNode("n1", 4, {}, dead);
  AppId app = submit(1);
  heartbeat("n1");
  AppRecord rec = waitFailed(app);
  ::close(fd);
  EXPECT_NE(rec.diagnostics.find("AM launch failed: cannot reach node n1 at " + dead),
            std::string::npos)
      << rec.diagnostics;
  expectNothingHeld(app);
}

// The NM answers the call with an error (it has not registered with this RM
// yet): the attempt fails with the NM's message, naming the node.
TEST_F(RuntimeAmLaunchTest, NmErrorFailsTheAttemptWithItsMessage) {
  AppId app = launchOnN1({ScriptedNm::Answer::kError});
  AppRecord rec = waitFailed(app);
  EXPECT_NE(rec.diagnostics.find("node n1"), std::string::npos) << rec.diagnostics;
  EXPECT_NE(rec.diagnostics.find("node not registered with the RM yet"), std::string::npos)
      << rec.diagnostics;
  expectNothingHeld(app);
}

// The node is lost while the AM's launch call is still in flight: the loss
// ends attempt 1 ("node n1 lost") and frees its accounting; attempt 2 runs
// on n2. When n1's call finally fails, that late failure of attempt 1
// neither ends attempt 2 nor counts as another failed attempt.
TEST_F(RuntimeAmLaunchTest, NodeLostBeforeTheAmStartsEndsOnlyThatAttempt) {
  AppId app = launchOnN1({ScriptedNm::Answer::kHoldThenRefuse}, 2);
  ASSERT_EQ(nm_.waitCalls(1).size(), 1u);
  rm_->runtime().onNodeLost(NodeId("n1"));  // as the core's liveness check reports it
  AppRecord retry = rm_->apps().get(app).value();
  EXPECT_EQ(retry.state, AppState::kSubmitted);
  EXPECT_EQ(retry.attempt, 1);
  EXPECT_NE(retry.diagnostics.find("node n1 lost"), std::string::npos) << retry.diagnostics;
  EXPECT_EQ(running(app), 0);
  EXPECT_EQ(queue("root.a")->used, Resource());

  addNode("n2", 4, {}, nmAddress());
  heartbeat("n2");
  EXPECT_EQ(rm_->apps().get(app)->attempt, 2);
  EXPECT_EQ(rm_->apps().get(app)->am_node.value(), "n2");
  nm_.release();  // n1's held call now ends refused
  ASSERT_EQ(nm_.waitCalls(2).size(), 2u);
  // The launcher reports both verdicts on its own thread (n2's start and
  // n1's late refusal): check only once the runtime has applied both.
  auto until = std::chrono::steady_clock::now() + 30s;
  while (rm_->runtime().amLaunchVerdicts() < 2 && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(5ms);
  }
  ASSERT_EQ(rm_->runtime().amLaunchVerdicts(), 2u);
  expectSecondAttemptRuns(app);
  EXPECT_DOUBLE_EQ(rm_->metrics().counter("morpheus_rm_am_attempts_failed_total", "").value(), 1.0);
}

// A launch the RM gave up on (its deadline passed) that the NM started after
// all: the attempt failed, and when the NM reports the container running the
// RM tells it to kill it, so no AM of a failed attempt keeps running.
TEST_F(RuntimeAmLaunchTest, AmStartedAfterTheLaunchTimedOutIsKilled) {
  // A runtime whose launches time out after 300 ms.
  RuntimeOptions ro;
  ro.queue_weights = {{"root.a", 3}, {"root.b", 1}};
  ro.launch.timeout = Millis(300);
  ASSERT_TRUE(rm_->replaceRuntime(ro).isOk());
  rm_->runtime().start();
  AppId app = launchOnN1({ScriptedNm::Answer::kHoldThenStart});
  AppRecord rec = waitFailed(app);
  EXPECT_NE(rec.diagnostics.find("cannot reach node n1"), std::string::npos) << rec.diagnostics;
  expectNothingHeld(app);
  nm_.release();  // the NM starts it after all

  v1::ContainerStatus st;
  st.set_container_id(amContainer(app, 1));
  st.set_state(v1::CONTAINER_RUNNING);
  toProto(Resource(1024, 1), st.mutable_resource());
  auto resp = heartbeat("n1", {st});
  EXPECT_EQ(
      std::vector<std::string>(resp.containers_to_kill().begin(), resp.containers_to_kill().end()),
      std::vector<std::string>{amContainer(app, 1)});
  expectNothingHeld(app);
}

// An app bound to a reservation whose AM cannot launch: once it failed, the
// reservation's queue holds nothing of it and its demand is gone.
TEST_F(RuntimeAmLaunchTest, FailedReservedAppLeavesNothingInItsReservation) {
  guarantee_ = Resource(2048, 2);
  AppId app = launchOnN1({ScriptedNm::Answer::kHoldThenRefuse}, 1, "r1");
  ASSERT_EQ(nm_.waitCalls(1).size(), 1u);
  // While the NM considers it, the AM is the reservation's demand and usage.
  ASSERT_TRUE(queue("r1").has_value());
  EXPECT_EQ(queue("r1")->used, Resource(1024, 1));
  EXPECT_EQ(queue("r1")->apps, 1);
  EXPECT_EQ(rm_->runtime().reservationDemand().count(ReservationId("r1")), 1u);
  nm_.release();
  AppRecord rec = waitFailed(app);
  EXPECT_EQ(rec.reservation.value(), "r1");
  expectNoUsage(app);
  auto r1 = queue("r1");
  EXPECT_TRUE(!r1.has_value() || (r1->used == Resource() && r1->apps == 0))
      << "reservation r1 still holds " << r1->used.toString() << ", " << r1->apps << " app(s)";
  EXPECT_EQ(rm_->runtime().reservationDemand().count(ReservationId("r1")), 0u);
}

}  // namespace
}  // namespace morpheus::rm
