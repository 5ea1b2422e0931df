// Carbyne ordering policy (OSDI'16 §4; issue #17): hand-computable forward /
// reverse packings, the two-tier score, misestimates, the policy factory, and
// the scheduler core serving leftover SRTF-first.
#include "rm/scheduler/carbyne_policy.h"

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <string>
#include <vector>

#include "rm/scheduler/policy_factory.h"
#include "rm/scheduler/scheduler.h"

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

// map (4 x 10 s) -> reduce (2 x 30 s), and a side stage X (2 x 10 s) with no
// dependents, at 8 slots: T = 40 s (critical path map + reduce). map must end
// by 10 s: all 4 now. X may end as late as 40 s: 4 waves of room, so 1 task
// now suffices. reduce waits for map: 0 now. Need = 5 tasks; leftover 3.
TEST(CarbynePlanTest, OffCriticalPathStageYieldsByReversePacking) {
  CarbynePlan p = carbynePlan({stage(4, 10), stage(2, 30, {0}), stage(2, 10)}, slots(8));
  EXPECT_EQ(p.completion, Millis(40000));
  EXPECT_EQ(p.latest_finish, (std::vector<Millis>{Millis(10000), Millis(40000), Millis(40000)}));
  EXPECT_EQ(p.need_tasks, (std::vector<int64_t>{4, 0, 1}));
  EXPECT_EQ(p.need, slots(5));
}

// A chain whose first stage has slack only through a longer parallel branch:
// A (6 x 10 s) alone, B (1 x 50 s) alone; T = 50 s at 3 slots (A: 2 waves =
// 20 s). A may finish by 50 s -> floor(50/10) = 5 waves -> ceil(6/5) = 2 now.
TEST(CarbynePlanTest, ParallelLongBranchGivesSlackToShortStage) {
  CarbynePlan p = carbynePlan({stage(6, 10), stage(1, 50)}, slots(3));
  EXPECT_EQ(p.completion, Millis(50000));
  EXPECT_EQ(p.need_tasks, (std::vector<int64_t>{2, 1}));
  EXPECT_EQ(p.need, slots(3));
}

// The need never exceeds the fair share even when runnable stages add up to more.
TEST(CarbynePlanTest, NeedIsCappedAtFairShare) {
  CarbynePlan p = carbynePlan({stage(4, 10), stage(4, 10)}, slots(4));
  EXPECT_EQ(p.completion, Millis(10000));
  EXPECT_EQ(p.need_tasks, (std::vector<int64_t>{4, 4}));
  EXPECT_EQ(p.need, slots(4));
}

// Misestimates: with every duration off by up to +-50% (seeded), the plan
// keeps its invariants: each runnable stage keeps at least one task, the need
// stays within the fair share, the stage waiting for its dependency needs
// nothing, and T covers the critical path 0 -> 1 -> 3 (one wave each).
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
    EXPECT_GE(p.need_tasks[2], 1);
    EXPECT_EQ(p.need_tasks[1], 0);
    EXPECT_TRUE(p.need.fitsIn(slots(6)));
    EXPECT_GE(p.completion, dag[0].task_duration + dag[1].task_duration * 1 + dag[3].task_duration);
  }
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
  EXPECT_DOUBLE_EQ(p.appScore({two, h, cluster, Millis(0), Millis(0), TimePoint{}}), 0.2);
  EXPECT_DOUBLE_EQ(p.appScore({four, h, cluster, Millis(0), Millis(0), TimePoint{}}),
                   CarbyneOrderingPolicy::kLeftoverTier + 20.0);
  EXPECT_DOUBLE_EQ(p.appScore({nine, none, cluster, Millis(0), Millis(0), TimePoint{}}),
                   0.9);  // no DAG: DRF
  EXPECT_DOUBLE_EQ(p.userScore(slots(9), 1.0, cluster, 3.5), 3.5);
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
  // Fair share 3 slots. Needs: long 1 + ceil(4/10) = 2 (T 100 s); near 1 +
  // ceil(4/3) = 3 (T 30 s): 5 of 7 slots, the 2 leftover to near.
  auto m = grantsByApp(*s, kT0);
  EXPECT_EQ(m["near"], 5);
  EXPECT_EQ(m["long"], 2);
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

}  // namespace
}  // namespace morpheus::sched
