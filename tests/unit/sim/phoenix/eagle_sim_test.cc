// The Eagle-C baseline of the Phoenix experiment: constraint-aware
// probing, Succinct State Sharing, partitions, Sticky Batch Probing, SRPT with
// starvation prevention, and the end-to-end run.
#include "sim/phoenix/eagle_sim.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <optional>
#include <set>

#include "scheduler/policies/phoenix_policy.h"

namespace morpheus::sim {
namespace {

using sched::ConstraintOp;
using sched::PlacementConstraint;

PlacementConstraint isaIn(const std::string& isa) {
  PlacementConstraint c;
  c.key = "isa";
  c.values = {isa};
  c.hard = true;
  c.op = ConstraintOp::kIn;
  return c;
}

sched::NodeAttributes isa(const std::string& v) { return {{"isa", v}}; }

std::set<int32_t> probedWorkers(const EagleCluster& c, int32_t workers, size_t job) {
  std::set<int32_t> out;
  for (int32_t w = 0; w < workers; w++) {
    for (const auto& p : c.worker(w).probes) {
      if (p.job == job) out.insert(w);
    }
  }
  return out;
}

// "-C": a constrained short job probes only workers meeting its constraint,
// probe_ratio per task; a job no worker meets is turned away.
TEST(EagleSimTest, ProbesOnlyWorkersMeetingConstraints) {
  EagleCluster c(EagleOptions{}, 1);
  for (int i = 0; i < 20; i++) c.addWorker(isa(i % 4 == 0 ? "aarch64" : "x86_64"), false);
  ASSERT_TRUE(c.submit(0, false, 2, Millis(1000), {isaIn("aarch64")}));
  auto probed = probedWorkers(c, 20, 0);
  EXPECT_EQ(probed.size(), 4u);  // 2 tasks x 2 probes, all 5 aarch64 workers eligible
  for (int32_t w : probed) EXPECT_EQ(w % 4, 0);
  EXPECT_FALSE(c.submit(1, false, 1, Millis(1000), {isaIn("riscv64")}));
}

// Long jobs run only in the general partition; short probes then go to
// workers free of long tasks (SSS), and only the probes those cannot take
// wait behind long tasks.
TEST(EagleSimTest, LongJobsStayInGeneralPartitionAndShortProbesAvoidThem) {
  EagleCluster c(EagleOptions{}, 1);
  c.addWorker(isa("x86_64"), true);  // workers 0, 1: short partition
  c.addWorker(isa("x86_64"), true);
  for (int i = 0; i < 3; i++) c.addWorker(isa("x86_64"), false);
  ASSERT_TRUE(c.submit(0, true, 5, Millis(60000), {}));
  auto started = c.dispatch();
  ASSERT_EQ(started.size(), 3u);
  for (const auto& s : started) EXPECT_GE(s.worker, 2);
  EXPECT_FALSE(c.worker(0).running.has_value());
  ASSERT_TRUE(c.submit(1, false, 1, Millis(1000), {}));  // 2 probes
  EXPECT_EQ(probedWorkers(c, 5, 1), (std::set<int32_t>{0, 1}));
  started = c.dispatch();
  ASSERT_EQ(started.size(), 1u);
  EXPECT_EQ(started[0].job, 1u);
  EXPECT_LT(started[0].worker, 2);
  // 4 probes, 2 workers free of long work (one busy with job 1's short
  // task): both, then 2 of the 3 running long tasks.
  ASSERT_TRUE(c.submit(2, false, 2, Millis(1000), {}));
  auto probed = probedWorkers(c, 5, 2);
  EXPECT_EQ(probed.size(), 4u);
  EXPECT_EQ(probed.count(0) + probed.count(1), 2u);
}

// SBP: a worker that finished a task of a job runs that job's next task before
// a probe of a shorter job waiting in its queue.
TEST(EagleSimTest, StickyBatchProbingKeepsTheWorkerOnItsJob) {
  EagleCluster c(EagleOptions{}, 1);
  c.addWorker(isa("x86_64"), true);
  ASSERT_TRUE(c.submit(0, false, 3, Millis(5000), {}));
  ASSERT_EQ(c.dispatch().size(), 1u);
  ASSERT_TRUE(c.submit(1, false, 1, Millis(1000), {}));  // shorter, queued
  c.taskFinished(0);
  auto started = c.dispatch();
  ASSERT_EQ(started.size(), 1u);
  EXPECT_EQ(started[0].job, 0u);
  EXPECT_EQ(c.unlaunched(0), 1);
}

// SRPT: of two queued probes, the job with less remaining work runs first;
// late binding drops a probe whose job has nothing left to launch.
TEST(EagleSimTest, ShortestRemainingJobFirstWithLateBinding) {
  EagleCluster c(EagleOptions{}, 1);
  c.addWorker(isa("x86_64"), true);
  ASSERT_TRUE(c.submit(0, false, 1, Millis(50000), {}));
  ASSERT_EQ(c.dispatch().size(), 1u);  // occupies the only worker
  ASSERT_TRUE(c.submit(1, false, 1, Millis(40000), {}));
  ASSERT_TRUE(c.submit(2, false, 1, Millis(2000), {}));
  c.taskFinished(0);
  auto started = c.dispatch();
  ASSERT_EQ(started.size(), 1u);
  EXPECT_EQ(started[0].job, 2u);
  c.taskFinished(0);
  started = c.dispatch();
  ASSERT_EQ(started.size(), 1u);
  EXPECT_EQ(started[0].job, 1u);
  c.taskFinished(0);
  EXPECT_TRUE(c.dispatch().empty());  // no probes left
}

// Starvation prevention: a long-remaining probe passed over starvation_bound
// times runs next even though shorter probes keep arriving.
TEST(EagleSimTest, StarvingProbeRunsAfterBound) {
  EagleOptions o;
  o.starvation_bound = 2;
  EagleCluster c(o, 1);
  c.addWorker(isa("x86_64"), true);
  ASSERT_TRUE(c.submit(0, false, 1, Millis(1000), {}));
  ASSERT_EQ(c.dispatch().size(), 1u);
  ASSERT_TRUE(c.submit(1, false, 1, Millis(90000), {}));  // the big one
  size_t next = 2;
  std::vector<size_t> order;
  for (int round = 0; round < 4; round++) {
    ASSERT_TRUE(c.submit(next++, false, 1, Millis(1000), {}));
    c.taskFinished(0);
    auto s = c.dispatch();
    ASSERT_EQ(s.size(), 1u);
    order.push_back(s[0].job);
  }
  // Passed over twice (jobs 2 and 3), then it runs.
  EXPECT_EQ(order, (std::vector<size_t>{2, 3, 1, 4}));
}

PhoenixSimOptions small(uint64_t seed) {
  PhoenixSimOptions o;
  o.nodes = 20;
  o.arrivals = Millis(30 * 60 * 1000);
  o.load = 0.95;
  o.isa_rate = 0.5;
  o.short_fraction = 0.97;
  o.seed = seed;
  return o;
}

// The whole run: deterministic, every job finished or turned away, the same
// jobs as the Phoenix runs.
TEST(EagleSimTest, RunIsDeterministicAndAccountsForEveryJob) {
  auto a = runEagleSim(small(3), EagleOptions{});
  auto b = runEagleSim(small(3), EagleOptions{});
  ASSERT_TRUE(a.isOk()) << a.status().toString();
  ASSERT_TRUE(b.isOk());
  EXPECT_EQ(a->policy, "eagle-c");
  EXPECT_GT(a->jobs, 100);
  EXPECT_EQ(a->short_jobs.p99, b->short_jobs.p99);
  EXPECT_EQ(a->short_jobs.count + a->long_unconstrained.count + a->rejected, a->jobs);
}

// The scheduler-core Phoenix (the centralized ordering the RM runs, not the
// paper's hybrid `phoenix-hybrid`) on a small synthetic setup built for it:
// contended aarch64 nodes, half the short jobs need one. There its
// constraint-aware ordering gives constrained short jobs a lower p99 than
// Eagle-C, whose probes wait behind long tasks at the constrained workers,
// and long jobs are not slower on average. It says nothing about the trace
// mixes (docs/experiments/phoenix.md). 100 nodes (on 20 nodes Eagle-C's
// short partition wins).
TEST(EagleSimTest, SchedulerCorePhoenixBeatsEagleCOnAContendedSyntheticKind) {
  PhoenixSimOptions o = small(1);
  o.nodes = 100;
  o.arrivals = Millis(15 * 60 * 1000);
  auto e = runEagleSim(o, EagleOptions{});
  auto p = runPhoenixSim(o, std::make_shared<sched::PhoenixOrderingPolicy>());
  ASSERT_TRUE(e.isOk() && p.isOk());
  EXPECT_LT(p->short_constrained.p99 * 1.2, e->short_constrained.p99)
      << p->short_constrained.p99 << " vs " << e->short_constrained.p99;
  EXPECT_LE(p->long_unconstrained.mean, e->long_unconstrained.mean);
}

// Phoenix (the paper's, on Eagle-C): two single-worker kinds, both busy; an
// unconstrained 1 s job probes both, then a job needing the only aarch64
// worker (2 tasks of 5 s, more remaining work) probes it. Eagle's SRPT runs
// the unconstrained probe there first; under the CRV the aarch64 resource is
// saturated (2 tasks pending, no idle worker has it: rho at the cap, wait
// 19 x E[S^2] / 2E[S] = 47.5 s), so the constrained probe jumps ahead; the
// reordering without the estimate puts it first as well.
TEST(EagleSimTest, CrvMovesAConstrainedProbeAheadAtAScarceWorker) {
  auto firstAtScarceWorker = [](EagleQueueOrder order, Millis* wait_b, Millis* wait_a) {
    EagleOptions o;
    o.order = order;
    EagleCluster c(o, 1);
    c.addWorker(isa("aarch64"), false);                      // worker 0
    c.addWorker(isa("x86_64"), false);                       // worker 1
    EXPECT_TRUE(c.submit(10, false, 2, Millis(60000), {}));  // occupies both
    EXPECT_EQ(c.dispatch().size(), 2u);
    EXPECT_TRUE(c.submit(1, false, 1, Millis(1000), {}));                  // A: probes both
    EXPECT_TRUE(c.submit(2, false, 2, Millis(5000), {isaIn("aarch64")}));  // B: worker 0
    EXPECT_EQ(probedWorkers(c, 2, 2), (std::set<int32_t>{0}));
    *wait_b = c.estimatedWait(2);
    *wait_a = c.estimatedWait(1);
    c.taskFinished(0);
    auto started = c.dispatch();
    EXPECT_EQ(started.size(), 1u);
    return started.empty() ? size_t{99} : started[0].job;
  };
  Millis wb(0), wa(0);
  EXPECT_EQ(firstAtScarceWorker(EagleQueueOrder::kSrpt, &wb, &wa), 1u);
  EXPECT_EQ(wb, Millis(0));  // Eagle-C keeps no CRV
  EXPECT_EQ(firstAtScarceWorker(EagleQueueOrder::kCrv, &wb, &wa), 2u);
  EXPECT_EQ(wb, Millis(47500));
  EXPECT_EQ(wa, Millis(0));
  EXPECT_EQ(firstAtScarceWorker(EagleQueueOrder::kConstrainedFirst, &wb, &wa), 2u);
}

// The CRV's supply is the idle matching workers: with one aarch64 worker
// idle for two pending aarch64 tasks the estimate is rho = 2 / 1 capped at
// 0.95; once the worker runs the first task and the second is pending
// (demand 1, supply 0) it stays at the cap; with nothing pending it is 0.
TEST(EagleSimTest, CrvTracksPendingTasksAndIdleWorkers) {
  EagleOptions o;
  o.order = EagleQueueOrder::kCrv;
  EagleCluster c(o, 1);
  c.addWorker(isa("aarch64"), false);
  c.addWorker(isa("aarch64"), false);
  c.addWorker(isa("x86_64"), false);
  ASSERT_TRUE(c.submit(0, false, 1, Millis(4000), {isaIn("aarch64")}));
  // demand 1 vcore over 2 idle aarch64 workers: rho 0.5, wait = 1 x 4000 / 2.
  EXPECT_EQ(c.estimatedWait(0), Millis(2000));
  ASSERT_EQ(c.dispatch().size(), 1u);
  EXPECT_EQ(c.estimatedWait(0), Millis(0));  // nothing pending
  ASSERT_TRUE(c.submit(1, false, 3, Millis(4000), {isaIn("aarch64")}));
  // demand 3 over 1 idle worker: at the cap, 19 x 4000 / 2.
  EXPECT_EQ(c.estimatedWait(1), Millis(38000));
}

// CRV-aware probe placement (phoenix-hybrid-placement): while aarch64 tasks
// are pending (the aarch64 workers' resource is under pressure), an
// unconstrained job probes the x86_64 workers (free of pressure) first;
// Eagle-C probes all four alike.
TEST(EagleSimTest, CrvPlacementLeavesPressuredWorkersToConstrainedWork) {
  auto probes = [](EagleQueueOrder order, uint64_t seed) {
    EagleOptions o;
    o.order = order;
    o.crv_placement = true;  // ignored by Eagle-C
    EagleCluster c(o, seed);
    c.addWorker(isa("aarch64"), false);
    c.addWorker(isa("aarch64"), false);
    c.addWorker(isa("x86_64"), false);
    c.addWorker(isa("x86_64"), false);
    EXPECT_TRUE(c.submit(0, false, 4, Millis(5000), {isaIn("aarch64")}));
    if (order == EagleQueueOrder::kCrv) {
      EXPECT_GT(c.estimatedWait(0), Millis(0));
    }
    EXPECT_TRUE(c.submit(1, false, 1, Millis(1000), {}));
    return probedWorkers(c, 4, 1);
  };
  bool eagle_used_aarch64 = false;
  for (uint64_t seed = 1; seed <= 20; seed++) {
    EXPECT_EQ(probes(EagleQueueOrder::kCrv, seed), (std::set<int32_t>{2, 3})) << seed;
    const auto e = probes(EagleQueueOrder::kSrpt, seed);
    eagle_used_aarch64 = eagle_used_aarch64 || e.count(0) > 0 || e.count(1) > 0;
  }
  EXPECT_TRUE(eagle_used_aarch64);
}

// CRV-aware long placement: the scarce aarch64 worker (1 of 3), with a
// constrained long task pending for it, refuses the earlier unconstrained
// long job and runs the constrained one; without steering the centralized
// scheduler's FIFO gives it the unconstrained job. The x86_64 workers take
// the unconstrained job either way.
TEST(EagleSimTest, CrvLongSteeringKeepsScarceWorkersForConstrainedLongWork) {
  auto firstOnScarce = [](bool steering) {
    EagleOptions o;
    o.order = EagleQueueOrder::kCrv;
    o.crv_long_steering = steering;
    EagleCluster c(o, 1);
    c.addWorker(isa("aarch64"), false);
    c.addWorker(isa("x86_64"), false);
    c.addWorker(isa("x86_64"), false);
    EXPECT_TRUE(c.submit(0, true, 3, Millis(60000), {}));
    EXPECT_TRUE(c.submit(1, true, 1, Millis(60000), {isaIn("aarch64")}));
    EXPECT_EQ(c.dispatch().size(), 3u);
    EXPECT_EQ(*c.worker(1).running, 0u);
    EXPECT_EQ(*c.worker(2).running, 0u);
    return *c.worker(0).running;
  };
  EXPECT_EQ(firstOnScarce(false), 0u);
  EXPECT_EQ(firstOnScarce(true), 1u);
  EagleOptions o;
  o.order = EagleQueueOrder::kCrv;
  o.crv_long_steering = true;
  EXPECT_STREQ(eaglePolicyName(o), "phoenix-hybrid-steer");
}

// With no constraint pressure (no job has a constraint, so every estimate
// is 0) Phoenix's queues keep Eagle's SRPT order: the same jobs finish at
// the same times (equal digests), while with contended constraints the two
// runs differ.
TEST(EagleSimTest, CrvOrderEqualsSrptWithoutConstraints) {
  PhoenixSimOptions o = small(2);
  o.isa_rate = o.cores_rate = o.network_rate = o.kernel_rate = 0;
  EagleOptions srpt, crv;
  crv.order = EagleQueueOrder::kCrv;
  auto e = runEagleSim(o, srpt);
  auto p = runEagleSim(o, crv);
  ASSERT_TRUE(e.isOk() && p.isOk());
  EXPECT_EQ(e->policy, "eagle-c");
  EXPECT_EQ(p->policy, "phoenix-hybrid");
  EXPECT_EQ(e->finish_digest, p->finish_digest);
  o = small(2);  // half the short jobs need aarch64 (15% of the nodes)
  auto ec = runEagleSim(o, srpt);
  auto pc = runEagleSim(o, crv);
  ASSERT_TRUE(ec.isOk() && pc.isOk());
  EXPECT_NE(ec->finish_digest, pc->finish_digest);
  EXPECT_EQ(pc->short_jobs.count + pc->long_unconstrained.count + pc->rejected, pc->jobs);
}

// The wait breakdown measures and decides nothing: the same finishes with it
// as without. Every finished short job gets one, and its parts sum to its
// response time; on this contended run some tail time is spent behind long
// tasks and behind other short jobs.
TEST(EagleSimTest, WaitBreakdownPartsSumToTheResponseTime) {
  for (auto order : {EagleQueueOrder::kSrpt, EagleQueueOrder::kCrv}) {
    EagleOptions plain, measured;
    plain.order = measured.order = order;
    measured.wait_breakdown = true;
    PhoenixSimOptions o = small(3);
    o.short_fraction = 0.9;  // long tasks hold workers that short probes wait for
    auto a = runEagleSim(o, plain);
    auto b = runEagleSim(o, measured);
    ASSERT_TRUE(a.isOk() && b.isOk());
    EXPECT_EQ(a->finish_digest, b->finish_digest);
    EXPECT_TRUE(a->short_waits.empty());
    ASSERT_EQ(static_cast<int64_t>(b->short_waits.size()), b->short_jobs.count);
    double behind_long = 0, behind_short = 0;
    for (const ShortJobWait& w : b->short_waits) {
      EXPECT_NEAR(w.partsSum(), w.response_s, 1e-6) << "job " << w.job;
      EXPECT_GT(w.run_s, 0);
      EXPECT_GE(w.dispatch_s, 0);
      EXPECT_GE(w.probes, w.tasks);
      EXPECT_GE(w.long_starts_while_waiting, 0);
      behind_long += w.behind_long_full_s + w.behind_long_free_s;
      behind_short += w.behind_short_full_s + w.behind_short_free_s;
    }
    EXPECT_GT(behind_long, 0);
    EXPECT_GT(behind_short, 0);
    const ShortWaitSummary tail = summariseShortWaits(b->short_waits, 0.99);
    EXPECT_EQ(tail.threshold_s, b->short_jobs.p99);
    EXPECT_GE(tail.jobs, 1);
    EXPECT_NEAR(tail.mean.partsSum(), tail.mean.response_s, 1e-6);
  }
}

// On a single worker every task runs there, one after the other, so each
// short job's breakdown is known: no worker is ever idle while it waits (no
// *_free part), and its own earlier tasks plus the critical one are all its
// tasks' run times.
TEST(EagleSimTest, WaitBreakdownOnOneWorkerIsTheJobsOwnSerialWork) {
  PhoenixSimOptions o = small(4);
  o.nodes = 1;
  o.node_size = Resource(2048, 1);
  o.arrivals = Millis(10 * 3600 * 1000);
  o.load = 0.9;
  o.short_fraction = 0.95;
  EagleOptions e;
  e.short_partition = 0;
  e.wait_breakdown = true;
  auto r = runEagleSim(o, e);
  ASSERT_TRUE(r.isOk()) << r.status().toString();
  const auto jobs = makePhoenixJobs(o, fromEpochMs(0));
  ASSERT_GT(r->short_waits.size(), 3u);
  int waited = 0;
  for (const ShortJobWait& w : r->short_waits) {
    const PhoenixJob& j = jobs[w.job];
    Millis work{0};
    for (int32_t k = 0; k < j.tasks; k++) work += phoenixTaskRunTime(o.seed, w.job, k, j.duration);
    EXPECT_NEAR(w.own_tasks_s + w.run_s, static_cast<double>(work.count()) / 1000, 1e-6);
    EXPECT_EQ(w.behind_long_free_s, 0);
    EXPECT_EQ(w.behind_short_free_s, 0);
    EXPECT_NEAR(w.partsSum(), w.response_s, 1e-6);
    if (w.behind_long_full_s + w.behind_short_full_s > 0) waited++;
  }
  EXPECT_GT(waited, 0) << r->short_waits.size() << " short jobs";
}

// Stealing: three general workers run a long job's tasks; two short jobs
// (the older needs aarch64, which worker 2 lacks) have their probes behind
// long tasks and a second long job waits at the centralized scheduler.
// When a worker holding none of their probes frees up, Eagle-C gives it the
// long job; with stealing it runs the oldest waiting short job it meets
// (the aarch64 one, on an aarch64 worker; the x86 worker 2 skips it for the
// younger unconstrained one).
TEST(EagleSimTest, StealingIdleWorkerRunsTheOldestWaitingShortJobItMeets) {
  int cases = 0;
  for (int32_t freed : {0, 1, 2}) {
    // The job the freed worker starts, or nullopt when it holds a probe.
    auto nextOnFreed = [freed](bool steal) -> std::optional<size_t> {
      EagleOptions o;
      o.probe_ratio = 1;
      o.steal = steal;
      EagleCluster c(o, 7);
      c.addWorker(isa("aarch64"), false);
      c.addWorker(isa("aarch64"), false);
      c.addWorker(isa("x86_64"), false);
      c.addWorker(isa("x86_64"), true);  // short partition
      EXPECT_TRUE(c.submit(0, true, 3, Millis(600000), {}));
      EXPECT_EQ(c.dispatch().size(), 3u);
      EXPECT_TRUE(c.submit(9, false, 1, Millis(500000), {}));  // SSS: worker 3
      EXPECT_EQ(c.dispatch().size(), 1u);
      EXPECT_TRUE(c.submit(1, false, 1, Millis(1000), {isaIn("aarch64")}));  // behind long
      EXPECT_TRUE(c.submit(2, false, 1, Millis(1000), {}));                  // behind job 9
      EXPECT_TRUE(c.submit(3, true, 1, Millis(600000), {}));
      if (probedWorkers(c, 4, 1).count(freed) > 0) return std::nullopt;
      c.taskFinished(freed);
      auto started = c.dispatch();
      EXPECT_EQ(started.size(), 1u);
      if (started.empty()) return size_t{99};
      EXPECT_EQ(started[0].worker, freed);
      return started[0].job;
    };
    const auto plain = nextOnFreed(false);
    if (!plain) continue;
    cases++;
    EXPECT_EQ(*plain, 3u) << "freed worker " << freed;
    EXPECT_EQ(nextOnFreed(true), freed == 2 ? 2u : 1u) << "freed worker " << freed;
  }
  EXPECT_EQ(cases, 2);  // worker 2 and the aarch64 worker without job 1's probe
  EagleOptions bad;
  bad.steal = true;
  bad.crv_long_steering = true;
  bad.order = EagleQueueOrder::kCrv;
  auto r = runEagleSim(small(1), bad);
  ASSERT_FALSE(r.isOk());
  EXPECT_NE(r.status().message().find("steal"), std::string::npos);
  EagleOptions named;
  named.steal = true;
  EXPECT_STREQ(eaglePolicyName(named), "eagle-c-steal");
  named.order = EagleQueueOrder::kCrv;
  EXPECT_STREQ(eaglePolicyName(named), "phoenix-hybrid-steal");
}

// The placement bound on hand-built cases: one worker runs the tasks in
// series; two free workers run two tasks side by side; a worker busy with a
// long task until 10 s does not help a 4 s task another worker can start at
// once; with workers free at 3 s and 10 s, three 6 s tasks cannot finish
// before the water level (18 + 3 + 10) / 2 = 15.5 s (15,500 ms; the best
// schedule ends at 16 s), above the longest-task bound 3 + 6 = 9 s; a
// worker free after the level is never counted.
TEST(EagleSimTest, PlacementBoundOnHandBuiltCases) {
  EXPECT_EQ(placementBoundMs({0}, {5000, 5000}), 10000);
  EXPECT_EQ(placementBoundMs({0, 0}, {5000, 5000}), 5000);
  EXPECT_EQ(placementBoundMs({10000, 0}, {4000}), 4000);
  EXPECT_EQ(placementBoundMs({3000, 10000}, {6000, 6000, 6000}), 15500);
  EXPECT_EQ(placementBoundMs({10000, 3000, 40000}, {6000, 6000, 6000}), 15500);
  // All probed workers behind long tasks: the job waits for the first to end.
  EXPECT_EQ(placementBoundMs({30000, 20000}, {1000}), 21000);
  EXPECT_EQ(placementBoundMs({}, {1000}), 0);
  EXPECT_EQ(placementBoundMs({0}, {}), 0);
}

// The bound under every queue order of a run: each short job's response time
// is at least its placement bound, under Eagle-C and under oracle orders, and
// the bound is not the floor: some jobs' bound exceeds their own longest
// task by a long task's wait. The oracle's classes run lower first.
TEST(EagleSimTest, EveryShortJobTakesAtLeastItsPlacementBound) {
  PhoenixSimOptions o = small(3);
  const auto jobs = makePhoenixJobs(o, fromEpochMs(0));
  auto reversed = std::make_shared<std::vector<int64_t>>(jobs.size());
  for (size_t i = 0; i < jobs.size(); i++) (*reversed)[i] = -static_cast<int64_t>(i);
  for (auto order : {EagleQueueOrder::kSrpt, EagleQueueOrder::kOracle}) {
    EagleOptions e;
    e.order = order;
    e.oracle_key = reversed;  // the newest job first: far from SRPT
    e.job_bounds = true;
    auto r = runEagleSim(o, e);
    ASSERT_TRUE(r.isOk()) << r.status().toString();
    ASSERT_EQ(r->job_bound_s.size(), jobs.size());
    int64_t short_jobs = 0, behind_long = 0;
    for (size_t i = 0; i < jobs.size(); i++) {
      if (r->job_response_s[i] < 0) continue;
      short_jobs++;
      EXPECT_GE(r->job_response_s[i], r->job_bound_s[i]) << "job " << i;
      int64_t longest = 0;
      for (int32_t k = 0; k < jobs[i].tasks; k++)
        longest = std::max(longest, phoenixTaskRunTime(o.seed, i, k, jobs[i].duration).count());
      EXPECT_GE(r->job_bound_s[i] * 1000, static_cast<double>(longest)) << "job " << i;
      if (r->job_bound_s[i] * 1000 > static_cast<double>(longest) + 1000) behind_long++;
    }
    EXPECT_EQ(short_jobs, r->short_jobs.count);
    EXPECT_GT(behind_long, 0);
    EXPECT_LE(r->bound_short_p99_s, r->short_jobs.p99);
  }
}

// kOracle: a worker serves the lowest class first, SRPT within a class, and
// never applies the starvation bound.
TEST(EagleSimTest, OracleOrderServesTheLowestClassFirst) {
  EagleOptions o;
  o.order = EagleQueueOrder::kOracle;
  o.starvation_bound = 0;  // would run the oldest probe under SRPT
  o.oracle_key = std::make_shared<std::vector<int64_t>>(std::vector<int64_t>{0, 5, 1, 1});
  EagleCluster c(o, 1);
  c.addWorker(isa("x86_64"), true);
  ASSERT_TRUE(c.submit(0, false, 1, Millis(1000), {}));
  ASSERT_EQ(c.dispatch().size(), 1u);
  ASSERT_TRUE(c.submit(1, false, 1, Millis(1000), {}));   // class 5, the least work
  ASSERT_TRUE(c.submit(2, false, 1, Millis(30000), {}));  // class 1
  ASSERT_TRUE(c.submit(3, false, 1, Millis(20000), {}));  // class 1, less work
  std::vector<size_t> order;
  for (int i = 0; i < 3; i++) {
    c.taskFinished(0);
    auto s = c.dispatch();
    ASSERT_EQ(s.size(), 1u);
    order.push_back(s[0].job);
  }
  EXPECT_EQ(order, (std::vector<size_t>{3, 2, 1}));
  EXPECT_STREQ(eaglePolicyName(o), "queue-order-oracle");
  o.oracle_key.reset();
  auto r = runEagleSim(small(1), o);
  ASSERT_FALSE(r.isOk());
  EXPECT_NE(r.status().message().find("oracle_key"), std::string::npos);
}

// The search: its srpt pass is Eagle-C exactly, every pass's p99 is at least
// its bound's, and the result is the best pass.
TEST(EagleSimTest, QueueOrderSearchKeepsTheBestPass) {
  const PhoenixSimOptions o = small(2);
  auto eagle = runEagleSim(o, EagleOptions{});
  auto r = runQueueOrderSearch(o, EagleOptions{}, 2);
  ASSERT_TRUE(eagle.isOk() && r.isOk()) << r.status().toString();
  EXPECT_EQ(r->policy, "queue-order-bound");
  ASSERT_EQ(r->passes.size(), 5u);
  EXPECT_EQ(r->passes[0].order, "srpt");
  EXPECT_EQ(r->passes[1].order, "edf");
  EXPECT_EQ(r->passes[2].order, "sacrifice");
  EXPECT_EQ(r->passes[4].order, "repair-2");
  EXPECT_EQ(r->passes[0].short_p99_s, eagle->short_jobs.p99);
  double best = r->passes[0].short_p99_s;
  for (const auto& p : r->passes) {
    EXPECT_LE(p.bound_p99_s, p.short_p99_s) << p.order;
    best = std::min(best, p.short_p99_s);
  }
  EXPECT_EQ(r->short_jobs.p99, best);
  EagleOptions stealing;
  stealing.steal = true;
  EXPECT_FALSE(runQueueOrderSearch(o, stealing, 1).isOk());
}

// Bad Eagle options are INVALID_ARGUMENT naming the field.
TEST(EagleSimTest, RejectsBadOptions) {
  EagleOptions o;
  o.short_partition = 1.0;
  auto r = runEagleSim(small(1), o);
  ASSERT_FALSE(r.isOk());
  EXPECT_NE(r.status().message().find("short_partition"), std::string::npos);
  o = EagleOptions{};
  o.probe_ratio = 0;
  r = runEagleSim(small(1), o);
  ASSERT_FALSE(r.isOk());
  EXPECT_NE(r.status().message().find("probe_ratio"), std::string::npos);
}

}  // namespace
}  // namespace morpheus::sim
