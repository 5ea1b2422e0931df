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

// The recent skyline: the R_recent ending now while the skyline runs; after
// it ended, the R_recent ending at its last planned step, so a run that
// overran its skyline can still be granted up to rho x its last steps.
TEST(RecentPlannedTest, FollowsTheSkylineThenKeepsItsLastStepsAfterItEnds) {
  const Millis step(60000), recent(120000);
  const TimePoint start = fromEpochMs(0);
  // Planned 4, 7, 5, 3 containers over minutes 1-4 of the instance.
  auto planned = [&](TimePoint t) {
    const int64_t m = toEpochMs(t) / 60000;
    const int64_t c[] = {0, 4, 7, 5, 3};
    return m >= 0 && m <= 4 ? Resource(256, 1) * c[m] : Resource();
  };
  auto counts = [](const std::vector<Resource>& v) {
    std::vector<int64_t> out;
    for (const auto& r : v) out.push_back(r.vcores());
    return out;
  };
  auto at = [](int64_t minute) { return fromEpochMs(minute * 60000); };
  EXPECT_EQ(counts(recentPlanned(planned, at(3), start, at(30), recent, step)),
            (std::vector<int64_t>{4, 7, 5}));
  EXPECT_EQ(counts(recentPlanned(planned, at(1), start, at(30), recent, step)),
            (std::vector<int64_t>{0, 0, 4}))
      << "steps before the instance count as nothing planned";
  EXPECT_EQ(counts(recentPlanned(planned, at(6), start, at(30), recent, step)),
            (std::vector<int64_t>{3, 0, 0}))
      << "still within R_recent of the last step";
  EXPECT_EQ(counts(recentPlanned(planned, at(20), start, at(30), recent, step)),
            (std::vector<int64_t>{7, 5, 3}))
      << "long after the skyline: its last R_recent";
  EXPECT_EQ(counts(recentPlanned(planned, at(30), start, at(30), recent, step)),
            (std::vector<int64_t>{0, 0, 0}))
      << "the instance's window has closed";
  EXPECT_EQ(counts(recentPlanned(planned, at(20), at(10), at(30), recent, step)),
            (std::vector<int64_t>{0, 0, 0}))
      << "nothing planned in this instance";
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

// Morpheus §7: DRA reacts to jobs falling behind their plan. A job that used
// more than it was guaranteed so far (it ran ahead on borrowed capacity) gets
// nothing however high its demand; one behind or exactly at its guarantee does.
TEST(MorpheusDraTest, NoGrantToAJobAheadOfItsPlan) {
  auto p = makeMorpheusDra({});
  auto in = base();
  in.used_containers = 10;
  in.pending_containers = 5;
  in.guaranteed_container_ms_so_far = 10 * 60000 * 5;  // 5 reviews at 10 containers
  in.used_container_ms_so_far = in.guaranteed_container_ms_so_far + 1;
  EXPECT_FALSE(p->decide(in).has_value());
  in.used_container_ms_so_far = in.guaranteed_container_ms_so_far;  // on plan
  auto on_plan = p->decide(in);
  ASSERT_TRUE(on_plan.has_value());
  EXPECT_EQ(on_plan->extra_containers, 5);
  in.used_container_ms_so_far = 6 * 60000 * 5;  // behind
  auto behind = p->decide(in);
  ASSERT_TRUE(behind.has_value());
  EXPECT_EQ(behind->extra_containers, 5);
}

// dra.grant-when-ahead turns the rule off: the job ahead of its plan gets
// the same grant as one on plan, and aheadOfPlan is the rule's test.
TEST(MorpheusDraTest, GrantWhenAheadTurnsTheRuleOff) {
  MorpheusDraOptions o;
  o.grant_when_ahead = true;
  auto p = makeMorpheusDra(o);
  auto in = base();
  in.used_containers = 10;
  in.pending_containers = 5;
  in.guaranteed_container_ms_so_far = 10 * 60000 * 5;
  in.used_container_ms_so_far = in.guaranteed_container_ms_so_far + 1;
  EXPECT_TRUE(aheadOfPlan(in));
  auto ahead = p->decide(in);
  ASSERT_TRUE(ahead.has_value());
  EXPECT_EQ(ahead->extra_containers, 5);
  in.used_container_ms_so_far = in.guaranteed_container_ms_so_far;
  EXPECT_FALSE(aheadOfPlan(in));
  in.pending_containers = 0;  // demand within the skyline: nothing, rule or not
  EXPECT_FALSE(p->decide(in).has_value());
}

// The 3-stage DAG of the Jockey tests: map 4 x 10 s; reduce 2 x 20 s and
// report 1 x 30 s both after map. Total task time 40 + 40 + 30 = 110 s.
// C(p, a) by hand (ready tasks take free containers in stage order):
//  p = 0, a = 1: 40 + 40 + 30                                    = 110 s
//  p = 0, a = 2: map 2 waves (20); reduce x2 (20-40); report 40-70 =  70 s
//  p = 0, a = 3: map 0-10 x3, 10-20 x1; reduce x2 + report at 20   =  50 s
//  p = 0, a = 4: map 0-10; reduce x2 + report at 10 (report 10-40) =  40 s
//  map 2 done + 2 running 5 s (p = 30/110), a = 2: map ends at 5,
//      reduce 5-25, report 25-55                                  =  55 s
//  same, a = 3: map ends at 5; reduce x2 + report 5-35             =  35 s
//  map done (p = 40/110), a = 1: 20 + 20 + 30 = 70 s; a = 2: 20 + 30 = 50 s
std::vector<StageState> threeStages() {
  std::vector<StageState> s(3);
  s[0] = {"map", {}, 4, 0, {}, Millis(10000)};
  s[1] = {"reduce", {0}, 2, 0, {}, Millis(20000)};
  s[2] = {"report", {0}, 1, 0, {}, Millis(30000)};
  return s;
}

// C(p, a) from the simulator matches the hand computation above.
TEST(JockeyTest, RemainingTimeSimulatesTheDagWithAContainers) {
  auto st = threeStages();
  EXPECT_EQ(jockeyRemaining(st, 1), Millis(110000));
  EXPECT_EQ(jockeyRemaining(st, 2), Millis(70000));
  EXPECT_EQ(jockeyRemaining(st, 3), Millis(50000));
  EXPECT_EQ(jockeyRemaining(st, 4), Millis(40000));
  EXPECT_EQ(jockeyRemaining(st, 100), Millis(40000)) << "the critical path bounds it";
  st[0].completed = 2;
  st[0].running = {Millis(5000), Millis(5000)};
  EXPECT_EQ(jockeyRemaining(st, 2), Millis(55000));
  EXPECT_EQ(jockeyRemaining(st, 3), Millis(35000));
  st[0].completed = 4;
  st[0].running.clear();
  EXPECT_EQ(jockeyRemaining(st, 1), Millis(70000));
  EXPECT_EQ(jockeyRemaining(st, 2), Millis(50000));
  EXPECT_FALSE(jockeyRemaining(st, 0).has_value());
}

// Progress is the fraction of total task time done, running tasks counted by elapsed time.
TEST(JockeyTest, ProgressIsTheFractionOfTaskTimeDone) {
  auto st = threeStages();
  EXPECT_DOUBLE_EQ(jockeyProgress(st), 0.0);
  st[0].completed = 2;
  st[0].running = {Millis(5000), Millis(5000)};
  EXPECT_DOUBLE_EQ(jockeyProgress(st), 30.0 / 110.0);
  st[0].completed = 4;
  st[0].running.clear();
  st[1].completed = 1;
  EXPECT_DOUBLE_EQ(jockeyProgress(st), 60.0 / 110.0) << "not 5 of 7 tasks";
}

// A stage of unknown duration takes the mean of the known; nothing known or a cycle: no prediction.
TEST(JockeyTest, UnknownDurationsAndBadGraphs) {
  auto st = threeStages();
  st[2].task_duration = Millis(0);  // mean of 10 s and 20 s = 15 s
  EXPECT_EQ(jockeyRemaining(st, 4), Millis(10000 + 20000));
  st[1].deps = {2};
  st[2].deps = {1};
  EXPECT_FALSE(jockeyRemaining(st, 4).has_value()) << "reduce and report wait on each other";
  st = threeStages();
  st[1].deps = {7};
  EXPECT_FALSE(jockeyRemaining(st, 4).has_value());
  st = threeStages();
  for (auto& s : st) s.task_duration = Millis(0);
  EXPECT_FALSE(jockeyRemaining(st, 4).has_value()) << "no duration known";
}

JockeyOptions plainJockey() {
  JockeyOptions o;
  o.slack = 0.2;
  o.dead_zone = Millis(0);
  o.hysteresis = 1.0;
  return o;
}

// The job at the start of the DAG, plan of 2 containers, the deadline `left` away.
ReprovisionInput jockeyInput(Millis left) {
  ReprovisionInput in = base();
  in.stages = threeStages();
  in.skyline_now = 2;
  in.skyline_recent = {2};
  in.used_containers = 2;
  in.pending_containers = 5;
  in.deadline = in.now + left;
  return in;
}

// On track (C(0, 2) x 1.2 = 84 s <= 100 s left): no extra.
TEST(JockeyTest, NoExtraWhenThePlanMeetsTheDeadline) {
  auto p = makeJockey(plainJockey());
  EXPECT_FALSE(p->decide(jockeyInput(Millis(100000))).has_value());
}

// Behind: the least a with C(0, a) x 1.2 <= time left; the fastest a when none meets it.
TEST(JockeyTest, BehindAsksTheLeastAllocationMeetingTheDeadlineWithSlack) {
  auto p = makeJockey(plainJockey());
  auto d = p->decide(jockeyInput(Millis(66000)));  // a = 2: 84 s > 66; a = 3: 60 s <= 66
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(d->extra_containers, 1);
  EXPECT_EQ(d->allocation, 3);
  d = p->decide(jockeyInput(Millis(50000)));  // a = 3: 60 s > 50; a = 4: 48 s <= 50
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(d->extra_containers, 2);
  d = p->decide(jockeyInput(Millis(40000)));  // even a = 7 takes 48 s: all 7 tasks at once
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(d->allocation, 7);
  EXPECT_EQ(d->extra_containers, 5) << "capped by demand 2 + 5 - plan 2";
}

// The AMs hold part of the allocation and run no tasks: the same job with an
// AM in a plan of 3 needs what it needs with a plan of 2 and no AM, plus the AM.
TEST(JockeyTest, TheAmContainersRunNoTasks) {
  auto p = makeJockey(plainJockey());
  auto in = jockeyInput(Millis(66000));
  in.skyline_now = 3;
  in.used_containers = 3;
  in.am_containers = 1;
  auto d = p->decide(in);
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(d->allocation, 4) << "3 task containers + the AM";
  EXPECT_EQ(d->extra_containers, 1);
}

// Dead zone: an allocation predicted to finish on time and at most D early is kept,
// even when fewer containers would do.
TEST(JockeyTest, DeadZoneKeepsThePreviousAllocation) {
  JockeyOptions o = plainJockey();
  o.dead_zone = Millis(20000);
  auto in = jockeyInput(Millis(65000));
  in.previous_allocation = 4;  // C(0, 4) x 1.2 = 48 s, within [65 - 20, 65]
  auto d = makeJockey(o)->decide(in);
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(d->extra_containers, 2);
  o.dead_zone = Millis(10000);  // 48 s < 55 s: outside, back to the least a = 3
  d = makeJockey(o)->decide(in);
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(d->extra_containers, 1);
}

// Hysteresis: the allocation moves by alpha of the gap to the raw one, step by step.
TEST(JockeyTest, HysteresisSmoothsTheAllocation) {
  JockeyOptions o = plainJockey();
  o.hysteresis = 0.5;
  auto p = makeJockey(o);
  auto in = jockeyInput(Millis(50000));  // raw a = 4, from the plan's 2
  auto d = p->decide(in);
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(d->allocation, 3);
  in.previous_allocation = d->allocation;
  d = p->decide(in);
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(d->allocation, 4) << "3 + ceil(0.5)";
  in = jockeyInput(Millis(100000));  // raw a = 2, down from 6
  in.previous_allocation = 6;
  d = p->decide(in);
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(d->allocation, 4);
  EXPECT_EQ(d->extra_containers, 2);
}

// Jockey is bounded by demand and budget like DRA.
TEST(JockeyTest, BoundedByDemandAndBudget) {
  auto p = makeJockey(plainJockey());
  auto in = jockeyInput(Millis(50000));
  in.pending_containers = 1;  // demand 3 -> at most 1 extra
  auto d = p->decide(in);
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(d->extra_containers, 1);
  in.budget_remaining_container_ms = 0;
  EXPECT_FALSE(p->decide(in).has_value());
}

// Without stage reports there is nothing to simulate: no decision.
TEST(JockeyTest, NoStagesNoDecision) {
  auto in = jockeyInput(Millis(1000));
  in.stages.clear();
  EXPECT_FALSE(makeJockey(plainJockey())->decide(in).has_value());
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
