// RmRuntime's harvesting classes and class selection (Zhang et
// al., OSDI'16 §4.1, Algorithm 1) with its real collaborators (RmCore,
// AppManager over SQLite: tests/support/inproc_rm.h) and the virtual clock;
// NMs and AMs are played by direct calls with the wire messages, primary
// tenants by the heartbeats' primary_usage.
#include <gtest/gtest.h>

#include <random>

#include "../test_db.h"
#include "common/wire.h"
#include "inproc_rm.h"
#include "rm/core/harvest_rm.h"
#include "rm/runtime/runtime.h"

namespace morpheus::rm {
namespace {

class RuntimeHarvestTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = freshTestDb("rt-harvest");
    open();
  }
  void open() {
    testing::InProcRmOptions o;
    o.state_store = path_;
    o.token_secret = "secret";
    o.apps.queues = {"root.default"};
    o.runtime.harvest.selection.short_max = Millis(10000);
    o.runtime.harvest.selection.long_min = Millis(60000);
    if (hold_) o.runtime.harvest.hold = *hold_;
    o.scripted_plan =
        testing::ScriptedPlan{// no reservation exists
                              [](const JobKey&) { return std::vector<BindTarget>(); },
                              [](const ReservationId&) { return std::optional<BindTarget>(); },
                              [](const ReservationId&) { return true; },
                              [](const ReservationId&, TimePoint) { return Resource(); }};
    auto rm = testing::InProcRm::start(clock_, std::move(o));
    ASSERT_TRUE(rm.isOk()) << rm.status().toString();
    rm_ = std::move(rm).value();
  }
  void close() { rm_.reset(); }
  void addNode(const std::string& id, int vcores) {
    Status st = rm_->registerNode(testing::nodeRegistration(id, vcores));
    ASSERT_TRUE(st.isOk()) << st.toString();
  }
  // `cpu` < 0: no primary tenant on the node. `offer` >= 0: the NM's
  // harvest offer, that many vcores (and 6 GiB).
  v1::NodeHeartbeatResponse heartbeat(const std::string& node, double cpu = -1, int offer = -1) {
    v1::NodeHeartbeatRequest req;
    req.set_node_id(node);
    if (cpu >= 0) {
      auto* u = req.mutable_primary_usage();
      u->set_tenant("web-" + node);
      u->set_cpu_vcores(cpu);
      u->set_memory_mib(100);
    }
    if (offer >= 0) toProto(Resource(6144, offer), req.mutable_harvest_offer());
    v1::NodeHeartbeatResponse resp;
    Status st = rm_->nodeHeartbeat(req, &resp);
    EXPECT_TRUE(st.isOk()) << st.toString();
    return resp;
  }
  // Ten minutes of history: n1's primary tenant uses 5 of 8 vcores, n2's 0.1.
  void busyAndIdleHistory() {
    for (int i = 0; i < 10; i++) {
      heartbeat("n1", 5.0);
      heartbeat("n2", 0.1);
      clock_.advance(Millis(60000));
    }
  }
  // Submits an app named `name` of alice whose AM asks 1 GiB and 1 vcore.
  AppId submitApp(const std::string& name) {
    AppSpec s;
    s.name = name;
    s.user = UserId("alice");
    s.am_resource = Resource(1024, 1);
    s.am_launch_context = "x";
    return rm_->apps().submit(s, [](const BindTarget&) { return Status::ok(); })->id;
  }
  // Submits an app named `name` and starts its AM on node "am".
  AppId runningApp(const std::string& name) {
    AppId id = submitApp(name);
    heartbeat("am");
    EXPECT_EQ(rm_->apps().get(id)->state, AppState::kRunning);
    EXPECT_TRUE(rm_->runtime().registerAm({id, rm_->apps().amToken(id, 1)}).isOk());
    return id;
  }
  // Asks for `tasks` containers of 1 GiB, 1 vcore, reporting them as one stage.
  v1::AllocateResponse ask(const AppId& app, int tasks) {
    v1::AllocateRequest req;
    req.set_application_id(app.value());
    req.set_am_token(rm_->apps().amToken(app, 1));
    if (tasks > 0) {
      auto* a = req.add_asks();
      a->set_request_id("tasks");
      a->set_priority(1);
      toProto(Resource(1024, 1), a->mutable_capability());
      a->set_count(tasks);
      auto* st = req.add_stages();
      st->set_name("work");
      st->set_tasks(tasks);
    }
    v1::AllocateResponse resp;
    Status st = rm_->allocate(req, &resp);
    EXPECT_TRUE(st.isOk()) << st.toString();
    return resp;
  }
  Status finish(const AppId& app) {
    v1::FinishApplicationMasterRequest req;
    req.set_application_id(app.value());
    req.set_am_token(rm_->apps().amToken(app, 1));
    req.set_final_status(v1::FINAL_STATUS_SUCCEEDED);
    return rm_->finishAm(req);
  }
  // A finished run of `name` that took `length`.
  void pastRun(const std::string& name, Millis length) {
    AppId a = runningApp(name);
    clock_.advance(length);
    ASSERT_TRUE(finish(a).isOk());
  }

