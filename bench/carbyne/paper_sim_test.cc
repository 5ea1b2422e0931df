// Unit tests of the Carbyne paper driver (paper_sim.h): DRF's fair level,
// the bandwidth over-subscription model (a scheduler that sees memory and
// vcores only, as YARN's DRF, slows tasks down; one that sees the six
// resources never does), Jain's index normalised by the fair share, and the
// utilisation figures.
#include "paper_sim.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <utility>
#include <vector>

#include "scheduler/policies/carbyne_policy.h"
#include "sim/workloads/carbyne_dags.h"

namespace morpheus::bench {
namespace {

std::array<double, 6> all(double x) { return {x, x, x, x, x, x}; }

TEST(CarbynePaperTest, FairLevelSplitsEquallyAmongEqualDemands) {
  EXPECT_NEAR(drfFairLevel({all(0.8), all(0.8)}), 0.5, 1e-12);
  EXPECT_NEAR(drfFairLevel({all(0.8), all(0.8), all(0.8), all(0.8)}), 0.25, 1e-12);
}

TEST(CarbynePaperTest, FairLevelGivesASmallDemandAllItAsksAndTheRestToOthers) {
  // 0.1 fits under an equal split; the other job gets the remaining 0.9.
  EXPECT_NEAR(drfFairLevel({all(0.1), all(1.0)}), 0.9, 1e-12);
  // Three jobs: 0.1 capped, the other two split 0.9.
  EXPECT_NEAR(drfFairLevel({all(0.1), all(2.0), all(3.0)}), 0.45, 1e-12);
}

TEST(CarbynePaperTest, FairLevelStopsAtTheFirstFullDimension) {
  // Job a's dominant resource is vcores (1.0), job b's memory (1.0): at
  // level L a holds L of vcores and L/2 of memory, b the converse; memory
  // and vcores each reach 1 at L = 2/3.
  const std::array<double, 6> a{0.5, 1.0, 0, 0, 0, 0}, b{1.0, 0.5, 0, 0, 0, 0};
  EXPECT_NEAR(drfFairLevel({a, b}), 2.0 / 3.0, 1e-12);
}

TEST(CarbynePaperTest, FairLevelIsInfiniteWhenEveryDemandFits) {
  EXPECT_TRUE(std::isinf(drfFairLevel({all(0.2), all(0.3)})));
  EXPECT_TRUE(std::isinf(drfFairLevel({})));
}

// One job of one stage: `n` tasks of `dur_s` seconds each wanting 1 vcore,
// 1 GiB and `disk` MB/s of disk read.
sim::AdhocJob diskJob(std::vector<int64_t> dur_s, int64_t disk) {
  sim::AdhocJob j;
  j.name = "j";
  j.user = UserId("u");
  for (size_t i = 0; i < dur_s.size(); i++) {
    sim::SimStage s;
    s.name = "scan" + std::to_string(i);
    s.tasks = 1;
    s.task_duration = Millis(dur_s[i] * 1000);
    s.task_resource = Resource(1024, 1);
    s.task_resource.setExtended(sim::kDiskIn, disk);
    j.stages.push_back(s);
  }
  return j;
}

PaperRun oneServer(bool sees_bandwidth) {
  PaperRun o;
  o.nodes = 1;
  o.node = sim::carbyneServer();  // 1000 MB/s of disk read
  o.duration_cv = 0;
  o.scheduler_sees_bandwidth = sees_bandwidth;
  return o;
}

// Two one-stage jobs, users "a" and "b", of 100 s tasks of 1 vcore:
// `a_tasks` and `b_tasks` tasks.
std::vector<sim::AdhocJob> twoScanJobs(int a_tasks, int b_tasks) {
  sim::AdhocJob a;
  a.name = "a";
  a.user = UserId("a");
  sim::SimStage s;
  s.name = "scan";
  s.tasks = a_tasks;
  s.task_duration = Millis(100000);
  s.task_resource = Resource(1024, 1);
  a.stages.push_back(s);
  sim::AdhocJob b = a;
  b.name = "b";
  b.user = UserId("b");
  b.stages[0].tasks = b_tasks;
  return {a, b};
}

TEST(CarbynePaperTest, ASchedulerBlindToBandwidthOverSubscribesAndTasksSlowDown) {
  // Two 100 s tasks of 600 MB/s on a 1000 MB/s disk: placed together, each
  // progresses at 1000 / 1200 of its speed and both end at 120 s.
  const std::vector<sim::AdhocJob> jobs{diskJob({100, 100}, 600)};
  auto blind = runPaper(jobs, std::make_shared<sched::DrfOrderingPolicy>(), oneServer(false));
  ASSERT_TRUE(blind.isOk()) << blind.status().message();
  EXPECT_DOUBLE_EQ(blind->jct_s[0], 120.0);
  // Seeing the disk, the scheduler runs them one after the other.
  auto seeing = runPaper(jobs, std::make_shared<sched::DrfOrderingPolicy>(), oneServer(true));
  ASSERT_TRUE(seeing.isOk()) << seeing.status().message();
  EXPECT_DOUBLE_EQ(seeing->jct_s[0], 200.0);
}

TEST(CarbynePaperTest, ATaskEndingSpeedsUpTheRestOfItsNode) {
  // 50 s and 100 s at 600 MB/s each: both at 5/6 speed until the short one
  // ends at 60 s; the long one has 50 s of work left, at full speed: 110 s.
  const std::vector<sim::AdhocJob> jobs{diskJob({50, 100}, 600)};
  auto r = runPaper(jobs, std::make_shared<sched::DrfOrderingPolicy>(), oneServer(false));
  ASSERT_TRUE(r.isOk()) << r.status().message();
  EXPECT_DOUBLE_EQ(r->jct_s[0], 110.0);
  // Utilisation: 60 + 110 vcore-seconds of 20 vcores over 110 s.
  EXPECT_NEAR(r->util_vcores, 170.0 / (20.0 * 110.0), 1e-9);
}

TEST(CarbynePaperTest, WithinBandwidthNothingSlowsDown) {
  // 400 + 600 MB/s fit the disk exactly: no slowdown either way.
  sim::AdhocJob j = diskJob({100}, 400);
  j.stages.push_back(diskJob({100}, 600).stages[0]);
  for (bool sees : {false, true}) {
    auto r = runPaper({j}, std::make_shared<sched::DrfOrderingPolicy>(), oneServer(sees));
    ASSERT_TRUE(r.isOk()) << r.status().message();
    EXPECT_DOUBLE_EQ(r->jct_s[0], 100.0) << "sees bandwidth " << sees;
  }
}

TEST(CarbynePaperTest, JainOverFairSharesDoesNotCountASmallJobAsShortChanged) {
  // Job a wants 1 vcore, job b 19 (one server of 20): each gets what it
  // wants, which is its fair share. Their raw dominant shares (0.05, 0.95)
  // are far from equal; relative to the fair shares they are equal.
  PaperRun o = oneServer(true);
  auto r = runPaper(twoScanJobs(1, 19), std::make_shared<sched::DrfOrderingPolicy>(), o);
  ASSERT_TRUE(r.isOk()) << r.status().message();
  EXPECT_GT(r->jain_fair, 0.99);
  EXPECT_LT(r->jain, 0.6);
}

TEST(CarbynePaperTest, JainOverFairSharesSeesAJobStarvedOfItsShare) {
  // FIFO serves b (first) before a: a's fair share is half the server, it
  // gets nothing while b holds all 20 vcores.
  std::vector<sim::AdhocJob> jobs = twoScanJobs(40, 40);
  std::swap(jobs[0], jobs[1]);  // b first
  auto fifo = runPaper(jobs, std::make_shared<sched::FifoOrderingPolicy>(), oneServer(true));
  ASSERT_TRUE(fifo.isOk()) << fifo.status().message();
  auto drf = runPaper(jobs, std::make_shared<sched::DrfOrderingPolicy>(), oneServer(true));
  ASSERT_TRUE(drf.isOk()) << drf.status().message();
  EXPECT_GT(drf->jain_fair, 0.99);
  EXPECT_LT(fifo->jain_fair, drf->jain_fair - 0.2);
}

TEST(CarbynePaperTest, BreadthFirstDelaysTheCriticalPathCriticalPathFirstDoesNot) {
  // One server of 20 vcores. s0: two 100 s tasks of 10 vcores; s1: one
  // 100 s task; s2 (after s1): one 300 s task; s3 (after s0 and s2): 1 s.
  // Breadth-first runs s0 first (0-100), then s1 (100-200), s2 (200-500):
  // 501 s. Critical path first runs s1 beside half of s0, then s2 beside
  // the rest: 401 s.
  auto stage = [](int64_t tasks, int64_t dur_s, std::vector<int> deps) {
    sim::SimStage s;
    s.name = "s";
    s.tasks = tasks;
    s.task_duration = Millis(dur_s * 1000);
    s.task_resource = Resource(1024, 10);
    s.depends_on = std::move(deps);
    return s;
  };
  sim::AdhocJob j;
  j.name = "j";
  j.user = UserId("u");
  j.stages = {stage(2, 100, {}), stage(1, 100, {}), stage(1, 300, {1}), stage(1, 1, {0, 2})};
  PaperRun o = oneServer(true);
  auto bf = runPaper({j}, std::make_shared<sched::DrfOrderingPolicy>(), o);
  ASSERT_TRUE(bf.isOk()) << bf.status().message();
  EXPECT_DOUBLE_EQ(bf->jct_s[0], 501.0);
  o.critical_path_first = true;
  auto cp = runPaper({j}, std::make_shared<sched::DrfOrderingPolicy>(), o);
  ASSERT_TRUE(cp.isOk()) << cp.status().message();
  EXPECT_DOUBLE_EQ(cp->jct_s[0], 401.0);
}

TEST(CarbynePaperTest, SjfRanksByCriticalPathOrByRemainingWork) {
  // A wide short job (100 tasks of 10 s) and a narrow long one (2 stages of
  // one 60 s task): by critical path the wide one is shorter (10 s vs
  // 120 s), by work the narrow one (2 x 60 s x 1/20 = 6 server-seconds vs
  // 100 x 10 s x 1/20 = 50).
  const Resource server = sim::carbyneServer();
  const Resource task(1024, 1);  // 1 vcore of 20 is its dominant share
  const std::vector<sched::DagStage> wide{{100, Millis(10000), task, {}}};
  const std::vector<sched::DagStage> narrow{{1, Millis(60000), task, {}},
                                            {1, Millis(60000), task, {0}}};
  const SjfPolicy by_cp;
  EXPECT_EQ(by_cp.planApp(wide, Resource()).remaining, Millis(10000));
  EXPECT_EQ(by_cp.planApp(narrow, Resource()).remaining, Millis(120000));
  const SjfPolicy by_work(server);
  EXPECT_EQ(by_work.planApp(wide, Resource()).remaining, Millis(50000));
  EXPECT_EQ(by_work.planApp(narrow, Resource()).remaining, Millis(6000));
  EXPECT_EQ(by_work.name(), "sjfw");
}

TEST(CarbynePaperTest, LedgerSplitsTheVcoresByTierAndByRemainingWork) {
  // Two jobs of four 100 s tasks of 1 vcore on one server of 20 under
  // Carbyne: each plan's share is half the server, all eight tasks start at
  // 0, and each job's estimate on arrival is one wave, 100 s. Each holds its
  // need (its four tasks), so its 4 vcores are leftover-tier vcores up to the
  // need, none lent, none in the DRF tier; by remaining work the two jobs
  // are the first and third fifths (of two).
  PaperRun o = oneServer(true);
  o.ledger = true;
  auto r = runPaper(twoScanJobs(4, 4), std::make_shared<sched::CarbyneOrderingPolicy>(), o);
  ASSERT_TRUE(r.isOk()) << r.status().message();
  ASSERT_EQ(r->est_s.size(), 2u);
  EXPECT_DOUBLE_EQ(r->est_s[0], 100.0);
  EXPECT_DOUBLE_EQ(r->est_s[1], 100.0);
  ASSERT_FALSE(r->ledger.empty());
  const CarbyneLedgerWindow& w = r->ledger.front();  // 0-60 s
  EXPECT_NEAR(w.vcores, 8.0 / 20.0, 1e-9);
  EXPECT_NEAR(w.v_left_need, 8.0 / 20.0, 1e-9);
  EXPECT_NEAR(w.v_lent, 0.0, 1e-9);
  EXPECT_NEAR(w.v_drf, 0.0, 1e-9);
  EXPECT_NEAR(w.v_fifth[0], 4.0 / 20.0, 1e-9);
  EXPECT_NEAR(w.v_fifth[2], 4.0 / 20.0, 1e-9);
  EXPECT_NEAR(w.v_fifth[1] + w.v_fifth[3] + w.v_fifth[4], 0.0, 1e-9);
  EXPECT_NEAR(w.v_fifth_waiting[0] + w.v_fifth_waiting[2], 0.0, 1e-9);
  // Without the ledger no estimate is recorded.
  o.ledger = false;
  auto plain = runPaper(twoScanJobs(4, 4), std::make_shared<sched::CarbyneOrderingPolicy>(), o);
  ASSERT_TRUE(plain.isOk()) << plain.status().message();
  EXPECT_DOUBLE_EQ(plain->est_s[0], -1.0);
}

TEST(CarbynePaperTest, TheHookNamesEachReportsJobAndTime) {
  // Job 0: two 100 s tasks in a chain; job 1: one 50 s task. Reports: both
  // on arrival (0 s), job 0 when its first task ends (100 s); a job's last
  // task end removes it without a report.
  sim::AdhocJob a = diskJob({100, 100}, 10);
  a.stages[1].depends_on = {0};
  sim::AdhocJob b = diskJob({50}, 10);
  b.name = "b";
  b.user = UserId("b");
  PaperRun o = oneServer(true);
  std::vector<std::pair<size_t, int64_t>> calls;
  o.before_report = [&calls](size_t job, int64_t now_ms) { calls.emplace_back(job, now_ms); };
  auto r = runPaper({a, b}, std::make_shared<sched::CarbyneOrderingPolicy>(), o);
  ASSERT_TRUE(r.isOk()) << r.status().message();
  EXPECT_EQ(calls, (std::vector<std::pair<size_t, int64_t>>{{0, 0}, {1, 0}, {0, 100000}}));
}

TEST(CarbynePaperTest, RejectsATaskThatFitsNoServer) {
  sim::AdhocJob j = diskJob({10}, 2000);
  auto r = runPaper({j}, std::make_shared<sched::DrfOrderingPolicy>(), oneServer(true));
  ASSERT_FALSE(r.isOk());
  EXPECT_NE(r.status().message().find("jobs[0].stages[0]"), std::string::npos);
}

}  // namespace
}  // namespace morpheus::bench
