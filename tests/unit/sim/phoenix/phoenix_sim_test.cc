// morpheus-sim's Phoenix experiment: determinism, admission
// control of unmeetable jobs, Phoenix's gain over FIFO on short jobs, and the
// no-wait floor under every scheduler.
#include "sim/phoenix/phoenix_sim.h"

#include <gtest/gtest.h>

#include "scheduler/policies/phoenix_policy.h"
#include "sim/phoenix/eagle_sim.h"

namespace morpheus::sim {
namespace {

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

std::shared_ptr<const sched::QueueOrderingPolicy> phoenix() {
  return std::make_shared<sched::PhoenixOrderingPolicy>();
}

// The same seed gives the same results; every job finished or was turned away.
TEST(PhoenixSimTest, DeterministicInSeed) {
  auto a = runPhoenixSim(small(3), phoenix());
  auto b = runPhoenixSim(small(3), phoenix());
  ASSERT_TRUE(a.isOk()) << a.status().toString();
  ASSERT_TRUE(b.isOk());
  EXPECT_GT(a->jobs, 100);
  EXPECT_EQ(a->short_jobs.p99, b->short_jobs.p99);
  EXPECT_EQ(a->long_unconstrained.mean, b->long_unconstrained.mean);
  EXPECT_EQ(a->short_jobs.count + a->long_unconstrained.count + a->rejected, a->jobs);
}

// Seed 7 draws no aarch64 node among 20: the jobs asking for one are turned
// away by admission control instead of keeping the run from ending.
TEST(PhoenixSimTest, UnmeetableJobsAreRejectedNotWaitedFor) {
  auto r = runPhoenixSim(small(7), phoenix());
  ASSERT_TRUE(r.isOk()) << r.status().toString();
  EXPECT_GT(r->rejected, 0);
  EXPECT_EQ(r->short_jobs.count + r->long_unconstrained.count + r->rejected, r->jobs);
}

// Short jobs behind long ones: Phoenix's p90 and p99 are below FIFO's, and
// long jobs are not slower on average by more than 5%.
TEST(PhoenixSimTest, PhoenixCutsShortJobTailVersusFifo) {
  auto f = runPhoenixSim(small(1), std::make_shared<sched::FifoOrderingPolicy>());
  auto p = runPhoenixSim(small(1), phoenix());
  ASSERT_TRUE(f.isOk() && p.isOk());
  EXPECT_LT(p->short_jobs.p90, f->short_jobs.p90);
  EXPECT_LT(p->short_jobs.p99, f->short_jobs.p99);
  EXPECT_LT(p->long_unconstrained.mean, f->long_unconstrained.mean * 1.05);
}

// The no-wait floor: on a nearly idle cluster every job starts at once, so
// the scheduler core's run equals it exactly (same run times, same ticks);
// under load no scheduler's percentile is below it, and it turns away the
// same unmeetable jobs.
TEST(PhoenixSimTest, FloorEqualsAnIdleClusterAndBoundsEveryScheduler) {
  PhoenixSimOptions idle = small(2);
  idle.load = 0.05;
  auto fi = runPhoenixFloor(idle);
  auto pi = runPhoenixSim(idle, phoenix());
  ASSERT_TRUE(fi.isOk() && pi.isOk());
  EXPECT_EQ(fi->policy, "floor");
  EXPECT_EQ(fi->short_jobs.p99, pi->short_jobs.p99);
  EXPECT_EQ(fi->short_jobs.mean, pi->short_jobs.mean);
  EXPECT_EQ(fi->long_unconstrained.mean, pi->long_unconstrained.mean);

  for (uint64_t seed : {1, 7}) {
    auto f = runPhoenixFloor(small(seed));
    ASSERT_TRUE(f.isOk());
    auto p = runPhoenixSim(small(seed), phoenix());
    auto e = runEagleSim(small(seed), EagleOptions{});
    ASSERT_TRUE(p.isOk() && e.isOk());
    for (const PhoenixSimResult* r : {&*p, &*e}) {
      EXPECT_EQ(f->rejected, r->rejected) << r->policy;
      EXPECT_LE(f->short_jobs.p50, r->short_jobs.p50) << r->policy;
      EXPECT_LE(f->short_jobs.p99, r->short_jobs.p99) << r->policy;
      EXPECT_LE(f->short_jobs.mean, r->short_jobs.mean) << r->policy;
      EXPECT_LE(f->long_unconstrained.mean, r->long_unconstrained.mean) << r->policy;
    }
    EXPECT_LT(f->short_jobs.mean, e->short_jobs.mean);  // the loaded cluster makes jobs wait
  }
  PhoenixSimOptions bad = small(1);
  bad.load = 0;
  auto r = runPhoenixFloor(bad);
  ASSERT_FALSE(r.isOk());
  EXPECT_NE(r.status().message().find("load"), std::string::npos);
}

// Bad options are INVALID_ARGUMENT naming the field.
TEST(PhoenixSimTest, RejectsBadOptions) {
  auto o = small(1);
  o.load = 0;
  auto r = runPhoenixSim(o, phoenix());
  ASSERT_FALSE(r.isOk());
  EXPECT_NE(r.status().message().find("load"), std::string::npos);
}

// Long-task occupancy of a kind's nodes: the time-average share of their
// vcores held by long tasks, and the shares of the window at >= 90% and at
// all of them, clipped to the arrival window; nodes without the kind and
// the synthetic mix count nothing.
TEST(PhoenixSimTest, KindLongOccupancyAveragesOverTheArrivalWindow) {
  PhoenixSimOptions o;
  o.mix = PhoenixMix::kGoogle;
  o.nodes = 3;
  o.node_size = Resource(65536, 10);
  o.arrivals = Millis(100000);
  o.short_partition = 0;
  ConstraintKind all{"all", 1, 0.1, 1.0, false};
  ConstraintKind none{"none", 1, 0.1, 1e-9, false};
  o.kinds = {all, none};
  const TimePoint t0 = fromEpochMs(0);
  KindLongOccupancy occ(o, t0);
  occ.change(0, 10, t0);                    // node 0 full from 0 s
  occ.change(1, 10, t0 + Millis(40000));    // node 1 full from 40 s
  occ.change(2, 7, t0 + Millis(50000));     // node 2 at 70% from 50 s
  occ.change(0, -10, t0 + Millis(150000));  // after the window: not counted
  PhoenixSimResult r;
  occ.finish(t0 + Millis(200000), r);
  ASSERT_EQ(r.kind_long_share.size(), 2u);
  EXPECT_EQ(r.kind_nodes, (std::vector<int32_t>{3, 0}));
  // (10 x 100 + 10 x 60 + 7 x 50) / 100 / 30 vcores.
  EXPECT_NEAR(r.kind_long_share[0], 1950.0 / 3000.0, 1e-9);
  EXPECT_NEAR(r.kind_long_90_time[0], 0.5, 1e-9);  // 27 of 30 from 50 s
  EXPECT_NEAR(r.kind_long_full_time[0], 0.0, 1e-9);
  EXPECT_EQ(r.kind_long_share[1], 0.0);
  o.mix = PhoenixMix::kSynthetic;
  KindLongOccupancy synthetic(o, t0);
  synthetic.change(0, 10, t0);
  PhoenixSimResult s;
  synthetic.finish(t0 + Millis(200000), s);
  EXPECT_TRUE(s.kind_long_share.empty());
}

}  // namespace
}  // namespace morpheus::sim