  // Forty minutes of history: n1's primary tenant jumps between 1 and 7.5
  // of 8 vcores at random (about a quarter of its one- and two-minute
  // windows rise by 6.5, so the 0.9 quantile of its rises plans for that),
  // n2's stays at 1.
  void burstyAndSteadyHistory() {
    std::mt19937 rng(7);
    for (int i = 0; i < 40; i++) {
      heartbeat("n1", rng() % 100 < 45 ? 7.5 : 1.0);
      heartbeat("n2", 1.0);
      clock_.advance(Millis(60000));
    }
  }
  // The hold's set-up: n1 (bursty) and n2 (steady) with a class each, a
  // long job "etl" whose last run took 2 minutes, n2's primary busy now
  // (7.9 of 8 vcores, no offer) and n1's at 1 (an offer of 6 vcores), and
  // the job's 2 asks: no node is predicted to leave a container a core for
  // its 2 minutes (n1: 1/8 now + a rise of 6.5/8).
  AppId heldJob() {
    addNode("n1", 8);
    addNode("n2", 8);
    addNode("am", 4);
    burstyAndSteadyHistory();
    pastRun("etl", Millis(120000));
    EXPECT_TRUE(rm_->runtime().recomputeHarvestClasses().isOk());
    EXPECT_FALSE(rm_->runtime().harvestClassOf(NodeId("n1")).empty());
    EXPECT_FALSE(rm_->runtime().harvestClassOf(NodeId("n2")).empty());
    for (const auto& c : rm_->runtime().harvestClasses()) {
      EXPECT_NE(c.cls.pattern, UtilPattern::kPeriodic) << c.cls.id;
    }
    heartbeat("n2", 7.9, 0);
    heartbeat("n1", 1.0, 6);
    AppId app = runningApp("etl");
    ask(app, 2);
    return app;
  }
  // Heartbeats of n1 and the AM's node (no class) for `span`, past the
  // scheduler's soft-constraint delay (3 s): the containers they got.
  int offersOfN1AndAm(Millis span, const AppId& app) {
    int got = 0;
    for (Millis t{0}; t < span; t += Millis(1000)) {
      clock_.advance(Millis(1000));
      heartbeat("n1", 1.0, 6);
      heartbeat("am");
      heartbeat("n2", 7.9, 0);
      got += ask(app, 0).allocated_size();
    }
    return got;
  }

  VirtualClock clock_{fromEpochMs(1800000000000)};
  std::optional<Millis> hold_;
  std::string path_;
  std::unique_ptr<testing::InProcRm> rm_;
};

