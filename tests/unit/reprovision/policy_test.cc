// Unit tests for the DRA policies (Morpheus §7 and Jockey), time passed in.
#include <gtest/gtest.h>

#include "reprovision/policy.h"

namespace morpheus::reprovision {
namespace {

ReprovisionInput base() {
  ReprovisionInput in;
  in.reservation = ReservationId("r1");
  in.now = fromEpochMs(600000);
  in.skyline_now = 10;
  in.skyline_recent = {8, 10};
  in.budget_remaining_container_ms = 1000LL * 60000;  // 1000 container-minutes
  return in;
}

// Demand at or below the skyline needs nothing.
TEST(MorpheusDraTest, NoGrantWhenDemandWithinSkyline) {
  auto p = makeMorpheusDra({});
  auto in = base();
  in.used_containers = 10;
  EXPECT_FALSE(p->decide(in).has_value());
}

// Grant = demand - skyline for T when below the rho cap.
TEST(MorpheusDraTest, GrantsDemandAboveSkylineForT) {
  auto p = makeMorpheusDra({});
  auto in = base();
  in.used_containers = 10;
  in.pending_containers = 5;
  auto d = p->decide(in);
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(d->extra_containers, 5);
  EXPECT_EQ(d->duration, Millis(60000));
}

// The grant is capped at rho * max(skyline over R_recent).
TEST(MorpheusDraTest, RhoCapsTheGrant) {
  MorpheusDraOptions o;
  o.rho = 2;
  auto p = makeMorpheusDra(o);
  auto in = base();
  in.skyline_now = 3;
  in.skyline_recent = {4, 3};
  in.used_containers = 3;
  in.pending_containers = 100;
  auto d = p->decide(in);
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(d->extra_containers, 8) << "2 * max(4, 3)";
}

// Never more than the job asks for (pending is the only source of extra demand).
TEST(MorpheusDraTest, NeverAboveDemand) {
  auto p = makeMorpheusDra({});
  auto in = base();
  in.used_containers = 4;
  in.pending_containers = 7;  // demand 11 > skyline 10
  auto d = p->decide(in);
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(d->extra_containers, 1);
}

// The budget bounds extra * T; an exhausted budget grants nothing.
TEST(MorpheusDraTest, BudgetBoundsAndExhaustion) {
  auto p = makeMorpheusDra({});
  auto in = base();
  in.used_containers = 10;
  in.pending_containers = 10;
  in.budget_remaining_container_ms = 3 * 60000 + 59999;
  auto d = p->decide(in);
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(d->extra_containers, 3);
  in.budget_remaining_container_ms = 59999;
  EXPECT_FALSE(p->decide(in).has_value());
}

ReprovisionInput jockeyInput() {
  ReprovisionInput in = base();
  in.instance_start = fromEpochMs(0);
  in.now = fromEpochMs(600000);                 // 10 min in
  in.deadline = fromEpochMs(600000 + 1200000);  // 20 min left
  in.total_work_container_ms = 10LL * 1800000;  // 10 containers x 30 min
  in.used_containers = 10;
  in.pending_containers = 50;
  return in;
}

// On track: 10 containers finish the remaining work in time -> no change.
TEST(JockeyTest, OnTrackNeedsNothing) {
  auto p = makeJockey({});
  auto in = jockeyInput();
  in.progress = 0.5;  // 9e6 container-ms left over 1000 s usable (20 min / 1.2) -> 9 <= 10
  EXPECT_FALSE(p->decide(in).has_value());
}

// Behind: remaining work / (time left / (1+slack) - S) containers are asked for.
TEST(JockeyTest, BehindAsksForSmallestSufficientAllocation) {
  JockeyOptions o;
  o.slack = 0;
  o.dead_zone = 0;
  auto p = makeJockey(o);
  auto in = jockeyInput();
  in.progress = 0.0;  // 18e6 container-ms left, 1.2e6 ms left -> 15 containers
  auto d = p->decide(in);
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(d->extra_containers, 5);
  in.critical_path_remaining = Millis(600000);  // only 600 s usable -> 30 containers
  d = p->decide(in);
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(d->extra_containers, 20);
}

// Within the dead zone nothing changes; outside it the policy acts.
TEST(JockeyTest, DeadZoneSuppressesSmallChanges) {
  JockeyOptions o;
  o.slack = 0;
  o.dead_zone = 0.6;
  auto p = makeJockey(o);
  auto in = jockeyInput();
  in.progress = 0.0;  // needs 15 vs 10 current: +50% < 60% dead zone
  EXPECT_FALSE(p->decide(in).has_value());
  o.dead_zone = 0.4;
  EXPECT_TRUE(makeJockey(o)->decide(in).has_value());
}

// In the dead zone an active extra is renewed as it is, not dropped (a grant
// lapses after T, so "no change" must re-ask for it).
TEST(JockeyTest, DeadZoneRenewsTheActiveExtra) {
  JockeyOptions o;
  o.slack = 0;
  o.dead_zone = 0.2;
  auto in = jockeyInput();
  in.progress = 0.0;  // needs 15
  in.extra_now = 4;   // holds 14: |15 - 14| <= 0.2 * 14
  auto d = makeJockey(o)->decide(in);
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(d->extra_containers, 4);
}

// A run slower than its history: the work it has done over its progress
// predicts the rest, so Jockey asks for more although the history says
// the plan suffices.
TEST(JockeyTest, SlowRunIsPredictedFromObservedWork) {
  JockeyOptions o;
  o.slack = 0;
  o.dead_zone = 0;
  auto p = makeJockey(o);
  auto in = jockeyInput();
  in.progress = 0.5;  // history: 9e6 container-ms left over 1.2e6 ms -> 8 <= 10
  EXPECT_FALSE(p->decide(in).has_value());
  in.work_done_container_ms = 18'000'000;  // observed total 36e6 -> 18e6 left -> 15
  auto d = p->decide(in);
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(d->extra_containers, 5);
  in.work_done_container_ms = 1'000'000;  // less than history: history wins
  EXPECT_FALSE(p->decide(in).has_value());
}

// Jockey is bounded by demand and budget like DRA.
TEST(JockeyTest, BoundedByDemandAndBudget) {
  JockeyOptions o;
  o.slack = 0;
  o.dead_zone = 0;
  auto p = makeJockey(o);
  auto in = jockeyInput();
  in.progress = 0.0;
  in.pending_containers = 2;  // demand 12 -> at most 2 extra
  auto d = p->decide(in);
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(d->extra_containers, 2);
  in.budget_remaining_container_ms = 0;
  EXPECT_FALSE(p->decide(in).has_value());
}

// Policies are chosen by name; an unknown name names the config key.
TEST(PolicyFactoryTest, ChoosesByName) {
  EXPECT_EQ((*makePolicy("jockey", {}, {}, "dra.policy"))->name(), "jockey");
  EXPECT_EQ((*makePolicy("morpheus-dra", {}, {}, "dra.policy"))->name(), "morpheus-dra");
  auto bad = makePolicy("magic", {}, {}, "dra.policy");
  ASSERT_FALSE(bad.isOk());
  EXPECT_NE(bad.status().message().find("dra.policy"), std::string::npos);
}

}  // namespace
}  // namespace morpheus::reprovision
