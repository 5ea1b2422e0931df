// HarvestTracker alone (OSDI'16 §4.1): usage and classes, the per-job class
// selection and its re-selection, run lengths, the store tables, and the
// periodic work's stop. The virtual clock drives the timers; the state store
// is a real SQLite one in memory. RmRuntime's use of it is covered by
// runtime_harvest_test.cc.
#include "rm/runtime/harvest_tracker.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <thread>

namespace morpheus::rm {
namespace {

constexpr int64_t kStartMs = 1800000000000;

HarvestRmOptions options() {
  HarvestRmOptions o;
  o.selection.short_max = Millis(10000);
  o.selection.long_min = Millis(60000);
  return o;
}

// Ten minutes of history: n1's tenant web-n1 uses 5 of 8 vcores, n2 (its
// own tenant) 0.1.
void busyAndIdle(HarvestTracker& t) {
  for (int i = 0; i < 10; i++) {
    const TimePoint at = fromEpochMs(kStartMs + i * 60000);
    t.record(NodeId("n1"), Resource(8192, 8), "web-n1", 5.0, 100, at);
    t.record(NodeId("n2"), Resource(8192, 8), "", 0.1, 100, at);
  }
}

void clustered(HarvestTracker& t) {
  busyAndIdle(t);
  auto classes = t.cluster();
  ASSERT_TRUE(classes.isOk()) << classes.status().toString();
  ASSERT_TRUE(classes->has_value());
  t.setClasses(std::move(**classes));
}

AppRecord app(const std::string& id, const std::string& name, Millis ran = Millis(0)) {
  AppRecord r;
  r.id = AppId(id);
  r.spec.name = name;
  r.start = fromEpochMs(kStartMs);
  r.finish = r.start + ran;
  return r;
}

sched::ResourceRequest tasks(int32_t count, const std::string& id = "tasks") {
  sched::ResourceRequest a;
  a.request_id = id;
  a.priority = 1;
  a.capability = Resource(1024, 1);
  a.count = count;
  return a;
}

std::vector<HarvestNode> nodes(const HarvestTracker& t) {
  return {{NodeId("n1"), t.classOfNode(NodeId("n1")), Resource(8192, 8), 0, Resource()},
          {NodeId("n2"), t.classOfNode(NodeId("n2")), Resource(8192, 8), 0, Resource()}};
}

// A node's class is known to the heartbeat only once a clustering has run;
// a tenant in no class gets "" (its node loses the attribute).
TEST(HarvestTrackerTest, ReportsGetTheirTenantsClassOnceClustered) {
  VirtualClock clock(fromEpochMs(kStartMs));
  HarvestTracker t(options(), clock);
  auto none = t.cluster();
  ASSERT_TRUE(none.isOk());
  EXPECT_FALSE(none->has_value()) << "no history yet";
  EXPECT_EQ(t.record(NodeId("n1"), Resource(8192, 8), "web-n1", 5.0, 100, clock.now()),
            std::nullopt);
  ASSERT_NO_FATAL_FAILURE(clustered(t));
  ASSERT_EQ(t.classes().size(), 2u);
  const std::string busy = t.classOfNode(NodeId("n1"));
  const std::string idle = t.classOfNode(NodeId("n2"));
  ASSERT_FALSE(busy.empty());
  ASSERT_FALSE(idle.empty());
  EXPECT_NE(busy, idle);
  EXPECT_EQ(t.classOfNode(NodeId("n3")), "");
  EXPECT_EQ(t.record(NodeId("n1"), Resource(8192, 8), "web-n1", 5.0, 100, clock.now()), busy);
  EXPECT_EQ(t.record(NodeId("n3"), Resource(8192, 8), "new", 1.0, 100, clock.now()), "");
}

// Run lengths: only a successful run counts, and its store row comes back
// for the caller's batch; any end forgets the app's job.
TEST(HarvestTrackerTest, OnlySuccessfulRunsRecordALength) {
  VirtualClock clock(fromEpochMs(kStartMs));
  HarvestTracker t(options(), clock);
  EXPECT_EQ(t.recordRun(app("a1", "etl", Millis(5000)), AppState::kFailed), std::nullopt);
  EXPECT_EQ(t.lastRun("etl"), std::nullopt);
  auto row = t.recordRun(app("a2", "etl", Millis(120000)), AppState::kFinished);
  ASSERT_TRUE(row.has_value());
  EXPECT_EQ(row->ns, kHarvestRunsTable);
  EXPECT_EQ(row->key, "etl");
  EXPECT_EQ(decodeHarvestRun("etl", *row->value).value(), Millis(120000));
  EXPECT_EQ(t.lastRun("etl"), Millis(120000));
  t.noteAsks(app("a3", "etl"), {tasks(2)});
  ASSERT_EQ(t.jobs().size(), 1u);
  EXPECT_EQ(t.recordRun(app("a3", "etl"), AppState::kKilled), std::nullopt);
  EXPECT_TRUE(t.jobs().empty());
}

// A long job too big for the busy class's headroom prefers the idle class,
// selected on its first asks once only; the constraint goes on the asks
// with a count.
TEST(HarvestTrackerTest, FirstAsksSelectOnceAndAsksWithACountAreConstrained) {
  VirtualClock clock(fromEpochMs(kStartMs));
  HarvestTracker t(options(), clock);
  ASSERT_TRUE(t.recordRun(app("a0", "etl", Millis(120000)), AppState::kFinished).has_value());
  ASSERT_NO_FATAL_FAILURE(clustered(t));
  const std::string idle = t.classOfNode(NodeId("n2"));
  const AppRecord rec = app("a1", "etl");
  ASSERT_TRUE(t.noteAsks(rec, {tasks(5)}));
  // 5 concurrent containers: the busy class holds (1 - 0.625) x 8 = 3.
  std::string note = t.select(rec.id, nodes(t), {});
  EXPECT_NE(note.find("long job 'etl'"), std::string::npos) << note;
  EXPECT_EQ(t.selection(rec.id), std::vector<std::string>{idle});
  EXPECT_FALSE(t.noteAsks(rec, {tasks(5)})) << "selected once";
  EXPECT_EQ(t.select(rec.id, nodes(t), {}), "");
  std::vector<sched::ResourceRequest> asks = {tasks(5), tasks(0, "done")};
  t.constrain(rec.id, &asks);
  ASSERT_EQ(asks[0].constraints.size(), 1u);
  EXPECT_EQ(asks[0].constraints[0].key, kHarvestClassAttribute);
  EXPECT_EQ(asks[0].constraints[0].values, std::vector<std::string>{idle});
  EXPECT_FALSE(asks[0].constraints[0].hard);
  EXPECT_TRUE(asks[1].constraints.empty());
}

// Asks noted before any clustering carry no constraint; a re-selection
// returns them with the new one when the choice changes, and nothing when it
// does not or when nothing is pending any more.
TEST(HarvestTrackerTest, ReselectionResendsAsksOnlyWhenTheChoiceChanges) {
  VirtualClock clock(fromEpochMs(kStartMs));
  HarvestTracker t(options(), clock);
  ASSERT_TRUE(t.recordRun(app("a0", "etl", Millis(120000)), AppState::kFinished).has_value());
  const AppRecord rec = app("a1", "etl");
  EXPECT_FALSE(t.noteAsks(rec, {tasks(5)})) << "no classes yet";
  std::vector<sched::ResourceRequest> asks = {tasks(5)};
  t.constrain(rec.id, &asks);
  EXPECT_TRUE(asks[0].constraints.empty());
  ASSERT_NO_FATAL_FAILURE(clustered(t));
  const std::string idle = t.classOfNode(NodeId("n2"));
  auto re = t.reselect(rec.id, {{"tasks", 5}}, nodes(t), {});
  ASSERT_TRUE(re.asks.has_value());
  ASSERT_EQ(re.asks->size(), 1u);
  EXPECT_EQ((*re.asks)[0].count, 5);
  ASSERT_EQ((*re.asks)[0].constraints.size(), 1u);
  EXPECT_EQ((*re.asks)[0].constraints[0].values, std::vector<std::string>{idle});
  EXPECT_FALSE(re.note.empty());
  EXPECT_FALSE(t.reselect(rec.id, {{"tasks", 4}}, nodes(t), {}).asks.has_value()) << "unchanged";
  auto granted = t.reselect(rec.id, {}, nodes(t), {});
  EXPECT_FALSE(granted.asks.has_value());
  EXPECT_TRUE(t.selection(rec.id).empty());
  ASSERT_EQ(t.jobs(), std::vector<AppId>{rec.id});
  t.forgetJob(rec.id);
  EXPECT_TRUE(t.jobs().empty());
}

// The ranked fallback: while the chosen (idle) class has no node that can
// take a container now, the constraint also holds the class ranked next with
// one (here the busy class, the only other); unchanged state, unchanged
// asks; with no class open anywhere the constraint stays; once the idle
// node has room again the fallback goes. rm.harvest.hold 0: the ranked
// fallback alone, without the hold's prediction.
TEST(HarvestTrackerTest, FullClassesFallBackToTheNextRankedClassUntilRoomReturns) {
  VirtualClock clock(fromEpochMs(kStartMs));
  HarvestRmOptions o = options();
  o.hold = Millis(0);
  HarvestTracker t(o, clock);
  ASSERT_TRUE(t.recordRun(app("a0", "etl", Millis(120000)), AppState::kFinished).has_value());
  ASSERT_NO_FATAL_FAILURE(clustered(t));
  const std::string busy = t.classOfNode(NodeId("n1"));
  const std::string idle = t.classOfNode(NodeId("n2"));
  const AppRecord rec = app("a1", "etl");
  ASSERT_TRUE(t.noteAsks(rec, {tasks(5)}));
  t.select(rec.id, nodes(t), {});
  ASSERT_EQ(t.selection(rec.id), std::vector<std::string>{idle});
  EXPECT_FALSE(t.fallbackDue(AppId("a9")));
  ASSERT_TRUE(t.fallbackDue(rec.id));
  auto at = [&t](int64_t n1_free, int64_t n2_free) {
    auto n = nodes(t);
    n[0].free = Resource(8192, n1_free);
    n[1].free = Resource(8192, n2_free);
    return n;
  };
  EXPECT_FALSE(t.fallBack(rec.id, {{"tasks", 5}}, at(2, 3)).asks.has_value()) << "idle has room";
  EXPECT_EQ(t.fallbackClass(rec.id), "");
  auto full = t.fallBack(rec.id, {{"tasks", 2}}, at(2, 0));
  ASSERT_TRUE(full.asks.has_value());
  ASSERT_EQ(full.asks->size(), 1u);
  EXPECT_EQ((*full.asks)[0].count, 2);
  ASSERT_EQ((*full.asks)[0].constraints.size(), 1u);
  EXPECT_EQ((*full.asks)[0].constraints[0].values, (std::vector<std::string>{idle, busy}));
  EXPECT_NE(full.note.find("falls back to class " + busy), std::string::npos) << full.note;
  EXPECT_EQ(t.fallbackClass(rec.id), busy);
  std::vector<sched::ResourceRequest> asks = {tasks(2)};
  t.constrain(rec.id, &asks);
  EXPECT_EQ(asks[0].constraints[0].values, (std::vector<std::string>{idle, busy}));
  EXPECT_FALSE(t.fallBack(rec.id, {{"tasks", 2}}, at(2, 0)).asks.has_value()) << "unchanged";
  EXPECT_FALSE(t.fallBack(rec.id, {{"tasks", 2}}, at(0, 0)).asks.has_value()) << "none open";
  EXPECT_EQ(t.fallbackClass(rec.id), busy);
  auto back = t.fallBack(rec.id, {{"tasks", 1}}, at(0, 1));
  ASSERT_TRUE(back.asks.has_value());
  EXPECT_EQ((*back.asks)[0].constraints[0].values, std::vector<std::string>{idle});
  EXPECT_EQ(t.fallbackClass(rec.id), "");
  EXPECT_FALSE(t.fallBack(rec.id, {}, at(2, 0)).asks.has_value()) << "nothing pending";
  EXPECT_FALSE(t.fallbackDue(rec.id));
}

// stop() saves each tenant's series (one row per tenant); another tracker
// recovers them and the run lengths, and clusters into the same classes. A
// run row that does not decode refuses the recovery naming the job.
TEST(HarvestTrackerTest, StoreRoundTripAndCorruptRunRow) {
  auto store = std::move(store::openStateStore("sqlite", ":memory:")).value();
  VirtualClock clock(fromEpochMs(kStartMs));
  std::string busy;
  {
    HarvestTracker t(options(), clock);
    t.setStore(store.get());
    ASSERT_NO_FATAL_FAILURE(clustered(t));
    busy = t.classOfNode(NodeId("n1"));
    auto row = t.recordRun(app("a0", "etl", Millis(120000)), AppState::kFinished);
    ASSERT_TRUE(store->commit({*row}).isOk());
    t.stop();
  }
  auto rows = store->list(kHarvestUsageTable).value();
  ASSERT_EQ(rows.size(), 2u);  // n2, web-n1
  HarvestTracker back(options(), clock);
  back.setStore(store.get());
  ASSERT_TRUE(back.recover().isOk());
  EXPECT_EQ(back.lastRun("etl"), Millis(120000));
  auto classes = back.cluster();
  ASSERT_TRUE(classes.isOk() && classes->has_value());
  back.setClasses(std::move(**classes));
  EXPECT_EQ(back.record(NodeId("n1"), Resource(8192, 8), "web-n1", 5.0, 100, clock.now()), busy);

  ASSERT_TRUE(store->commit({{kHarvestRunsTable, "broken", "nonsense"}}).isOk());
  HarvestTracker refused(options(), clock);
  refused.setStore(store.get());
  Status st = refused.recover();
  ASSERT_FALSE(st.isOk());
  EXPECT_NE(st.message().find("'broken'"), std::string::npos) << st.message();
  EXPECT_EQ(refused.lastRun("etl"), std::nullopt) << "nothing changes on a refused recovery";
}

// The clustering runs at start and every rm.harvest.cluster-every; stop()
// waits for a running one, and none runs after it.
TEST(HarvestTrackerTest, StopWaitsForARunningClusteringAndNoneRunsAfter) {
  VirtualClock clock(fromEpochMs(kStartMs));
  HarvestRmOptions o = options();
  o.cluster_every = Millis(60000);
  o.save_every = Millis(0);
  HarvestTracker t(o, clock);
  std::atomic<int> ticks{0};
  std::atomic<bool> block{false};
  std::promise<void> entered;
  std::promise<void> release_p;
  std::shared_future<void> release = release_p.get_future().share();
  t.start([&] {
    ticks++;
    if (block) {
      entered.set_value();
      release.wait();
    }
    return Status::ok();
  });
  clock.settle();
  EXPECT_EQ(ticks.load(), 1);
  clock.advance(Millis(60000));
  EXPECT_EQ(ticks.load(), 2);
  block = true;
  std::thread timer([&] { clock.advance(Millis(60000)); });
  entered.get_future().wait();
  std::atomic<bool> stopped{false};
  std::thread stopper([&] {
    t.stop();
    stopped = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_FALSE(stopped.load()) << "stop() returned while a clustering ran";
  release_p.set_value();
  stopper.join();
  timer.join();
  EXPECT_TRUE(stopped.load());
  EXPECT_EQ(ticks.load(), 3);
  clock.advance(Millis(600000));
  EXPECT_EQ(ticks.load(), 3);
  EXPECT_EQ(clock.pendingTimers(), 0u);
}

}  // namespace
}  // namespace morpheus::rm