// Clustering tags each node with its tenant's class; a long job too big for
// the busy class's headroom prefers the idle class, so the busy node's
// heartbeat gets none of its containers and the idle node's gets them all.
TEST_F(RuntimeHarvestTest, LongJobPrefersTheClassWithHeadroom) {
  addNode("n1", 8);
  addNode("n2", 8);
  addNode("am", 4);
  busyAndIdleHistory();
  ASSERT_NO_FATAL_FAILURE(pastRun("etl", Millis(120000)));  // long (>= 60 s)
  ASSERT_TRUE(rm_->runtime().recomputeHarvestClasses().isOk());
  const std::string busy = rm_->runtime().harvestClassOf(NodeId("n1"));
  const std::string idle = rm_->runtime().harvestClassOf(NodeId("n2"));
  ASSERT_FALSE(busy.empty());
  ASSERT_FALSE(idle.empty());
  ASSERT_NE(busy, idle);
  EXPECT_EQ(rm_->runtime().harvestClassOf(NodeId("am")), "");
  auto classes = rm_->runtime().harvestClasses();
  ASSERT_EQ(classes.size(), 2u);
  for (const auto& c : classes) {
    EXPECT_EQ(c.cls.pattern, UtilPattern::kConstant) << c.cls.id;
    ASSERT_EQ(c.nodes.size(), 1u) << c.cls.id;
  }
  // 5 concurrent containers: the busy class holds (1 - 0.625) x 8 = 3.
  AppId app = runningApp("etl");
  ask(app, 5);
  EXPECT_EQ(rm_->runtime().harvestSelection(app), std::vector<std::string>{idle});
  heartbeat("n1", 5.0);
  EXPECT_EQ(ask(app, 0).allocated_size(), 0);
  heartbeat("n2", 0.1);
  auto r = ask(app, 0);
  ASSERT_EQ(r.allocated_size(), 5);
  for (const auto& c : r.allocated()) EXPECT_EQ(c.node_id(), "n2");
}

// An AM is secondary work too: a node whose NM offers no vcores (its
// primary tenant uses them) starts none, however much of its registered
// total is free; once the offer is back the AM starts there.
TEST_F(RuntimeHarvestTest, NoAmStartsOnANodeWhoseOfferLeavesItNoRoom) {
  addNode("n1", 8);
  heartbeat("n1", 7.9, 0);
  AppId id = submitApp("etl");
  for (int i = 0; i < 5; i++) {
    clock_.advance(Millis(1000));
    heartbeat("n1", 7.9, 0);
  }
  EXPECT_EQ(rm_->apps().get(id)->state, AppState::kSubmitted);
  clock_.advance(Millis(1000));
  heartbeat("n1", 1.0, 6);
  EXPECT_EQ(rm_->apps().get(id)->state, AppState::kRunning);
}

// With rm.harvest.hold 0 the constraint is soft: when the preferred class
// is full, the busy node gets the rest (the ranked fallback adds its class,
// the only other, at once; the scheduler's soft-constraint delay would
// too). With the hold, n1 would not: its primary's 5 vcores and the other
// job's 4 containers there leave none of the job's expected run.
TEST_F(RuntimeHarvestTest, SoftConstraintFallsBackToAnyNodeAfterTheDelay) {
  hold_ = Millis(0);
  close();
  open();
  addNode("n1", 8);
  addNode("n2", 8);
  addNode("am", 4);
  busyAndIdleHistory();
  ASSERT_NO_FATAL_FAILURE(pastRun("etl", Millis(120000)));
  ASSERT_TRUE(rm_->runtime().recomputeHarvestClasses().isOk());
  AppId app = runningApp("etl");
  ask(app, 5);
  AppId other = runningApp("other");  // fills the idle node first
  ask(other, 8);
  heartbeat("n2", 0.1);
  heartbeat("n1", 5.0);
  const int before = ask(app, 0).allocated_size();
  clock_.advance(Millis(10000));  // past the delay (3 heartbeat intervals)
  heartbeat("n1", 5.0);
  heartbeat("n1", 5.0);
  auto r = ask(app, 0);
  EXPECT_GT(r.allocated_size(), 0) << "already placed: " << before;
  for (const auto& c : r.allocated()) EXPECT_EQ(c.node_id(), "n1");
}

