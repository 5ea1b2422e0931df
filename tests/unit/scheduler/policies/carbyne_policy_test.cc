// Carbyne ordering policy (OSDI'16 §4): hand-computable forward /
// reverse packings, the two-tier score, misestimates, the policy factory, and
// the scheduler core serving leftover SRTF-first.
#include "scheduler/policies/carbyne_policy.h"

#include <gtest/gtest.h>

#include <limits>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "scheduler/policies/policy_factory.h"
#include "scheduler/scheduler.h"

namespace morpheus::sched {
namespace {

const Resource kTask(1024, 1);
const TimePoint kT0 = fromEpochMs(1'800'000'000'000);

DagStage stage(int64_t tasks, int64_t seconds, std::vector<size_t> deps = {}) {
  DagStage s;
  s.tasks_left = tasks;
  s.task_duration = Millis(seconds * 1000);
  s.task = kTask;
  s.deps = std::move(deps);
  return s;
}

Resource slots(int64_t n) { return kTask * n; }

// One stage of 8 x 10 s tasks at a 4-task fair share: 2 waves, T = 20 s; the
// stage has no slack, so it needs all 4 slots now.
TEST(CarbynePlanTest, SingleStageWithoutSlackNeedsItsWholeShare) {
  CarbynePlan p = carbynePlan({stage(8, 10)}, slots(4));
  EXPECT_EQ(p.completion, Millis(20000));
  EXPECT_EQ(p.need_tasks, (std::vector<int64_t>{4}));
  EXPECT_EQ(p.need, slots(4));
}

// The same stage with a deadline 10 s after T (slack 10 s): every task's
// latest start moves 10 s later, the first wave's to 10 s, a full duration
// away, so nothing must start now but the one task a job always keeps; with
// 5 s of slack the first wave still must start within its duration.
TEST(CarbynePlanTest, SlackBeforeTheDeadlineLowersTheNeed) {
  CarbynePlan p = carbynePlan({stage(8, 10)}, slots(4), Millis(-1), Millis(10000));
  EXPECT_EQ(p.completion, Millis(20000));
  EXPECT_EQ(p.need_tasks, (std::vector<int64_t>{1}));
  EXPECT_EQ(p.need, slots(1));
  CarbynePlan q = carbynePlan({stage(8, 10)}, slots(4), Millis(-1), Millis(5000));
  EXPECT_EQ(q.need_tasks, (std::vector<int64_t>{4}));
}

// map (4 x 10 s) -> reduce (2 x 30 s), and a side stage X (2 x 10 s) with no
// dependents, at 8 slots: T = 40 s (critical path map + reduce). map must end
// by 10 s: all 4 now. X may end as late as 40 s: its one wave fits in the
// last of 4 wave slots, so it needs nothing now (reverse packing places it
// later). reduce waits for map: 0 now. Need = 4 tasks; leftover 4.
TEST(CarbynePlanTest, OffCriticalPathStageYieldsByReversePacking) {
  CarbynePlan p = carbynePlan({stage(4, 10), stage(2, 30, {0}), stage(2, 10)}, slots(8));
  EXPECT_EQ(p.completion, Millis(40000));
  EXPECT_EQ(p.latest_finish, (std::vector<Millis>{Millis(10000), Millis(40000), Millis(40000)}));
  EXPECT_EQ(p.need_tasks, (std::vector<int64_t>{4, 0, 0}));
  EXPECT_EQ(p.need, slots(4));
}

// A stage with slack only through a longer parallel branch: A (6 x 10 s)
// alone, B (1 x 50 s) alone; T = 50 s at 3 slots (A: 2 waves = 20 s). A may
// finish by 50 s: its 2 full waves fit in the last 20 s of floor(50/10) = 5
// wave slots, so it needs nothing now; B, on the critical path, needs its
// task.
TEST(CarbynePlanTest, ParallelLongBranchGivesSlackToShortStage) {
  CarbynePlan p = carbynePlan({stage(6, 10), stage(1, 50)}, slots(3));
  EXPECT_EQ(p.completion, Millis(50000));
  EXPECT_EQ(p.need_tasks, (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(p.need, slots(1));
}

// Only stages with slack yield everything: two chains A (1 x 10 s) -> C
// (1 x 60 s) and B (2 x 10 s) -> D (1 x 20 s) at 4 slots, T = 70 s. A must
// end by 10 s: its task now; B may end by 50 s: nothing now. A random DAG's
// critical stage always needs a task (a job never plans to hold nothing).
TEST(CarbynePlanTest, StagesWithSlackNeedNothingButTheCriticalOneRuns) {
  CarbynePlan p =
      carbynePlan({stage(1, 10), stage(2, 10), stage(1, 60, {0}), stage(1, 20, {1})}, slots(4));
  EXPECT_EQ(p.completion, Millis(70000));
  EXPECT_EQ(p.need_tasks, (std::vector<int64_t>{1, 0, 0, 0}));
  EXPECT_EQ(p.need, slots(1));
  std::mt19937_64 rng(7);
  std::uniform_int_distribution<int64_t> tasks(1, 30), secs(1, 120), share(1, 12);
  for (int round = 0; round < 300; round++) {
    std::vector<DagStage> dag;
    for (size_t i = 0; i < 6; i++) {
      std::vector<size_t> deps;
      if (i >= 2) deps.push_back(static_cast<size_t>(rng() % i));
      dag.push_back(stage(tasks(rng), secs(rng), deps));
    }
    EXPECT_FALSE(carbynePlan(dag, slots(share(rng))).need.isZero()) << "round " << round;
  }
}

// Reverse packing puts the full waves last (Carbyne §4.2): 25 x 10 s tasks at
// 10 slots take 3 waves, T = 30 s; waves of 10 fill [10 s, 30 s), so only
// the remaining 5 must run now (spreading evenly would keep 9), and the job
// lends the other 5 slots without finishing later.
TEST(CarbynePlanTest, OnlyTheRemainderOfTheLastWavesRunsNow) {
  CarbynePlan p = carbynePlan({stage(25, 10)}, slots(10));
  EXPECT_EQ(p.completion, Millis(30000));
  EXPECT_EQ(p.need_tasks, (std::vector<int64_t>{5}));
  EXPECT_EQ(p.need, slots(5));
}

// Parallel stages compete for the share (forward packing): two stages of
// 4 x 10 s at 4 slots cannot both run at once, so T = 20 s, not the 10 s
// each would take alone. Reverse packing from T puts one of them in the
// last wave, so only the other must run now: the need is 4 slots, within
// the fair share.
TEST(CarbynePlanTest, ParallelStagesCompeteForTheShare) {
  CarbynePlan p = carbynePlan({stage(4, 10), stage(4, 10)}, slots(4));
  EXPECT_EQ(p.completion, Millis(20000));
  EXPECT_EQ(p.need_tasks[0] + p.need_tasks[1], 4);
  EXPECT_EQ(p.need, slots(4));
}

// Misestimates: with every duration off by up to +-50% (seeded), the plan
// keeps its invariants: the critical stage 0 keeps at least one task, the
// need stays within the fair share, the stage waiting for its dependency
// needs nothing, and T covers the critical path 0 -> 1 -> 3 (one wave each).
TEST(CarbynePlanTest, NoisyEstimatesKeepPlanInvariants) {
  std::mt19937_64 rng(17);
  std::uniform_real_distribution<double> noise(0.5, 1.5);
  for (int round = 0; round < 200; round++) {
    std::vector<DagStage> dag = {stage(4, 10), stage(2, 30, {0}), stage(2, 10), stage(5, 20, {1})};
    for (auto& s : dag) {
      s.task_duration =
          Millis(static_cast<int64_t>(static_cast<double>(s.task_duration.count()) * noise(rng)));
    }
    CarbynePlan p = carbynePlan(dag, slots(6));
    EXPECT_GE(p.need_tasks[0], 1);
    EXPECT_EQ(p.need_tasks[1], 0);
    EXPECT_TRUE(p.need.fitsIn(slots(6)));
    EXPECT_GE(p.completion, dag[0].task_duration + dag[1].task_duration * 1 + dag[3].task_duration);
  }
}

// Extended resources limit the packing as memory and vcores do, each stage
// by its own: A (4 x 10 s, 100 MB/s of disk read each) and B (4 x 10 s,
// 100 MB/s of network in each) side by side at a share of 8 vcores, 200 MB/s
// of disk and 400 MB/s of network: A runs 2 at a time (2 waves), B all 4 at
// once; T = 20 s, A's second wave must start now (2 tasks) and B has slack.
// A share that lists no disk read fits no task of A (Resource::countFitting:
// an absent dimension is zero): A runs one task at a time, T = 40 s.
TEST(CarbynePlanTest, ExtendedResourcesLimitEachStage) {
  DagStage a = stage(4, 10);
  a.task.setExtended("disk_in", 100);
  DagStage b = stage(4, 10);
  b.task.setExtended("net_in", 100);
  Resource share = slots(8);
  share.setExtended("disk_in", 200);
  share.setExtended("net_in", 400);
  CarbynePlan p = carbynePlan({a, b}, share);
  EXPECT_EQ(p.completion, Millis(20000));
  EXPECT_EQ(p.need_tasks, (std::vector<int64_t>{2, 0}));
  CarbynePlan q = carbynePlan({a}, slots(8));
  EXPECT_EQ(q.completion, Millis(40000));
  EXPECT_EQ(q.need_tasks, (std::vector<int64_t>{1}));
}

// Below its need a job is scored by DRF; at or above it by its remaining time
// in the leftover tier, after every DRF-tier job.
TEST(CarbyneOrderingPolicyTest, ScoresDrfBelowNeedAndSrtfAbove) {
  CarbyneOrderingPolicy p;
  const Resource cluster = slots(10);
  AppHint h = p.planApp({stage(8, 10)}, slots(4));  // need 4, T = 20 s
  ASSERT_TRUE(h.valid);
  const AppHint none;
  const Resource two = slots(2), four = slots(4), nine = slots(9);
  EXPECT_DOUBLE_EQ(p.appScore({two, h, cluster, Millis(0), TimePoint{}}), 0.2);
  EXPECT_DOUBLE_EQ(p.appScore({four, h, cluster, Millis(0), TimePoint{}}),
                   CarbyneOrderingPolicy::kLeftoverTier + 20.0);
  EXPECT_DOUBLE_EQ(p.appScore({nine, none, cluster, Millis(0), TimePoint{}}),
                   0.9);  // no DAG: DRF
}

// Users: one with a job below its need by weighted dominant share (DRF
// between users), one whose jobs all hold their need by its best job's
// remaining time (leftover tier).
TEST(CarbyneOrderingPolicyTest, UsersByDrfBelowNeedAndBestJobInLeftover) {
  CarbyneOrderingPolicy p;
  const Resource cluster = slots(10);
  const double leftover = CarbyneOrderingPolicy::kLeftoverTier + 20.0;
  EXPECT_DOUBLE_EQ(p.userScore(slots(9), 1.0, cluster, 0.2), 0.9);
  EXPECT_DOUBLE_EQ(p.userScore(slots(9), 2.0, cluster, 0.2), 0.45);
  EXPECT_DOUBLE_EQ(p.userScore(slots(1), 1.0, cluster, leftover), leftover);
}

// Tetris alignment on a 64 GiB / 16-vcore node with 16 GiB / 2 vcores free:
// (4096/65536)(16384/65536) + (1/16)(2/16) = 0.015625 + 0.0078125.
TEST(CarbynePackingTest, AlignmentIsNormalisedDotProduct) {
  const Resource total(65536, 16), free(16384, 2);
  EXPECT_DOUBLE_EQ(tetrisAlignment(Resource(4096, 1), free, total), 0.0234375);
  EXPECT_DOUBLE_EQ(tetrisAlignment(Resource(0, 1), free, Resource(0, 16)), 0.0078125);
  CarbyneOrderingPolicy p;
  AppHint h{true, Resource(4096, 1), Millis(1000)};
  const Resource need(4096, 1), below(2048, 1);
  EXPECT_DOUBLE_EQ(p.askScore({need, h, need, free, total}), 0.0234375);  // at its need
  EXPECT_DOUBLE_EQ(p.askScore({below, h, need, free, total}), 0.0);       // below: priority
  // Below the need, an ask of a stage the plan needs now comes first.
  h.needed = {"b", "d"};
  EXPECT_DOUBLE_EQ(p.askScore({below, h, need, free, total, "b"}), 1.0);
  EXPECT_DOUBLE_EQ(p.askScore({below, h, need, free, total, "c"}), 0.0);
  EXPECT_DOUBLE_EQ(p.askScore({need, h, need, free, total, "c"}), 0.0234375);  // at its need
  // Declining slack: below the need a stage the plan does not need is
  // declined, unless the hint names no stage or the ask has no request id.
  CarbyneOrderingPolicy d(LeftoverPacking{0.5, 60.0, true, true});
  EXPECT_DOUBLE_EQ(d.askScore({below, h, need, free, total, "b"}), 1.0);
  EXPECT_EQ(d.askScore({below, h, need, free, total, "c"}), AskChooser::kDecline);
  EXPECT_DOUBLE_EQ(d.askScore({below, h, need, free, total}), 0.0);
  EXPECT_DOUBLE_EQ(d.askScore({need, h, need, free, total, "c"}), 0.0234375);
  h.needed.clear();
  EXPECT_DOUBLE_EQ(d.askScore({below, h, need, free, total, "c"}), 0.0);
}

// Needed tasks by count (LeftoverPacking::count_needed): below the need, a
// task of a needed stage is needed only while fewer of the stage's tasks
// run than the plan runs now; beyond that it has slack (declined with
// decline_slack). Without the option, or without counts in the hint, every
// task of a needed stage is needed.
TEST(CarbynePackingTest, NeededStageBeyondItsCountHasSlack) {
  const Resource total(65536, 16), free(16384, 2), need(4096, 2), below(2048, 1);
  AppHint h{true, need, Millis(1000)};
  h.needed = {"b", "d"};
  h.needed_tasks = {2, 1};
  LeftoverPacking count;
  count.count_needed = true;
  const CarbyneOrderingPolicy c(count);
  EXPECT_DOUBLE_EQ(c.askScore({below, h, need, free, total, "b", 0}), 1.0);
  EXPECT_DOUBLE_EQ(c.askScore({below, h, need, free, total, "b", 1}), 1.0);
  EXPECT_DOUBLE_EQ(c.askScore({below, h, need, free, total, "b", 2}), 0.0);
  EXPECT_DOUBLE_EQ(c.askScore({below, h, need, free, total, "d", 0}), 1.0);
  EXPECT_DOUBLE_EQ(c.askScore({below, h, need, free, total, "d", 1}), 0.0);
  count.decline_slack = true;
  const CarbyneOrderingPolicy cd(count);
  EXPECT_DOUBLE_EQ(cd.askScore({below, h, need, free, total, "b", 1}), 1.0);
  EXPECT_EQ(cd.askScore({below, h, need, free, total, "b", 2}), AskChooser::kDecline);
  const CarbyneOrderingPolicy plain;
  EXPECT_DOUBLE_EQ(plain.askScore({below, h, need, free, total, "b", 2}), 1.0);
  h.needed_tasks.clear();
  EXPECT_DOUBLE_EQ(c.askScore({below, h, need, free, total, "b", 2}), 1.0);
}

// The hint names the stages whose tasks make up the need (by request id):
// A (2 x 10 s) has slack next to B (1 x 60 s) at 4 slots, so only B is
// needed; a stage without a request id is never named.
TEST(CarbyneOrderingPolicyTest, HintNamesTheNeededStages) {
  CarbyneOrderingPolicy p;
  DagStage a = stage(2, 10), b = stage(1, 60);
  a.request_id = "a";
  b.request_id = "b";
  AppHint h = p.planApp({a, b}, slots(4));
  EXPECT_EQ(h.need, slots(1));
  EXPECT_EQ(h.needed, (std::vector<std::string>{"b"}));
  EXPECT_EQ(h.needed_tasks, (std::vector<int64_t>{1}));
  b.request_id.clear();
  EXPECT_TRUE(p.planApp({a, b}, slots(4)).needed.empty());
  // Stages under one request id add up: 8 x 10 s at 4 slots needs 4 now.
  DagStage c = stage(8, 10), d = stage(8, 10);
  c.request_id = d.request_id = "cd";
  h = p.planApp({c, d}, slots(8));
  EXPECT_EQ(h.needed, (std::vector<std::string>{"cd"}));
  EXPECT_EQ(h.needed_tasks, (std::vector<int64_t>{8}));
}

// The factory knows drf, fifo, carbyne and phoenix; anything else names the field.
TEST(PolicyFactoryTest, UnknownNameIsInvalidArgumentNamingField) {
  for (const char* n : {"drf", "fifo", "carbyne", "phoenix"}) {
    auto p = makeOrderingPolicy(n, "f");
    ASSERT_TRUE(p.isOk()) << n;
    EXPECT_EQ((*p)->name(), n);
  }
  auto bad = makeOrderingPolicy("srtf", "scheduler.policy.root.default");
  ASSERT_FALSE(bad.isOk());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("scheduler.policy.root.default"), std::string::npos);
  EXPECT_NE(bad.status().message().find("carbyne"), std::string::npos);
}

std::unique_ptr<Scheduler> carbyneScheduler() {
  SchedulerOptions o;
  o.adhoc_queues.push_back({"root.default", 1.0, std::make_shared<CarbyneOrderingPolicy>()});
  auto s = Scheduler::create(std::move(o));
  EXPECT_TRUE(s.isOk());
  return std::move(s).value();
}

ResourceRequest ask(int32_t count, std::string id = "s0", int32_t priority = 0) {
  ResourceRequest r;
  r.request_id = std::move(id);
  r.priority = priority;
  r.capability = kTask;
  r.count = count;
  return r;
}

std::map<std::string, int> grantsByApp(Scheduler& s, TimePoint t) {
  auto r = s.schedulePass(t);
  std::map<std::string, int> m;
  for (const auto& a : r.allocations) m[a.app.value()]++;
  return m;
}

// Two jobs in one Carbyne leaf on 8 slots (fair share 4 each). "alt" has a
// stage with slack next to a long one (need 2 now); "short" is one stage of 6
// tasks (need 3: two waves of 3 keep its 20 s). Under DRF each gets 4; under
// Carbyne alt stops at its need and the leftover goes SRTF-first to short.
TEST(CarbyneSchedulerTest, AltruisticJobYieldsLeftoverToOtherJob) {
  auto s = carbyneScheduler();
  ASSERT_TRUE(s->addNode(NodeId("n1"), slots(8), {}).isOk());
  ASSERT_TRUE(s->addApp(AppId("alt"), UserId("u1"), QueueRef::adhoc("root.default")).isOk());
  ASSERT_TRUE(s->addApp(AppId("short"), UserId("u2"), QueueRef::adhoc("root.default")).isOk());
  // alt: A 4 x 10 s (runnable), B 1 x 60 s (runnable): at 4 slots T = 60 s;
  // A may end by 60 s -> 1 task now; B 1 task now: need 2.
  ASSERT_TRUE(s->reportDag(AppId("alt"), {stage(4, 10), stage(1, 60)}).isOk());
  ASSERT_TRUE(s->updateAsks(AppId("alt"), {ask(4, "a", 0), ask(1, "b", 1)}).isOk());
  // short: 6 x 10 s at 4 slots: T = 20 s, 2 waves of 3: need 3.
  ASSERT_TRUE(s->reportDag(AppId("short"), {stage(6, 10)}).isOk());
  ASSERT_TRUE(s->updateAsks(AppId("short"), {ask(6)}).isOk());
  auto m = grantsByApp(*s, kT0);
  EXPECT_EQ(m["short"], 6);
  EXPECT_EQ(m["alt"], 2);
}

// A job below its need runs the tasks its plan needs now, not the stage its
// AM asks first. alt: A (2 x 10 s, asked first, priority 0) has slack next
// to B (1 x 60 s, priority 1): at 4 slots T = 60 s and only B's task is
// needed now. short: 6 x 10 s, need 3. On 8 slots alt's DRF-tier grant
// goes to B; then short, closest to completion, takes 6 and alt's A the
// last slot. Taking asks in priority order instead, alt got two A tasks and
// B waited: alt's need (one task's worth) was held by A's task, so alt left
// the DRF tier with its critical stage not started.
TEST(CarbyneSchedulerTest, JobBelowItsNeedRunsTheNeededStageFirst) {
  auto s = carbyneScheduler();
  ASSERT_TRUE(s->addNode(NodeId("n1"), slots(8), {}).isOk());
  ASSERT_TRUE(s->addApp(AppId("alt"), UserId("u1"), QueueRef::adhoc("root.default")).isOk());
  ASSERT_TRUE(s->addApp(AppId("short"), UserId("u2"), QueueRef::adhoc("root.default")).isOk());
  DagStage a = stage(2, 10), b = stage(1, 60);
  a.request_id = "a";
  b.request_id = "b";
  ASSERT_TRUE(s->reportDag(AppId("alt"), {a, b}).isOk());
  ASSERT_TRUE(s->updateAsks(AppId("alt"), {ask(2, "a", 0), ask(1, "b", 1)}).isOk());
  ASSERT_TRUE(s->reportDag(AppId("short"), {stage(6, 10)}).isOk());
  ASSERT_TRUE(s->updateAsks(AppId("short"), {ask(6)}).isOk());
  auto r = s->schedulePass(kT0);
  std::map<std::string, int> alt, by_app;
  for (const auto& g : r.allocations) {
    by_app[g.app.value()]++;
    if (g.app.value() == "alt") alt[g.request_id]++;
  }
  EXPECT_EQ(by_app["short"], 6);
  EXPECT_EQ(alt["b"], 1);
  EXPECT_EQ(alt["a"], 1);
}

// The same jobs under DRF split the node 4 / 4 (the baseline the test above differs from).
TEST(CarbyneSchedulerTest, DrfLeafSplitsEvenlyWithSameReports) {
  SchedulerOptions o;
  o.adhoc_queues.push_back({"root.default", 1.0, std::make_shared<DrfOrderingPolicy>()});
  auto s = std::move(Scheduler::create(std::move(o))).value();
  ASSERT_TRUE(s->addNode(NodeId("n1"), slots(8), {}).isOk());
  ASSERT_TRUE(s->addApp(AppId("alt"), UserId("u1"), QueueRef::adhoc("root.default")).isOk());
  ASSERT_TRUE(s->addApp(AppId("short"), UserId("u2"), QueueRef::adhoc("root.default")).isOk());
  ASSERT_TRUE(s->reportDag(AppId("alt"), {stage(4, 10), stage(1, 60)}).isOk());
  ASSERT_TRUE(s->updateAsks(AppId("alt"), {ask(4, "a", 0), ask(1, "b", 1)}).isOk());
  ASSERT_TRUE(s->reportDag(AppId("short"), {stage(6, 10)}).isOk());
  ASSERT_TRUE(s->updateAsks(AppId("short"), {ask(6)}).isOk());
  auto m = grantsByApp(*s, kT0);
  EXPECT_EQ(m["short"], 4);
  EXPECT_EQ(m["alt"], 4);
}

// Declining slack (LeftoverPacking::decline_slack). n1 (4 GiB, 4 vcores)
// and n2 (8 GiB, 8 vcores). other: X 1 x 100 s (needed) and Y 8 x 10 s
// (slack), T = 100 s; a heartbeat of n2 gives it X (its need) and then 7
// Y as leftover. alt: A 4 x 10 s (1 GiB; asked first) and B 1 x 120 s
// (5 GiB; needed), T = 120 s, need B. On n1, where B does not fit, alt is
// below its need: taking A there runs all 4 A tasks on alt's share and
// other's last Y waits; declining them, n1's room goes to the leftover
// tier, where other's Y (closer to completion) goes first and alt's A take
// the rest, so no room stays unused.
std::map<std::string, int> declineScenario(bool decline) {
  SchedulerOptions o;
  o.adhoc_queues.push_back(
      {"root.default", 1.0,
       std::make_shared<CarbyneOrderingPolicy>(LeftoverPacking{0.5, 60.0, true, decline})});
  auto s = std::move(Scheduler::create(std::move(o))).value();
  EXPECT_TRUE(s->addNode(NodeId("n1"), slots(4), {}).isOk());
  EXPECT_TRUE(s->addNode(NodeId("n2"), slots(8), {}).isOk());
  EXPECT_TRUE(s->addApp(AppId("alt"), UserId("u1"), QueueRef::adhoc("root.default")).isOk());
  EXPECT_TRUE(s->addApp(AppId("other"), UserId("u2"), QueueRef::adhoc("root.default")).isOk());
  DagStage x = stage(1, 100), y = stage(8, 10);
  x.request_id = "x";
  y.request_id = "y";
  EXPECT_TRUE(s->reportDag(AppId("other"), {x, y}).isOk());
  EXPECT_EQ(s->appHint(AppId("other")).value().needed, (std::vector<std::string>{"x"}));
  EXPECT_TRUE(s->updateAsks(AppId("other"), {ask(1, "x", 0), ask(8, "y", 1)}).isOk());
  auto first = s->nodeUpdate(NodeId("n2"), kT0);
  EXPECT_TRUE(first.isOk());
  EXPECT_EQ(first->allocations.size(), 8u);
  DagStage a = stage(4, 10), b = stage(1, 120);
  a.request_id = "a";
  b.request_id = "b";
  b.task = Resource(5120, 1);
  EXPECT_TRUE(s->reportDag(AppId("alt"), {a, b}).isOk());
  const AppHint h = s->appHint(AppId("alt")).value();
  EXPECT_EQ(h.need, Resource(5120, 1));
  EXPECT_EQ(h.needed, (std::vector<std::string>{"b"}));
  ResourceRequest big = ask(1, "b", 1);
  big.capability = Resource(5120, 1);
  EXPECT_TRUE(s->updateAsks(AppId("alt"), {ask(4, "a", 0), big}).isOk());
  auto second = s->nodeUpdate(NodeId("n1"), kT0);
  EXPECT_TRUE(second.isOk());
  std::map<std::string, int> m;
  for (const auto& g : second->allocations) m[g.app.value() + ":" + g.request_id]++;
  return m;
}

// Needed tasks by count through the scheduler core (the running count is
// the job's live containers of the ask's request id). n2 (10 GiB, 10
// vcores) is taken by "other"; "alt" reports A 2 x 60 s, B 1 x 100 s
// (5 GiB) and C 2 x 10 s at a 6-slot share: its plan runs one A and B now
// (need 6 GiB), C has slack. On n1 (2 slots), where B does not fit, alt
// stays below its need: counting, its second grant is C (first in its AM's
// order once A runs the one task its plan needs); without counting, A's
// second task, whose stage already runs what the plan needs.
std::map<std::string, int> countScenario(bool count) {
  LeftoverPacking lp;
  lp.count_needed = count;
  SchedulerOptions o;
  o.adhoc_queues.push_back({"root.default", 1.0, std::make_shared<CarbyneOrderingPolicy>(lp)});
  auto s = std::move(Scheduler::create(std::move(o))).value();
  EXPECT_TRUE(s->addNode(NodeId("n1"), slots(2), {}).isOk());
  EXPECT_TRUE(s->addNode(NodeId("n2"), slots(10), {}).isOk());
  EXPECT_TRUE(s->addApp(AppId("other"), UserId("u2"), QueueRef::adhoc("root.default")).isOk());
  DagStage x = stage(10, 100);
  x.request_id = "x";
  EXPECT_TRUE(s->reportDag(AppId("other"), {x}).isOk());
  EXPECT_TRUE(s->updateAsks(AppId("other"), {ask(10, "x", 0)}).isOk());
  auto first = s->nodeUpdate(NodeId("n2"), kT0);
  EXPECT_TRUE(first.isOk());
  EXPECT_EQ(first->allocations.size(), 10u);
  EXPECT_TRUE(s->addApp(AppId("alt"), UserId("u1"), QueueRef::adhoc("root.default")).isOk());
  DagStage a = stage(2, 60), b = stage(1, 100), c = stage(2, 10);
  a.request_id = "a";
  b.request_id = "b";
  c.request_id = "c";
  b.task = Resource(5120, 1);
  EXPECT_TRUE(s->reportDag(AppId("alt"), {a, b, c}).isOk());
  const AppHint h = s->appHint(AppId("alt")).value();
  EXPECT_EQ(h.needed, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(h.needed_tasks, (std::vector<int64_t>{1, 1}));
  ResourceRequest big = ask(1, "b", 2);
  big.capability = Resource(5120, 1);
  EXPECT_TRUE(s->updateAsks(AppId("alt"), {ask(2, "c", 0), ask(2, "a", 1), big}).isOk());
  auto second = s->nodeUpdate(NodeId("n1"), kT0);
  EXPECT_TRUE(second.isOk());
  std::map<std::string, int> m;
  for (const auto& g : second->allocations) m[g.app.value() + ":" + g.request_id]++;
  return m;
}

TEST(CarbyneSchedulerTest, NeededStageRunningItsCountLeavesFurtherTasksSlack) {
  EXPECT_EQ(countScenario(true), (std::map<std::string, int>{{"alt:a", 1}, {"alt:c", 1}}));
  EXPECT_EQ(countScenario(false), (std::map<std::string, int>{{"alt:a", 2}}));
}

TEST(CarbyneSchedulerTest, JobBelowItsNeedDeclinesSlackWhereItsNeededTaskDoesNotFit) {
  EXPECT_EQ(declineScenario(true), (std::map<std::string, int>{{"alt:a", 3}, {"other:y", 1}}));
  EXPECT_EQ(declineScenario(false), (std::map<std::string, int>{{"alt:a", 4}}));
}

// Leftover goes shortest-remaining-time first: two jobs at their need, the
// one with less remaining work gets the free slots.
TEST(CarbyneSchedulerTest, LeftoverGoesToShortestRemainingTimeFirst) {
  auto s = carbyneScheduler();
  ASSERT_TRUE(s->addNode(NodeId("n1"), slots(7), {}).isOk());
  ASSERT_TRUE(s->addApp(AppId("long"), UserId("u1"), QueueRef::adhoc("root.default")).isOk());
  ASSERT_TRUE(s->addApp(AppId("near"), UserId("u2"), QueueRef::adhoc("root.default")).isOk());
  // Both: a 1-task 100 s (long) / 30 s (near) stage plus a 4 x 10 s stage with slack.
  ASSERT_TRUE(s->reportDag(AppId("long"), {stage(1, 100), stage(4, 10)}).isOk());
  ASSERT_TRUE(s->reportDag(AppId("near"), {stage(1, 30), stage(4, 10)}).isOk());
  ASSERT_TRUE(s->updateAsks(AppId("long"), {ask(1, "a", 0), ask(4, "b", 1)}).isOk());
  ASSERT_TRUE(s->updateAsks(AppId("near"), {ask(1, "a", 0), ask(4, "b", 1)}).isOk());
  // Fair share 3 slots. Needs: long 1 + 1 = 2 (T 100 s); near 1 + 1 = 2
  // (T 30 s; its 4 short tasks fit the 2 waves before 30 s): 4 of 7 slots,
  // the 3 leftover to near, closest to completion.
  auto m = grantsByApp(*s, kT0);
  EXPECT_EQ(m["near"], 5);
  EXPECT_EQ(m["long"], 2);
}

// A job that reports no DAG yields nothing: it gets its whole fair share by
// DRF, but beyond it competes for leftover after the jobs with an estimate,
// so what an altruist lends is not taken by whoever reports nothing. 8 slots,
// fair share 4 each: alt (1 x 100 s critical + 4 x 10 s side, need 2) and
// quiet (8 tasks, no DAG, need 4) hold their needs; the 2 left go to alt
// (remaining 100 s) rather than quiet (unknown). Before, quiet stayed in the
// DRF tier for good and took them (6 / 2).
TEST(CarbyneSchedulerTest, JobWithoutDagGetsItsFairShareThenLeftoverLast) {
  auto s = carbyneScheduler();
  ASSERT_TRUE(s->addNode(NodeId("n1"), slots(8), {}).isOk());
  ASSERT_TRUE(s->addApp(AppId("alt"), UserId("u1"), QueueRef::adhoc("root.default")).isOk());
  ASSERT_TRUE(s->addApp(AppId("quiet"), UserId("u2"), QueueRef::adhoc("root.default")).isOk());
  ASSERT_TRUE(s->reportDag(AppId("alt"), {stage(1, 100), stage(4, 10)}).isOk());
  ASSERT_TRUE(s->updateAsks(AppId("alt"), {ask(1, "a", 0), ask(4, "b", 1)}).isOk());
  ASSERT_TRUE(s->updateAsks(AppId("quiet"), {ask(8)}).isOk());
  auto hint = s->appHint(AppId("quiet"));
  ASSERT_TRUE(hint.isOk());
  EXPECT_TRUE(hint->valid);
  EXPECT_FALSE(hint->from_dag);
  EXPECT_EQ(hint->need, slots(4));
  auto m = grantsByApp(*s, kT0);
  EXPECT_EQ(m["alt"], 4);
  EXPECT_EQ(m["quiet"], 4);
}

// Leftover packing. One job: L 1 x 100 s (1 GiB, 1 vcore), M 2 x 10 s
// (6 GiB, 1 vcore; priority 1), C 2 x 10 s (2 GiB, 3 vcores; priority 2). At
// the cluster (17 GiB, 8 vcores) T = 100 s and the need is one task of each
// (9 GiB, 5 vcores). Node n1 (9 GiB, 5 vcores) takes L, M, C in priority
// order: the need. On n2 (8 GiB, 3 vcores), in the leftover tier, C aligns
// better (2/8 x 8/8 + 3/3 x 3/3 = 1.25) than M (6/8 + 1/3 = 1.083) and
// takes the node; the first fitting ask in priority order would take M.
TEST(CarbyneSchedulerTest, LeftoverGoesToBestAlignedAsk) {
  auto s = carbyneScheduler();
  ASSERT_TRUE(s->addNode(NodeId("n1"), Resource(9216, 5), {}).isOk());
  ASSERT_TRUE(s->addNode(NodeId("n2"), Resource(8192, 3), {}).isOk());
  ASSERT_TRUE(s->addApp(AppId("j"), UserId("u"), QueueRef::adhoc("root.default")).isOk());
  const Resource l(1024, 1), m(6144, 1), c(2048, 3);
  auto st = [](int64_t tasks, int64_t secs, Resource r) {
    DagStage d = stage(tasks, secs);
    d.task = r;
    return d;
  };
  ASSERT_TRUE(s->reportDag(AppId("j"), {st(1, 100, l), st(2, 10, m), st(2, 10, c)}).isOk());
  auto mk = [](std::string id, int32_t count, int32_t prio, Resource r) {
    ResourceRequest q = ask(count, std::move(id), prio);
    q.capability = r;
    return q;
  };
  ASSERT_TRUE(
      s->updateAsks(AppId("j"), {mk("L", 1, 0, l), mk("M", 2, 1, m), mk("C", 2, 2, c)}).isOk());
  auto r = s->schedulePass(kT0);
  std::map<std::string, int> on_n2;
  for (const auto& a : r.allocations) {
    if (a.node == NodeId("n2")) on_n2[std::to_string(a.resource.memoryMib())]++;
  }
  EXPECT_EQ(r.allocations.size(), 4u);
  EXPECT_EQ(on_n2["2048"], 1);
  EXPECT_EQ(on_n2["6144"], 0);
}

// Leftover packing across jobs (Carbyne §4.3: the runnable tasks of every
// job in the leftover tier, not one job's at a time). near: A 1 x 100 s
// (1 GiB, 1 vcore) and M 2 x 10 s (4 GiB, 1 vcore); far: B 1 x 120 s
// (1 GiB, 1 vcore) and C 2 x 10 s (2 GiB, 4 vcores). Shares (5 GiB, 5
// vcores): each job needs only its long task (M and C have slack), which
// n1 (2 GiB, 2 vcores) holds. On n2 (8 GiB, 8 vcores) both jobs are in the
// leftover tier: C aligns better (2/8 + 4/8 = 0.75) than M (4/8 + 1/8 =
// 0.625), more than the SRTF term favours near (0.5 x (ln(1 + 120/60) -
// ln(1 + 100/60)) = 0.058), so far's C goes first, then M (both align
// 0.4375 then; near is closer to completion), and then nothing fits. Choosing among near's asks
// alone (SRTF first) would put M and M there.
TEST(CarbyneSchedulerTest, LeftoverIsPackedAcrossJobs) {
  SchedulerOptions o;
  o.adhoc_queues.push_back(
      {"root.default", 1.0, std::make_shared<CarbyneOrderingPolicy>(LeftoverPacking{0.5, 60.0})});
  auto s = std::move(Scheduler::create(std::move(o))).value();
  ASSERT_TRUE(s->addNode(NodeId("n1"), Resource(2048, 2), {}).isOk());
  ASSERT_TRUE(s->addNode(NodeId("n2"), Resource(8192, 8), {}).isOk());
  const Resource a(1024, 1), m(4096, 1), c(2048, 4);
  auto st = [](int64_t tasks, int64_t secs, Resource r) {
    DagStage d = stage(tasks, secs);
    d.task = r;
    return d;
  };
  auto mk = [](std::string id, int32_t count, int32_t prio, Resource r) {
    ResourceRequest q = ask(count, std::move(id), prio);
    q.capability = r;
    return q;
  };
  ASSERT_TRUE(s->addApp(AppId("near"), UserId("u1"), QueueRef::adhoc("root.default")).isOk());
  ASSERT_TRUE(s->addApp(AppId("far"), UserId("u2"), QueueRef::adhoc("root.default")).isOk());
  ASSERT_TRUE(s->reportDag(AppId("near"), {st(1, 100, a), st(2, 10, m)}).isOk());
  ASSERT_TRUE(s->reportDag(AppId("far"), {st(1, 120, a), st(2, 10, c)}).isOk());
  EXPECT_EQ(s->appHint(AppId("near")).value().need, a);
  EXPECT_EQ(s->appHint(AppId("far")).value().need, a);
  ASSERT_TRUE(s->updateAsks(AppId("near"), {mk("A", 1, 0, a), mk("M", 2, 1, m)}).isOk());
  ASSERT_TRUE(s->updateAsks(AppId("far"), {mk("B", 1, 0, a), mk("C", 2, 1, c)}).isOk());
  auto r = s->schedulePass(kT0);
  std::vector<std::string> on_n2;
  for (const auto& x : r.allocations) {
    if (x.node == NodeId("n2")) on_n2.push_back(x.app.value() + ":" + x.request_id);
  }
  EXPECT_EQ(on_n2, (std::vector<std::string>{"far:C", "near:M"}));
}

// The fair share planApp gets follows queue weights and users: 16 slots,
// root.a (weight 3, carbyne) next to root.b (weight 1) with demand. A job of
// 48 x 10 s alone in root.a gets 12 slots: 4 waves, T = 40 s, need 12. With
// a second user's job in root.a, 6 slots: 8 waves, T = 80 s, need 6. (The
// previous split, the cluster over the leaf's apps, gave 16 and 8 slots.)
TEST(CarbyneSchedulerTest, FairShareFollowsQueueWeightsAndUsers) {
  SchedulerOptions o;
  o.adhoc_queues.push_back({"root.a", 3.0, std::make_shared<CarbyneOrderingPolicy>()});
  o.adhoc_queues.push_back({"root.b", 1.0, nullptr});
  auto s = std::move(Scheduler::create(std::move(o))).value();
  ASSERT_TRUE(s->addNode(NodeId("n1"), slots(16), {}).isOk());
  ASSERT_TRUE(s->addApp(AppId("b"), UserId("ub"), QueueRef::adhoc("root.b")).isOk());
  ASSERT_TRUE(s->updateAsks(AppId("b"), {ask(16)}).isOk());
  ASSERT_TRUE(s->addApp(AppId("x"), UserId("u1"), QueueRef::adhoc("root.a")).isOk());
  ASSERT_TRUE(s->reportDag(AppId("x"), {stage(48, 10)}).isOk());
  AppHint h = s->appHint(AppId("x")).value();
  EXPECT_EQ(h.need, slots(12));
  EXPECT_EQ(h.remaining, Millis(40'000));
  ASSERT_TRUE(s->addApp(AppId("y"), UserId("u2"), QueueRef::adhoc("root.a")).isOk());
  ASSERT_TRUE(s->reportDag(AppId("x"), {stage(48, 10)}).isOk());
  h = s->appHint(AppId("x")).value();
  EXPECT_EQ(h.need, slots(6));
  EXPECT_EQ(h.remaining, Millis(80'000));
  EXPECT_EQ(s->appHint(AppId("nope")).status().code(), StatusCode::kNotFound);
}

// The fair share carries every resource of the cluster, extended ones
// included, scaled like memory and vcores (Carbyne §4 packs the remaining DAG
// at the share over all resources). 16 slots and disk_in 800; each task of
// 48 x 10 s asks 1 slot and disk_in 100. Alone the job's share holds 8 tasks
// (disk binds): 6 waves, T = 60 s, need 8. With a second user in the leaf the
// share halves in every dimension: 4 tasks, T = 120 s, need 4. A share
// without disk_in would fit no task: need 1 task, T = 480 s.
TEST(CarbyneSchedulerTest, FairShareCarriesExtendedResources) {
  auto s = carbyneScheduler();
  Resource node = slots(16);
  node.setExtended("disk_in", 800);
  ASSERT_TRUE(s->addNode(NodeId("n1"), node, {}).isOk());
  Resource task = kTask;
  task.setExtended("disk_in", 100);
  DagStage st = stage(48, 10);
  st.task = task;
  ASSERT_TRUE(s->addApp(AppId("x"), UserId("u1"), QueueRef::adhoc("root.default")).isOk());
  ASSERT_TRUE(s->reportDag(AppId("x"), {st}).isOk());
  AppHint h = s->appHint(AppId("x")).value();
  EXPECT_EQ(h.need, task * 8);
  EXPECT_EQ(h.remaining, Millis(60'000));
  ASSERT_TRUE(s->addApp(AppId("y"), UserId("u2"), QueueRef::adhoc("root.default")).isOk());
  ASSERT_TRUE(s->reportDag(AppId("x"), {st}).isOk());
  h = s->appHint(AppId("x")).value();
  EXPECT_EQ(h.need, task * 4);
  EXPECT_EQ(h.remaining, Millis(120'000));
}

// Fairness between users: 8 slots, u1 with three jobs, u2 with one, each a
// single stage of 40 x 10 s. Shares: 4 slots per user, so u1's jobs get 4/3
// (1 slot: need 1, T = 400 s) and u2's job 4 (need 4, T = 100 s). Users
// below their need go by DRF, so u1 gets 3 (its needs) and u2 4, and the
// leftover slot goes SRTF to u2's job: 3 / 5. (Jobs as tenants, the previous
// rule, gave every job 2 slots: u1 6, u2 2.)
TEST(CarbyneSchedulerTest, UsersShareByDrfThenLeftoverSrtf) {
  auto s = carbyneScheduler();
  ASSERT_TRUE(s->addNode(NodeId("n1"), slots(8), {}).isOk());
  for (std::string id : {"a1", "a2", "a3"}) {
    ASSERT_TRUE(s->addApp(AppId(id), UserId("u1"), QueueRef::adhoc("root.default")).isOk());
  }
  ASSERT_TRUE(s->addApp(AppId("b1"), UserId("u2"), QueueRef::adhoc("root.default")).isOk());
  for (std::string id : {"a1", "a2", "a3", "b1"}) {
    ASSERT_TRUE(s->reportDag(AppId(id), {stage(40, 10)}).isOk());
    ASSERT_TRUE(s->updateAsks(AppId(id), {ask(40)}).isOk());
  }
  auto m = grantsByApp(*s, kT0);
  EXPECT_EQ(m["b1"], 5);
  EXPECT_EQ(m["a1"], 1);
  EXPECT_EQ(m["a2"], 1);
  EXPECT_EQ(m["a3"], 1);
}

// A bad report names the field and keeps the previous hint.
TEST(CarbyneSchedulerTest, BadDagReportNamesFieldAndChangesNothing) {
  auto s = carbyneScheduler();
  ASSERT_TRUE(s->addNode(NodeId("n1"), slots(8), {}).isOk());
  ASSERT_TRUE(s->addApp(AppId("a"), UserId("u"), QueueRef::adhoc("root.default")).isOk());
  auto cyc = s->reportDag(AppId("a"), {stage(1, 10, {1}), stage(1, 10, {0})});
  EXPECT_EQ(cyc.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(cyc.message().find("stages.deps"), std::string::npos);
  auto zero = s->reportDag(AppId("a"), {stage(1, 0)});
  EXPECT_NE(zero.message().find("stages[0].task_duration"), std::string::npos);
  auto range = s->reportDag(AppId("a"), {stage(1, 10, {5})});
  EXPECT_NE(range.message().find("stages[0].deps"), std::string::npos);
  EXPECT_EQ(s->reportDag(AppId("nope"), {}).code(), StatusCode::kNotFound);
}

// ---- Node reservations (SchedulerOptions::node_reservation) ----

std::unique_ptr<Scheduler> reservingScheduler(std::shared_ptr<const QueueOrderingPolicy> policy,
                                              bool reserve, double reservable_nodes = 0.05,
                                              Millis timeout = Millis(60000)) {
  SchedulerOptions o;
  o.adhoc_queues.push_back({"root.default", 1.0, std::move(policy)});
  o.node_reservation.enabled = reserve;
  o.node_reservation.reservable_nodes = reservable_nodes;
  o.node_reservation.timeout = timeout;
  auto s = Scheduler::create(std::move(o));
  EXPECT_TRUE(s.isOk());
  return std::move(s).value();
}

// "big" (user u2) asks `count` 4-slot containers.
void addBig(Scheduler& s, int32_t count) {
  ASSERT_TRUE(s.addApp(AppId("big"), UserId("u2"), QueueRef::adhoc("root.default")).isOk());
  ResourceRequest big = ask(count);
  big.capability = kTask * 4;
  ASSERT_TRUE(s.updateAsks(AppId("big"), {big}).isOk());
}

// The ids of `app`'s containers among `r`'s grants.
std::vector<ContainerId> containersOf(const NodeUpdateResult& r, const std::string& app) {
  std::vector<ContainerId> out;
  for (const auto& a : r.allocations) {
    if (a.app.value() == app) out.push_back(a.container);
  }
  return out;
}

// On n1 (8 slots) of `s`: "long" (user u1; 1 x 100 s critical + 12 x 10 s
// slack) takes all 8 slots (its containers in *long_c), then "near" (u2; 1 x
// 30 s critical + 2 x 10 s slack of 2 slots each) arrives, in leaf `leaf`.
void addLongThenNear(Scheduler* s, const std::string& leaf, std::vector<ContainerId>* long_c) {
  EXPECT_TRUE(s->addNode(NodeId("n1"), slots(8), {}).isOk());
  EXPECT_TRUE(s->addApp(AppId("long"), UserId("u1"), QueueRef::adhoc(leaf)).isOk());
  DagStage la = stage(1, 100), lb = stage(12, 10);
  la.request_id = "a";
  lb.request_id = "b";
  EXPECT_TRUE(s->reportDag(AppId("long"), {la, lb}).isOk());
  EXPECT_TRUE(s->updateAsks(AppId("long"), {ask(1, "a", 0), ask(12, "b", 1)}).isOk());
  *long_c = containersOf(s->schedulePass(kT0), "long");
  EXPECT_EQ(long_c->size(), 8u);
  EXPECT_TRUE(s->addApp(AppId("near"), UserId("u2"), QueueRef::adhoc(leaf)).isOk());
  DagStage na = stage(1, 30), nb = stage(2, 10);
  na.request_id = "a";
  nb.request_id = "b";
  nb.task = kTask * 2;
  EXPECT_TRUE(s->reportDag(AppId("near"), {na, nb}).isOk());
  ResourceRequest big = ask(2, "b", 1);
  big.capability = kTask * 2;
  EXPECT_TRUE(s->updateAsks(AppId("near"), {ask(1, "a", 0), big}).isOk());
}

// The leftover's shortest job, whose slack task (2 slots) is larger than
// what frees at a time on a full node, gets the node reserved and the room
// kept for it instead of lent to a longer job. 8 slots; "long" (1 x 100 s
// critical + 12 x 10 s slack) fills the node; "near" (1 x 30 s critical +
// 2 x 10 s slack of 2 slots each) arrives and gets its needed task on the
// first slot that frees (DRF tier), then holds its need (leftover tier,
// remaining 30 s against long's 100 s). The next slot that frees: without
// reservations it goes to long (near's 2-slot task does not fit); with
// them the node is reserved for near, nothing is granted, and once a
// second slot frees near's 2-slot task starts there.
void leftoverHeadScenario(bool reserve, NodeUpdateResult* second, NodeUpdateResult* third,
                          int64_t* reserved_after_second) {
  // The policy reserves nodes for the leftover when asked (the scheduler's
  // option stays off); the baseline does not.
  auto s = reservingScheduler(
      std::make_shared<CarbyneOrderingPolicy>(LeftoverPacking{0.5, 60.0, reserve}), false);
  std::vector<ContainerId> long_c;
  addLongThenNear(s.get(), "root.default", &long_c);
  ASSERT_FALSE(::testing::Test::HasFailure());
  ASSERT_EQ(s->appHint(AppId("near")).value().need, kTask);  // its critical task only

  // The first slot that frees: near's needed task (DRF tier).
  ASSERT_TRUE(s->containerCompleted(long_c.back()).isOk());
  long_c.pop_back();
  auto r1 = s->schedulePass(kT0 + Millis(1000));
  ASSERT_EQ(containersOf(r1, "near").size(), 1u);
  ASSERT_TRUE(containersOf(r1, "long").empty());
  ASSERT_TRUE(s->appUsed(AppId("near")).value() == kTask);

  ASSERT_TRUE(s->containerCompleted(long_c.back()).isOk());
  long_c.pop_back();
  *second = s->schedulePass(kT0 + Millis(2000));
  *reserved_after_second = s->numReservedNodes();
  for (const auto& a : second->allocations) {
    if (a.app.value() == "long") {
      ASSERT_TRUE(s->containerCompleted(a.container).isOk());
    }
  }
  ASSERT_TRUE(s->containerCompleted(long_c.back()).isOk());
  *third = s->schedulePass(kT0 + Millis(3000));
  if (reserve) {
    EXPECT_EQ(s->numReservedNodes(), 0);
  }
}

TEST(CarbyneReservationTest, LeftoverShortestJobGetsTheNodeReservedUntilItsTaskFits) {
  NodeUpdateResult second, third;
  int64_t reserved = -1;
  leftoverHeadScenario(true, &second, &third, &reserved);
  if (HasFatalFailure()) return;
  EXPECT_TRUE(second.allocations.empty());  // the freed slot is kept for near
  EXPECT_EQ(reserved, 1);
  ASSERT_EQ(third.allocations.size(), 1u);
  EXPECT_EQ(third.allocations[0].app.value(), "near");
  EXPECT_TRUE(third.allocations[0].resource == kTask * 2);
}

// The baseline the test above differs from: without reservations the slot
// goes to long, and near's 2-slot task still does not fit afterwards.
TEST(CarbyneReservationTest, WithoutReservationsTheLongerJobTakesTheFreedSlot) {
  NodeUpdateResult second, third;
  int64_t reserved = -1;
  leftoverHeadScenario(false, &second, &third, &reserved);
  if (HasFatalFailure()) return;
  ASSERT_EQ(second.allocations.size(), 1u);
  EXPECT_EQ(second.allocations[0].app.value(), "long");
  EXPECT_EQ(reserved, 0);
}

// Carbyne reserves only for the leftover tier: a job below its need whose
// needed task (2 slots) does not fit the slot that frees is not reserved
// for, and the slot goes to the leftover (long), as without reservations.
TEST(CarbyneReservationTest, JobBelowItsNeedIsNotReservedFor) {
  auto s = reservingScheduler(
      std::make_shared<CarbyneOrderingPolicy>(LeftoverPacking{0.5, 60.0, true}), false);
  ASSERT_TRUE(s->addNode(NodeId("n1"), slots(8), {}).isOk());
  ASSERT_TRUE(s->addApp(AppId("long"), UserId("u1"), QueueRef::adhoc("root.default")).isOk());
  DagStage la = stage(1, 100), lb = stage(12, 10);
  la.request_id = "a";
  lb.request_id = "b";
  ASSERT_TRUE(s->reportDag(AppId("long"), {la, lb}).isOk());
  ASSERT_TRUE(s->updateAsks(AppId("long"), {ask(1, "a", 0), ask(12, "b", 1)}).isOk());
  std::vector<ContainerId> long_c = containersOf(s->schedulePass(kT0), "long");
  ASSERT_EQ(long_c.size(), 8u);
  ASSERT_TRUE(s->addApp(AppId("near"), UserId("u2"), QueueRef::adhoc("root.default")).isOk());
  DagStage na = stage(1, 30);
  na.request_id = "a";
  na.task = kTask * 2;
  ASSERT_TRUE(s->reportDag(AppId("near"), {na}).isOk());
  ResourceRequest big = ask(1, "a", 0);
  big.capability = kTask * 2;
  ASSERT_TRUE(s->updateAsks(AppId("near"), {big}).isOk());
  ASSERT_TRUE(s->containerCompleted(long_c.back()).isOk());
  auto r = s->schedulePass(kT0 + Millis(1000));
  ASSERT_EQ(r.allocations.size(), 1u);
  EXPECT_EQ(r.allocations[0].app.value(), "long");
  EXPECT_EQ(s->numReservedNodes(), 0);
}

// A DRF leaf (YARN's Fair Scheduler case): "big" (nothing held, first by
// DRF) asks a 4-slot container on a node full of "small"'s 1-slot ones. Each
// slot that frees is kept for big until its container fits; then big is
// served and the reservation ends. Removing the app ends its reservations.
TEST(CarbyneReservationTest, DrfLeafKeepsFreedRoomForTheFirstApp) {
  auto s = reservingScheduler(std::make_shared<DrfOrderingPolicy>(), true);
  ASSERT_TRUE(s->addNode(NodeId("n1"), slots(4), {}).isOk());
  ASSERT_TRUE(s->addApp(AppId("small"), UserId("u1"), QueueRef::adhoc("root.default")).isOk());
  ASSERT_TRUE(s->updateAsks(AppId("small"), {ask(20)}).isOk());
  std::vector<ContainerId> c = containersOf(s->schedulePass(kT0), "small");
  ASSERT_EQ(c.size(), 4u);
  ASSERT_TRUE(s->addApp(AppId("big"), UserId("u2"), QueueRef::adhoc("root.default")).isOk());
  ResourceRequest big = ask(1);
  big.capability = kTask * 4;
  ASSERT_TRUE(s->updateAsks(AppId("big"), {big}).isOk());
  for (int i = 0; i < 3; i++) {
    ASSERT_TRUE(s->containerCompleted(c[static_cast<size_t>(i)]).isOk());
    EXPECT_TRUE(s->schedulePass(kT0 + Millis(1000 * (i + 1))).allocations.empty()) << i;
    EXPECT_EQ(s->numReservedNodes(), 1);
  }
  ASSERT_TRUE(s->containerCompleted(c[3]).isOk());
  auto r = s->schedulePass(kT0 + Millis(4000));
  ASSERT_EQ(r.allocations.size(), 1u);
  EXPECT_EQ(r.allocations[0].app.value(), "big");
  EXPECT_EQ(s->numReservedNodes(), 0);

  // Reserved again for a second big container; removing big ends it.
  ASSERT_TRUE(s->updateAsks(AppId("big"), {big}).isOk());
  ASSERT_TRUE(s->release(AppId("big"), r.allocations[0].container).isOk());
  auto r2 = s->schedulePass(kT0 + Millis(5000));
  ASSERT_EQ(r2.allocations.size(), 1u);  // big, first by DRF, takes the node again
  ASSERT_TRUE(s->containerCompleted(r2.allocations[0].container).isOk());
  ASSERT_TRUE(s->removeApp(AppId("big")).isOk());
  EXPECT_EQ(s->numReservedNodes(), 0);
  EXPECT_EQ(s->schedulePass(kT0 + Millis(6000)).allocations.size(), 4u);
}

// The bound: an app holds at most ceil(reservable_nodes x nodes) nodes
// (here 1 of 2): the slot that frees on the second node goes to small.
TEST(CarbyneReservationTest, ReservationsAreBoundedPerApp) {
  auto s = reservingScheduler(std::make_shared<DrfOrderingPolicy>(), true, 0.5);
  ASSERT_TRUE(s->addNode(NodeId("n1"), slots(4), {}).isOk());
  ASSERT_TRUE(s->addNode(NodeId("n2"), slots(4), {}).isOk());
  ASSERT_TRUE(s->addApp(AppId("small"), UserId("u1"), QueueRef::adhoc("root.default")).isOk());
  ASSERT_TRUE(s->updateAsks(AppId("small"), {ask(20)}).isOk());
  auto first = s->schedulePass(kT0);
  ASSERT_EQ(first.allocations.size(), 8u);
  ASSERT_NO_FATAL_FAILURE(addBig(*s, 2));
  ContainerId on_n1, on_n2;
  for (const auto& a : first.allocations) (a.node.value() == "n1" ? on_n1 : on_n2) = a.container;
  ASSERT_TRUE(s->containerCompleted(on_n1).isOk());
  ASSERT_TRUE(s->containerCompleted(on_n2).isOk());
  auto r = s->schedulePass(kT0 + Millis(1000));
  ASSERT_EQ(r.allocations.size(), 1u);
  EXPECT_EQ(r.allocations[0].node.value(), "n2");
  EXPECT_EQ(r.allocations[0].app.value(), "small");
  EXPECT_EQ(s->numReservedNodes(), 1);
}

// A reservation ends at its timeout and the node goes to the app first in
// the order then. n1 is reserved for big (first by DRF, holding nothing);
// big is then served on a new node n2 and holds half the cluster, so small
// (3 of 8 slots) is first. Until the timeout n1 keeps its slot for big; at
// it the slot goes to small.
TEST(CarbyneReservationTest, ReservationEndsAtItsTimeout) {
  auto s = reservingScheduler(std::make_shared<DrfOrderingPolicy>(), true, 1.0, Millis(10000));
  ASSERT_TRUE(s->addNode(NodeId("n1"), slots(4), {}).isOk());
  ASSERT_TRUE(s->addApp(AppId("small"), UserId("u1"), QueueRef::adhoc("root.default")).isOk());
  ASSERT_TRUE(s->updateAsks(AppId("small"), {ask(20)}).isOk());
  std::vector<ContainerId> c = containersOf(s->schedulePass(kT0), "small");
  ASSERT_EQ(c.size(), 4u);
  ASSERT_NO_FATAL_FAILURE(addBig(*s, 2));
  ASSERT_TRUE(s->containerCompleted(c[0]).isOk());
  EXPECT_TRUE(s->schedulePass(kT0 + Millis(1000)).allocations.empty());
  EXPECT_EQ(s->numReservedNodes(), 1);
  ASSERT_TRUE(s->addNode(NodeId("n2"), slots(4), {}).isOk());
  auto on_n2 = s->schedulePass(kT0 + Millis(2000));
  ASSERT_EQ(on_n2.allocations.size(), 1u);
  EXPECT_EQ(on_n2.allocations[0].app.value(), "big");
  EXPECT_EQ(on_n2.allocations[0].node.value(), "n2");
  EXPECT_TRUE(s->schedulePass(kT0 + Millis(10999)).allocations.empty());
  auto late = s->schedulePass(kT0 + Millis(11000));
  ASSERT_EQ(late.allocations.size(), 1u);
  EXPECT_EQ(late.allocations[0].node.value(), "n1");
  EXPECT_EQ(late.allocations[0].app.value(), "small");
  EXPECT_EQ(s->numReservedNodes(), 0);
}

// leftoverHeadScenario's first two heartbeats with the policy reserving,
// in leaf `leaf` of a scheduler with `queues` (each with its policy): long
// (user u1) holds 6 of the 8 slots of n1 (its containers in *long_c), near
// (u2) its critical slot, and n1, reserved for near's 2-slot task, keeps
// its one free slot for it.
std::unique_ptr<Scheduler> reservedForNear(std::vector<AdhocQueueConfig> queues,
                                           const std::string& leaf,
                                           std::vector<ContainerId>* long_c) {
  SchedulerOptions o;
  o.adhoc_queues = std::move(queues);
  auto created = Scheduler::create(std::move(o));
  EXPECT_TRUE(created.isOk());
  if (!created.isOk()) return nullptr;
  std::unique_ptr<Scheduler> s = std::move(created).value();
  addLongThenNear(s.get(), leaf, long_c);
  for (int i = 1; i <= 2; i++) {
    EXPECT_TRUE(s->containerCompleted(long_c->back()).isOk());
    long_c->pop_back();
    auto r = s->schedulePass(kT0 + Millis(1000 * i));
    EXPECT_EQ(containersOf(r, "near").size(), i == 1 ? 1u : 0u) << i;
    EXPECT_TRUE(containersOf(r, "long").empty()) << i;
  }
  EXPECT_EQ(s->numReservedNodes(), 1);
  return s;
}

std::shared_ptr<const QueueOrderingPolicy> reservingCarbyne() {
  return std::make_shared<CarbyneOrderingPolicy>(LeftoverPacking{0.5, 60.0, true});
}

std::vector<AdhocQueueConfig> oneCarbyneLeaf() {
  return {{"root.default", 1.0, reservingCarbyne()}};
}

// The room kept for the leftover's best job is not kept from a job below its
// need (a new job, served before any leftover): "fresh" (one 50 s task, its
// need) takes the free slot of the node reserved for near, and the
// reservation stands. The slot that frees next is kept from the leftover
// tier (long, whose slack tasks fit it; fresh, now holding its need); once
// two slots are free near's 2-slot task is served there.
TEST(CarbyneReservationTest, JobBelowItsNeedTakesRoomReservedForTheLeftover) {
  std::vector<ContainerId> long_c;
  auto s = reservedForNear(oneCarbyneLeaf(), "root.default", &long_c);
  ASSERT_NE(s, nullptr);
  if (HasFailure()) return;
  ASSERT_TRUE(s->addApp(AppId("fresh"), UserId("u3"), QueueRef::adhoc("root.default")).isOk());
  DagStage fa = stage(1, 50);
  fa.request_id = "a";
  ASSERT_TRUE(s->reportDag(AppId("fresh"), {fa}).isOk());
  ASSERT_TRUE(s->updateAsks(AppId("fresh"), {ask(1, "a", 0)}).isOk());
  ASSERT_EQ(s->appHint(AppId("fresh")).value().need, kTask);
  auto r = s->schedulePass(kT0 + Millis(3000));
  ASSERT_EQ(r.allocations.size(), 1u);
  EXPECT_EQ(r.allocations[0].app.value(), "fresh");
  EXPECT_EQ(s->numReservedNodes(), 1);

  // Another leftover-tier job cannot take the reserved room.
  ASSERT_TRUE(s->updateAsks(AppId("fresh"), {ask(1, "b", 1)}).isOk());
  ASSERT_TRUE(s->containerCompleted(long_c.back()).isOk());
  long_c.pop_back();
  EXPECT_TRUE(s->schedulePass(kT0 + Millis(4000)).allocations.empty());
  EXPECT_EQ(s->numReservedNodes(), 1);

  // The reservation is served when its task fits.
  ASSERT_TRUE(s->containerCompleted(long_c.back()).isOk());
  long_c.pop_back();
  auto served = s->schedulePass(kT0 + Millis(5000));
  ASSERT_FALSE(served.allocations.empty());
  EXPECT_EQ(served.allocations[0].app.value(), "near");
  EXPECT_TRUE(served.allocations[0].resource == kTask * 2);
  EXPECT_EQ(served.allocations[0].node.value(), "n1");
}

// A new job's AM (its app has reported no DAG yet, so it is below its need,
// its whole fair share) takes the slot of the node reserved for the
// leftover's best job.
TEST(CarbyneReservationTest, NewJobsAmTakesRoomReservedForTheLeftover) {
  std::vector<ContainerId> long_c;
  auto s = reservedForNear(oneCarbyneLeaf(), "root.default", &long_c);
  ASSERT_NE(s, nullptr);
  if (HasFailure()) return;
  ASSERT_TRUE(s->addApp(AppId("fresh"), UserId("u3"), QueueRef::adhoc("root.default")).isOk());
  ASSERT_TRUE(
      s->updateAsks(AppId("fresh"), {ask(1, "am", std::numeric_limits<int32_t>::min())}).isOk());
  auto r = s->schedulePass(kT0 + Millis(3000));
  ASSERT_EQ(r.allocations.size(), 1u);
  EXPECT_EQ(r.allocations[0].app.value(), "fresh");
  EXPECT_EQ(r.allocations[0].request_id, "am");
  EXPECT_EQ(s->numReservedNodes(), 1);
}

// A reservation for one leaf's leftover keeps nothing from another queue:
// root.b's app takes the free slot of the node reserved for near in root.a.
TEST(CarbyneReservationTest, OtherQueuesSeeTheWholeRoom) {
  std::vector<ContainerId> long_c;
  auto s = reservedForNear(
      {{"root.a", 1.0, reservingCarbyne()}, {"root.b", 1.0, std::make_shared<DrfOrderingPolicy>()}},
      "root.a", &long_c);
  ASSERT_NE(s, nullptr);
  if (HasFailure()) return;
  ASSERT_TRUE(s->addApp(AppId("other"), UserId("u3"), QueueRef::adhoc("root.b")).isOk());
  ASSERT_TRUE(s->updateAsks(AppId("other"), {ask(3)}).isOk());
  auto r = s->schedulePass(kT0 + Millis(3000));
  ASSERT_EQ(r.allocations.size(), 1u);
  EXPECT_EQ(r.allocations[0].app.value(), "other");
  EXPECT_EQ(s->numReservedNodes(), 1);
}

TEST(CarbyneReservationTest, BadOptionsNameTheField) {
  SchedulerOptions o;
  o.node_reservation.reservable_nodes = 0;
  auto r = Scheduler::create(o);
  ASSERT_FALSE(r.isOk());
  EXPECT_NE(r.status().message().find("node_reservation.reservable_nodes"), std::string::npos);
  o.node_reservation.reservable_nodes = 0.05;
  o.node_reservation.timeout = Millis(0);
  auto t = Scheduler::create(o);
  ASSERT_FALSE(t.isOk());
  EXPECT_NE(t.status().message().find("node_reservation.timeout"), std::string::npos);
}

}  // namespace
}  // namespace morpheus::sched