// The ranked fallback, before the soft-constraint delay. A long job of 7
// containers fits only the idle class (n2: 7 under its peak), whose NM
// offers 6 now (its reserve). Once n2 holds 6, the job's next allocate adds
// the class ranked next: both others are constant (the same weight for long
// jobs), and n3's (2 of 8 vcores) leaves 6 containers under its peak
// against busy n1's 3. So n1's heartbeat gets none and n3's the seventh.
TEST_F(RuntimeHarvestTest, FullClassFallsBackToTheNextRankedClassBeforeTheDelay) {
  addNode("n1", 8);
  addNode("n2", 8);
  addNode("n3", 8);
  addNode("am", 4);
  for (int i = 0; i < 10; i++) {
    heartbeat("n1", 5.0);
    heartbeat("n2", 0.1);
    heartbeat("n3", 2.0);
    clock_.advance(Millis(60000));
  }
  ASSERT_NO_FATAL_FAILURE(pastRun("etl", Millis(120000)));
  ASSERT_TRUE(rm_->runtime().recomputeHarvestClasses().isOk());
  const std::string idle = rm_->runtime().harvestClassOf(NodeId("n2"));
  const std::string mid = rm_->runtime().harvestClassOf(NodeId("n3"));
  ASSERT_EQ(rm_->runtime().harvestClasses().size(), 3u);
  AppId app = runningApp("etl");
  ask(app, 7);
  EXPECT_EQ(rm_->runtime().harvestSelection(app), std::vector<std::string>{idle});
  heartbeat("n2", 0.1, 6);
  EXPECT_EQ(ask(app, 0).allocated_size(), 6);
  EXPECT_EQ(rm_->runtime().harvestFallbackClass(app), mid);
  heartbeat("n1", 5.0, 2);
  EXPECT_EQ(ask(app, 0).allocated_size(), 0);
  heartbeat("n3", 2.0, 5);
  auto r = ask(app, 0);
  ASSERT_EQ(r.allocated_size(), 1);
  EXPECT_EQ(r.allocated(0).node_id(), "n3");
}

// Asks made before any clustering carry no constraint; the clustering
// re-selects them, and from then on they wait for the chosen class.
TEST_F(RuntimeHarvestTest, ReclusteringReselectsPendingAsks) {
  addNode("n1", 8);
  addNode("n2", 8);
  addNode("am", 4);
  busyAndIdleHistory();
  ASSERT_NO_FATAL_FAILURE(pastRun("etl", Millis(120000)));
  AppId app = runningApp("etl");
  ask(app, 5);
  EXPECT_TRUE(rm_->runtime().harvestSelection(app).empty());
  ASSERT_TRUE(rm_->runtime().recomputeHarvestClasses().isOk());
  EXPECT_EQ(rm_->runtime().harvestSelection(app),
            std::vector<std::string>{rm_->runtime().harvestClassOf(NodeId("n2"))});
  heartbeat("n1", 5.0);
  EXPECT_EQ(ask(app, 0).allocated_size(), 0);
}

// The hold (rm.harvest.hold): n1 has room now but its tenant's history
// predicts a burst within the job's expected run, n2 is busy; the job's
// asks are held off both and off the AM's node (no class) even long after
// the scheduler's soft-constraint delay, which would place them on any
// node. Once n2's primary drops back, n2 is predicted to fit, and the job
// takes it at its next heartbeat, n1 still none.
TEST_F(RuntimeHarvestTest, HoldKeepsAJobOffNodesItsHistoryPredictsWillThrottleIt) {
  AppId app = heldJob();
  EXPECT_EQ(rm_->runtime().harvestHoldNodes(app), std::vector<std::string>());
  EXPECT_EQ(offersOfN1AndAm(Millis(20000), app), 0);
  clock_.advance(Millis(40000));  // a new minute: n2's current share is 1/8
  heartbeat("n2", 1.0, 6);
  EXPECT_EQ(ask(app, 0).allocated_size(), 0);
  EXPECT_EQ(rm_->runtime().harvestHoldNodes(app), std::vector<std::string>{"n2"});
  heartbeat("n1", 1.0, 6);
  EXPECT_EQ(ask(app, 0).allocated_size(), 0);
  heartbeat("n2", 1.0, 6);
  auto r = ask(app, 0);
  ASSERT_EQ(r.allocated_size(), 2);
  for (const auto& c : r.allocated()) EXPECT_EQ(c.node_id(), "n2");
}

// After rm.harvest.hold the held job takes the ranked fallback: the hard
// constraint goes, and the class of n1 (the only one with room now) joins
// the job's constraint, so n1's next heartbeat gets both containers.
TEST_F(RuntimeHarvestTest, HeldJobTakesTheRankedFallbackAfterTheHold) {
  hold_ = Millis(60000);
  close();
  open();
  AppId app = heldJob();
  EXPECT_EQ(offersOfN1AndAm(Millis(50000), app), 0);
  EXPECT_EQ(rm_->runtime().harvestHoldNodes(app), std::vector<std::string>());
  clock_.advance(Millis(10000));  // 60 s since the hold began
  heartbeat("n2", 7.9, 0);
  EXPECT_EQ(ask(app, 0).allocated_size(), 0);
  EXPECT_EQ(rm_->runtime().harvestHoldNodes(app), std::nullopt);
  EXPECT_EQ(rm_->runtime().harvestFallbackClass(app), rm_->runtime().harvestClassOf(NodeId("n1")));
  heartbeat("n1", 1.0, 6);
  auto r = ask(app, 0);
  ASSERT_EQ(r.allocated_size(), 2);
  for (const auto& c : r.allocated()) EXPECT_EQ(c.node_id(), "n1");
}

// rm.harvest.hold 0: no prediction, the ranked fallback at once (n1 has
// room now, so its class joins the constraint and n1 gets both).
TEST_F(RuntimeHarvestTest, HoldZeroTakesTheRankedFallbackAtOnce) {
  hold_ = Millis(0);
  close();
  open();
  AppId app = heldJob();
  EXPECT_EQ(rm_->runtime().harvestHoldNodes(app), std::nullopt);
  heartbeat("n1", 1.0, 6);
  auto r = ask(app, 0);
  ASSERT_EQ(r.allocated_size(), 2);
  for (const auto& c : r.allocated()) EXPECT_EQ(c.node_id(), "n1");
}

// An unseen job is medium, a job's last successful run decides its length
// type, and the run history survives closing and reopening the state store.
TEST_F(RuntimeHarvestTest, RunHistorySurvivesAStoreReopen) {
  addNode("am", 4);
  EXPECT_EQ(rm_->runtime().harvestLastRun("etl"), std::nullopt);
  ASSERT_NO_FATAL_FAILURE(pastRun("etl", Millis(90000)));
  ASSERT_NO_FATAL_FAILURE(pastRun("quick", Millis(2000)));
  EXPECT_EQ(rm_->runtime().harvestLastRun("etl"), Millis(90000));
  close();
  open();
  EXPECT_EQ(rm_->runtime().harvestLastRun("etl"), Millis(90000));
  EXPECT_EQ(rm_->runtime().harvestLastRun("quick"), Millis(2000));
  auto raw = rm_->store().get(kHarvestRunsTable, "etl");
  ASSERT_TRUE(raw.isOk() && raw->has_value());
  EXPECT_EQ(decodeHarvestRun("etl", **raw).value(), Millis(90000));
}

// The tenants' usage series survive an RM restart (saved when the runtime
// stops): the restarted RM clusters them into the same classes without a new
// report, and a node that reports after that clustering gets its class from
// its first heartbeat, not from the next clustering a day later. A corrupt
// record is skipped, not a reason to refuse to start.
TEST_F(RuntimeHarvestTest, ClassesComeBackAfterARestartWithoutNewReports) {
  addNode("n1", 8);
  addNode("n2", 8);
  busyAndIdleHistory();
  ASSERT_TRUE(rm_->runtime().recomputeHarvestClasses().isOk());
  const std::string busy = rm_->runtime().harvestClassOf(NodeId("n1"));
  const std::string idle = rm_->runtime().harvestClassOf(NodeId("n2"));
  ASSERT_FALSE(busy.empty());
  ASSERT_NE(busy, idle);
  // A record that does not decode is skipped (open() asserts the recovery).
  ASSERT_TRUE(rm_->store().commit({{kHarvestUsageTable, "broken", "nonsense"}}).isOk());
  close();
  open();
  EXPECT_EQ(rm_->store().list(kHarvestUsageTable).value().size(), 3u);  // web-n1, web-n2, broken
  ASSERT_TRUE(rm_->runtime().recomputeHarvestClasses().isOk());
  ASSERT_EQ(rm_->runtime().harvestClasses().size(), 2u);
  addNode("n1", 8);
  addNode("n2", 8);
  EXPECT_EQ(rm_->runtime().harvestClassOf(NodeId("n1")), "");  // not reported yet
  heartbeat("n1", 5.0);
  heartbeat("n2", 0.1);
  EXPECT_EQ(rm_->runtime().harvestClassOf(NodeId("n1")), busy);
  EXPECT_EQ(rm_->runtime().harvestClassOf(NodeId("n2")), idle);
}

// A running RM saves the series every rm.harvest.save-every (1 h by
// default), so a crash (no stop) loses at most that much history.
TEST_F(RuntimeHarvestTest, UsageIsSavedPeriodicallyWhileRunning) {
  addNode("n1", 8);
  rm_->runtime().start();
  for (int i = 0; i < 59; i++) {
    heartbeat("n1", 5.0);
    clock_.advance(Millis(60000));
  }
  EXPECT_TRUE(rm_->store().list(kHarvestUsageTable).value().empty());
  heartbeat("n1", 5.0);
  clock_.advance(Millis(60000));  // 1 h since start
  auto rows = rm_->store().list(kHarvestUsageTable).value();
  ASSERT_EQ(rows.size(), 1u);
  auto u = decodeTenantUsage(rows.begin()->first, rows.begin()->second, HarvestHistory());
  ASSERT_TRUE(u.isOk()) << u.status().toString();
  EXPECT_EQ(u->cpu.buckets().size(), 60u);
  EXPECT_NEAR(u->cpu.buckets().back().avg, 5.0 / 8, 1e-4);
}

// A corrupt run record refuses recovery with a message naming the job.
TEST(HarvestRmTest, CorruptRunRecordNamesTheJob) {
  auto r = decodeHarvestRun("etl", "{\"length_ms\": -3}");
  ASSERT_FALSE(r.isOk());
  EXPECT_NE(r.status().message().find("'etl'"), std::string::npos) << r.status().message();
  EXPECT_FALSE(decodeHarvestRun("etl", "nonsense").isOk());
  EXPECT_EQ(decodeHarvestRun("etl", encodeHarvestRun(Millis(42))).value(), Millis(42));
}

// A tenant's series round-trip through the state-store encoding; a corrupt
// record refuses recovery naming the tenant and the field.
TEST(HarvestRmTest, TenantUsageRoundTripsAndCorruptRecordsNameTheField) {
  HarvestHistory h;
  for (int i = 0; i < 5; i++) {
    h.record(NodeId("n1"), "web", fromEpochMs(1800000000000 + i * 60000), 0.1 * i, 0.5);
  }
  auto u =
      decodeTenantUsage("web", encodeTenantUsage(*h.tenantCpu("web"), *h.tenantMemory("web")), h);
  ASSERT_TRUE(u.isOk()) << u.status().toString();
  ASSERT_EQ(u->cpu.buckets().size(), 5u);
  for (size_t i = 0; i < 5; i++) {
    EXPECT_NEAR(u->cpu.regular()[i], h.tenantCpu("web")->regular()[i], 1e-4);
    EXPECT_NEAR(u->memory.regular()[i], 0.5, 1e-4);
  }
  auto bad = decodeTenantUsage("web",
                               R"({"cpu": {"step_ms": 60000, "buckets": [[60000, 0.5, 0.2, 1]]},)"
                               R"( "memory": {"step_ms": 60000, "buckets": []}})",
                               h);
  ASSERT_FALSE(bad.isOk());
  EXPECT_NE(bad.status().message().find("'web'"), std::string::npos) << bad.status().message();
  EXPECT_NE(bad.status().message().find("cpu.buckets[0]"), std::string::npos)
      << bad.status().message();
  EXPECT_FALSE(decodeTenantUsage("web", "nonsense", h).isOk());
  EXPECT_FALSE(decodeTenantUsage("web", R"({"cpu": {"step_ms": 1000, "buckets": []}})", h).isOk());
}

// Class states: capacity in containers of the job's size over the class's
// nodes, slots other secondaries take, current = mean of its nodes; the draw is deterministic in
// [0, 1).
TEST(HarvestRmTest, ClassStatesCountContainersAndAverageCurrent) {
  HarvestClass a{"constant-0", UtilPattern::kConstant, {"t1", "t2"}, 0.1, 0.2};
  HarvestClass b{"periodic-0", UtilPattern::kPeriodic, {"t3"}, 0.5, 0.9};
  std::vector<HarvestNode> nodes = {
      {NodeId("n1"), "constant-0", Resource(8192, 8), 0.2, Resource()},
      {NodeId("n2"), "constant-0", Resource(4096, 16), 0.4, Resource(2048, 2)},
      {NodeId("n3"), "", Resource(8192, 8), 0.9, Resource()}};
  auto st = classStates({a, b}, nodes, Resource(2048, 1));
  ASSERT_EQ(st.size(), 2u);
  EXPECT_EQ(st[0].capacity_slots, 4 + 2);
  EXPECT_EQ(st[0].taken_slots, 1);  // n2's secondaries leave room for 1 of its 2
  EXPECT_DOUBLE_EQ(st[0].current, 0.3);
  EXPECT_EQ(st[1].capacity_slots, 0);
  EXPECT_TRUE(st[1].nodes.empty());
  // Per node, for Algorithm 1's per-node count: n1 and n2, in node order.
  ASSERT_EQ(st[0].nodes.size(), 2u);
  EXPECT_DOUBLE_EQ(st[0].nodes[0].current, 0.2);
  EXPECT_EQ(st[0].nodes[0].capacity_slots, 4);
  EXPECT_EQ(st[0].nodes[0].taken_slots, 0);
  EXPECT_DOUBLE_EQ(st[0].nodes[1].current, 0.4);
  EXPECT_EQ(st[0].nodes[1].capacity_slots, 2);
  EXPECT_EQ(st[0].nodes[1].taken_slots, 1);
  // Pooled, the class's half-container headroom on each of its two nodes
  // would count one container; per node there is none.
  HarvestClass half{"constant-1", UtilPattern::kConstant, {"t4"}, 0.5, 0.5};
  std::vector<HarvestNode> two = {{NodeId("m1"), "constant-1", Resource(2048, 1), 0.5, Resource()},
                                  {NodeId("m2"), "constant-1", Resource(2048, 1), 0.5, Resource()}};
  auto hs = classStates({half}, two, Resource(2048, 1));
  ASSERT_EQ(hs.size(), 1u);
  EXPECT_EQ(freeSlots(JobLength::kLong, hs[0]), 0);
  double d = harvestDraw("app_1");
  EXPECT_GE(d, 0.0);
  EXPECT_LT(d, 1.0);
  EXPECT_EQ(d, harvestDraw("app_1"));
  EXPECT_NE(d, harvestDraw("app_2"));
}

// rm.harvest.long-min must be above rm.harvest.short-max.
// rm.harvest.hold: a duration >= 0 (default 1 d); a bad value is refused
// naming the key as written, and the option keeps its value.
TEST(HarvestRmTest, HoldIsADurationAndBadValuesNameTheKey) {
  HarvestRmOptions o;
  ConfigSchema s("rm");
  declareHarvestRmOptions(s, &o);
  EXPECT_EQ(o.hold, Millis(86400000));
  ASSERT_TRUE(s.set("rm.harvest.hold", "30m").isOk());
  EXPECT_EQ(o.hold, Millis(1800000));
  ASSERT_TRUE(s.loadYamlString("rm:\n  harvest:\n    hold: 0\n", "test.yaml").isOk());
  EXPECT_EQ(o.hold, Millis(0));
  for (const std::string bad : {"-1s", "soon"}) {
    Status st = s.set("rm.harvest.hold", bad);
    ASSERT_FALSE(st.isOk()) << bad;
    EXPECT_NE(st.message().find("rm.harvest.hold"), std::string::npos) << st.message();
  }
  Status st = s.loadYamlString("rm.harvest.hold: 2 days\n", "test.yaml");
  ASSERT_FALSE(st.isOk());
  EXPECT_NE(st.message().find("rm.harvest.hold"), std::string::npos) << st.message();
  EXPECT_EQ(o.hold, Millis(0));
}

TEST(HarvestRmTest, LongMinNotAboveShortMaxIsRefused) {
  HarvestRmOptions o;
  o.selection.short_max = Millis(5000);
  o.selection.long_min = Millis(5000);
  Status st = validateHarvestRmOptions(o);
  ASSERT_FALSE(st.isOk());
  EXPECT_NE(st.message().find("rm.harvest.long-min"), std::string::npos) << st.message();
}

}  // namespace
}  // namespace morpheus::rm
