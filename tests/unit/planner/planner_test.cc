#include <gtest/gtest.h>

#include "test_util.h"

namespace morpheus::planner {
namespace {

using namespace morpheus::planner::testing;  // NOLINT

const TimePoint kNow = minute(0);

// A daily periodic reservation of `n` containers over [from, to) minutes (fixed window).
ReservationDefinition block(int64_t n, int64_t from, int64_t to) {
  return def(from, to, {stage(n, n, to - from)}, Interpreter::kAll, 1440);
}

void expectInvalid(const ReservationDefinition& d, const std::string& field_prefix) {
  auto p = makePlanner("lowcost");
  auto r = p->submit(ReservationId("r"), d, kNow);
  ASSERT_FALSE(r.isOk());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << r.status().toString();
  EXPECT_EQ(r.status().message().rfind(field_prefix, 0), 0u) << r.status().message();
}

// Each malformed definition is rejected with INVALID_ARGUMENT naming the field.
TEST(ValidationTest, RejectsEachMalformedField) {
  auto ok = def(0, 60, {stage(10, 1, 10)});
  auto d = ok;
  d.deadline = kNow;
  d.arrival = minute(-10);
  expectInvalid(d, "deadline:");
  d = ok;
  d.stages.clear();
  expectInvalid(d, "stages:");
  d = def(0, 15, {stage(1, 1, 10), stage(1, 1, 10)}, Interpreter::kOrder);
  expectInvalid(d, "deadline:");
  d = ok;
  d.stages[0] = stage(200, 101, 10);
  expectInvalid(d, "stages[0].min_concurrency:");
  d = ok;
  d.period = Millis(-1);
  expectInvalid(d, "period:");
  d = ok;
  d.period = Millis(30 * 60'000);
  expectInvalid(d, "period:");  // shorter than the 60 min window
  d = ok;
  d.period = Millis(7 * 60 * 60'000);
  expectInvalid(d, "period:");  // does not divide one day
  d = ok;
  d.stages[0] = stage(5, 6, 10);
  expectInvalid(d, "stages[0].min_concurrency:");
  d = ok;
  d.stages[0] = stage(5, 0, 10);
  expectInvalid(d, "stages[0].min_concurrency:");
  d = ok;
  d.stages[0] = stage(5, 1, 0);
  expectInvalid(d, "stages[0].duration:");
  d = ok;
  d.stages[0] = stage(0, 1, 10);
  expectInvalid(d, "stages[0].num_containers:");
  // Overflow of capability x containers is refused, not wrapped to a small or negative size.
  d = ok;
  d.stages[0] = {Resource(INT64_MAX / 2, 1), 4, 1, Millis(600'000)};
  expectInvalid(d, "stages[0].num_containers:");
  d = ok;
  d.stages = {{Resource(INT64_MAX / 3, 1), 2, 1, Millis(600'000)},
              {Resource(INT64_MAX / 3, 1), 2, 1, Millis(600'000)}};
  expectInvalid(d, "stages:");
  // Priorities outside [0, 1000] are refused, not coerced.
  d = ok;
  d.priority = 1001;
  expectInvalid(d, "priority:");
  d = ok;
  d.priority = -1;
  expectInvalid(d, "priority:");
  d = ok;
  d.stages[0].capability = Resource(-1, 1);
  expectInvalid(d, "stages[0].capability:");
}

// Minimum duration: longest stage for R_ALL, shortest for R_ANY, sum for ordered.
TEST(ValidationTest, MinimumDurationDependsOnInterpreter) {
  auto d = def(0, 25, {stage(1, 1, 20), stage(1, 1, 10)});
  EXPECT_EQ(minDuration(d), Millis(20 * 60'000));
  d.interpreter = Interpreter::kAny;
  EXPECT_EQ(minDuration(d), Millis(10 * 60'000));
  d.interpreter = Interpreter::kOrderNoGap;
  EXPECT_EQ(minDuration(d), Millis(30 * 60'000));
  expectInvalid(d, "deadline:");
}

// Unknown agent and sharing policy names are rejected by the factory.
TEST(PlannerFactoryTest, RejectsUnknownNames) {
  PlannerOptions o;
  o.agent = "best";
  auto r = Planner::create(o, containers(10));
  ASSERT_FALSE(r.isOk());
  EXPECT_EQ(r.status().message().rfind("agent:", 0), 0u);
  o.agent = "greedy";
  o.sharing_policy = "fair";
  EXPECT_FALSE(Planner::create(o, containers(10)).isOk());
  EXPECT_EQ(makeAgent("lowcost").value()->name(), "lowcost");
  EXPECT_EQ(makeAgent("greedy").value()->name(), "greedy");
}

class BothAgentsTest : public ::testing::TestWithParam<std::string> {};

// R_ALL: every stage receives its full demand inside the window.
TEST_P(BothAgentsTest, AllInterpreterPlacesEveryStage) {
  auto p = makePlanner(GetParam());
  auto r = p->submit(ReservationId("a"), def(0, 60, {stage(10, 1, 20), stage(30, 5, 10)}), kNow);
  ASSERT_TRUE(r.isOk()) << r.status().toString();
  ASSERT_EQ(r->stages.size(), 2u);
  EXPECT_EQ(containerMinutes(r->stages[0].allocations), 200);
  EXPECT_EQ(containerMinutes(r->stages[1].allocations), 300);
  EXPECT_EQ(containerMinutes(r->allocations), 500);
  EXPECT_GE(r->allocations.front().start, minute(0));
  EXPECT_LE(r->allocations.back().end, minute(60));
}

// R_ANY: exactly one stage is placed.
TEST_P(BothAgentsTest, AnyInterpreterPlacesOneStage) {
  auto p = makePlanner(GetParam());
  // Stage 0 (gang of 200) cannot fit a 100-container cluster... but validation
  // rejects that, so make stage 0 infeasible through load instead.
  ASSERT_TRUE(p->submit(ReservationId("busy"), block(95, 0, 60), kNow).isOk());
  auto r = p->submit(ReservationId("a"),
                     def(0, 60, {stage(10, 10, 10), stage(4, 1, 20)}, Interpreter::kAny), kNow);
  ASSERT_TRUE(r.isOk()) << r.status().toString();
  ASSERT_EQ(r->stages.size(), 1u);
  EXPECT_EQ(r->stages[0].stage, 1);
  EXPECT_EQ(containerMinutes(r->allocations), 80);
}

// R_ORDER: stage k+1 starts no earlier than stage k ends.
TEST_P(BothAgentsTest, OrderInterpreterKeepsStagesInOrder) {
  auto p = makePlanner(GetParam());
  auto r = p->submit(
      ReservationId("a"),
      def(0, 120, {stage(20, 20, 10), stage(10, 10, 20), stage(5, 5, 10)}, Interpreter::kOrder),
      kNow);
  ASSERT_TRUE(r.isOk()) << r.status().toString();
  ASSERT_EQ(r->stages.size(), 3u);
  for (size_t k = 0; k + 1 < r->stages.size(); ++k) {
    EXPECT_LE(r->stages[k].allocations.back().end, r->stages[k + 1].allocations.front().start);
  }
}

// R_ORDER_NO_GAP: ordered and the whole allocation is one contiguous run of steps.
TEST_P(BothAgentsTest, OrderNoGapAllocationIsContiguous) {
  auto p = makePlanner(GetParam());
  ASSERT_TRUE(p->submit(ReservationId("busy"), block(90, 50, 70), kNow).isOk());
  auto r = p->submit(
      ReservationId("a"),
      def(0, 120, {stage(20, 20, 10), stage(30, 1, 5), stage(5, 5, 10)}, Interpreter::kOrderNoGap),
      kNow);
  ASSERT_TRUE(r.isOk()) << r.status().toString();
  for (size_t i = 0; i + 1 < r->allocations.size(); ++i) {
    EXPECT_EQ(r->allocations[i].end, r->allocations[i + 1].start);
  }
  for (size_t k = 0; k + 1 < r->stages.size(); ++k) {
    EXPECT_EQ(r->stages[k].allocations.back().end, r->stages[k + 1].allocations.front().start);
  }
}

// A gang holds min_concurrency containers at the same steps for its whole duration.
TEST_P(BothAgentsTest, GangIsPlacedWhole) {
  auto p = makePlanner(GetParam());
  ASSERT_TRUE(p->submit(ReservationId("busy"), block(95, 40, 41), kNow).isOk());
  auto r = p->submit(ReservationId("a"), def(30, 60, {stage(10, 10, 5)}), kNow);
  ASSERT_TRUE(r.isOk()) << r.status().toString();
  ASSERT_EQ(r->allocations.size(), 1u);
  EXPECT_EQ(r->allocations[0].resource, containers(10));
  EXPECT_EQ(r->allocations[0].end - r->allocations[0].start, Millis(5 * 60'000));
  EXPECT_TRUE(r->allocations[0].end <= minute(40) || r->allocations[0].start >= minute(41));
}

// Periodic job with several instances in the LCM: all instances get the same
// placement and each instance fits next to the daily load at its offset.
TEST_P(BothAgentsTest, MultiInstancePlacementIsSharedAndFits) {
  auto p = makePlanner(GetParam());
  ASSERT_TRUE(p->submit(ReservationId("daily"), block(80, 600 + 20, 600 + 40), kNow).isOk());
  auto hourly = def(0, 40, {stage(30, 30, 20)}, Interpreter::kAll, 60);
  auto r = p->submit(ReservationId("hourly"), hourly, kNow);
  ASSERT_TRUE(r.isOk()) << r.status().toString();
  // The only 20-minute slot free at 10:xx is [0, 20) within the hour.
  EXPECT_EQ(r->allocations.front().start, minute(0));
  for (int64_t m = 0; m < 60; ++m) {
    Resource g = p->guaranteedAt(ReservationId("hourly"), minute(m));
    for (int64_t k = 1; k < 24; ++k) {
      EXPECT_EQ(p->guaranteedAt(ReservationId("hourly"), minute(m + 60 * k)), g);
    }
  }
  for (int64_t m = 0; m < 1440; ++m) EXPECT_TRUE(p->loadAt(minute(m)).fitsIn(containers(100)));
  auto inst = p->instanceAt(ReservationId("hourly"), minute(185));
  ASSERT_TRUE(inst.has_value());
  EXPECT_EQ(inst->index, 3);
  EXPECT_EQ(inst->start, minute(180));
  EXPECT_EQ(inst->end, minute(220));
}

// One-off reservations are planned on the capacity left by periodic ones.
TEST_P(BothAgentsTest, OneOffIsPlannedOnResidualCapacity) {
  auto p = makePlanner(GetParam());
  ASSERT_TRUE(p->submit(ReservationId("daily"), block(80, 0, 60), kNow).isOk());
  auto r = p->submit(ReservationId("once"), def(0, 90, {stage(30, 30, 30)}), kNow);
  ASSERT_TRUE(r.isOk()) << r.status().toString();
  EXPECT_EQ(r->allocations.front().start, minute(60));
  // The same one-off a day later sees the daily load again.
  auto r2 = p->submit(ReservationId("once2"), def(1440, 1440 + 90, {stage(30, 30, 30)}), kNow);
  ASSERT_TRUE(r2.isOk());
  EXPECT_EQ(r2->allocations.front().start, minute(1440 + 60));
}

// Periodic reservations have strict priority (Morpheus §6): a new periodic one
// is planned ignoring one-offs, even where a one-off fills its whole window;
// the displaced one-off (fixed window) is kept, over capacity, at risk.
TEST_P(BothAgentsTest, PeriodicHasPriorityOverAdmittedOneOffs) {
  auto p = makePlanner(GetParam());
  ASSERT_TRUE(
      p->submit(ReservationId("once"), def(1440 + 90, 1440 + 170, {stage(90, 90, 80)}), kNow)
          .isOk());
  const Placement once = *p->placement(ReservationId("once"));
  DisplacementReport rep;
  auto r =
      p->submit(ReservationId("daily"), def(90, 170, {stage(20, 20, 30)}, Interpreter::kAll, 1440),
                kNow, nullptr, &rep);
  ASSERT_TRUE(r.isOk()) << r.status().toString();
  EXPECT_EQ(rep.at_risk, std::vector<ReservationId>{ReservationId("once")});
  EXPECT_TRUE(rep.replanned.empty());
  EXPECT_EQ(*p->placement(ReservationId("once")), once);
  for (int64_t m = 0; m < 1440; ++m) EXPECT_TRUE(p->loadAt(minute(m)).fitsIn(containers(100)));
}

// An hourly reservation blocked in one hour of the day is refused whole, and
// its instances over the LCM (one daily reservation per hour) are admitted
// in every other hour (refused hourly jobs ran unreserved).
TEST_P(BothAgentsTest, InstancesOverLcmAdmitWhatAWholeRecurringOneCannot) {
  auto p = makePlanner(GetParam());
  ASSERT_TRUE(p->submit(ReservationId("busy"), block(100, 5 * 60, 5 * 60 + 20), kNow).isOk());
  const auto hourly = def(0, 20, {stage(50, 50, 10)}, Interpreter::kAll, 60);
  ASSERT_FALSE(p->submit(ReservationId("hourly"), hourly, kNow).isOk());
  const auto parts = instancesOverLcm(hourly, Millis(1440 * 60'000));
  ASSERT_EQ(parts.size(), 24u);
  std::vector<int> refused;
  for (size_t i = 0; i < parts.size(); i++) {
    EXPECT_EQ(parts[i].arrival, minute(60 * static_cast<int64_t>(i)));
    EXPECT_EQ(parts[i].deadline, minute(60 * static_cast<int64_t>(i) + 20));
    EXPECT_EQ(parts[i].period, Millis(1440 * 60'000));
    if (!p->submit(ReservationId("hourly@" + std::to_string(i)), parts[i], kNow).isOk()) {
      refused.push_back(static_cast<int>(i));
    }
  }
  EXPECT_EQ(refused, std::vector<int>{5});
  EXPECT_TRUE(instancesOverLcm(hourly, Millis(90 * 60'000)).empty());  // 60 does not divide 90
  EXPECT_TRUE(instancesOverLcm(def(0, 20, {stage(1, 1, 10)}), Millis(1440 * 60'000)).empty());
}

// Infeasible requests report the failed stage, saturated steps, the earliest
// feasible deadline and how many containers would fit; the message shows the
// times in ISO-8601 UTC.
TEST_P(BothAgentsTest, InfeasibleRequestIsExplained) {
  auto p = makePlanner(GetParam());
  ASSERT_TRUE(p->submit(ReservationId("full"), block(100, 0, 30), kNow).isOk());
  ASSERT_TRUE(p->submit(ReservationId("most"), block(60, 30, 60), kNow).isOk());
  InfeasibilityExplanation ex;
  auto r = p->submit(ReservationId("x"), def(0, 60, {stage(50, 50, 30)}), kNow, &ex);
  ASSERT_FALSE(r.isOk());
  EXPECT_EQ(r.status().code(), StatusCode::kInfeasible);
  EXPECT_EQ(ex.stage, 0);
  ASSERT_EQ(ex.saturated.size(), 1u);
  EXPECT_EQ(ex.saturated[0].first, minute(0));
  EXPECT_EQ(ex.saturated[0].second, minute(30));
  ASSERT_TRUE(ex.earliest_feasible_deadline.has_value());
  EXPECT_EQ(*ex.earliest_feasible_deadline, minute(90));
  EXPECT_EQ(ex.containers_fitting_by_deadline, 40);
  // Times as people read them (ISO-8601 UTC), not ms since the epoch.
  EXPECT_NE(r.status().message().find(
                "saturated steps: [1970-01-01T00:00:00Z, 1970-01-01T00:30:00Z); earliest feasible "
                "deadline with the same arrival: 1970-01-01T01:30:00Z;"),
            std::string::npos)
      << r.status().message();
  EXPECT_EQ(p->loadAt(minute(70)), Resource());  // nothing committed
}

// Update is try-and-swap: a failed update leaves the old placement; a good one replaces it.
TEST_P(BothAgentsTest, UpdateSwapsOnlyOnSuccess) {
  auto p = makePlanner(GetParam());
  ASSERT_TRUE(p->submit(ReservationId("other"), block(60, 0, 60), kNow).isOk());
  auto d = def(0, 120, {stage(30, 30, 20)});
  auto r = p->submit(ReservationId("a"), d, kNow);
  ASSERT_TRUE(r.isOk());
  auto before = p->planLoad(minute(0), minute(240));
  auto bad = def(0, 60, {stage(50, 50, 30)});
  EXPECT_EQ(p->update(ReservationId("a"), bad, kNow).status().code(), StatusCode::kInfeasible);
  EXPECT_EQ(p->planLoad(minute(0), minute(240)), before);
  EXPECT_EQ(*p->placement(ReservationId("a")), r.value());
  auto good = def(0, 240, {stage(40, 40, 30)});
  auto u = p->update(ReservationId("a"), good, kNow);
  ASSERT_TRUE(u.isOk()) << u.status().toString();
  EXPECT_EQ(containerMinutes(p->placement(ReservationId("a"))->allocations), 1200);
  EXPECT_EQ(p->update(ReservationId("nope"), good, kNow).status().code(), StatusCode::kNotFound);
}

// Remove frees the capacity; a second remove is NOT_FOUND.
TEST_P(BothAgentsTest, RemoveFreesCapacity) {
  auto p = makePlanner(GetParam());
  ASSERT_TRUE(p->submit(ReservationId("a"), block(100, 0, 60), kNow).isOk());
  EXPECT_FALSE(p->submit(ReservationId("b"), block(1, 0, 60), kNow).isOk());
  ASSERT_TRUE(p->remove(ReservationId("a")).isOk());
  EXPECT_EQ(p->loadAt(minute(30)), Resource());
  EXPECT_TRUE(p->submit(ReservationId("b"), block(100, 0, 60), kNow).isOk());
  EXPECT_EQ(p->remove(ReservationId("a")).code(), StatusCode::kNotFound);
  EXPECT_EQ(p->submit(ReservationId("b"), block(1, 0, 60), kNow).status().code(),
            StatusCode::kAlreadyExists);
}

// Capacity drop: a one-off that fits nowhere else keeps its placement and is reported at
// risk (never removed), periodic ones are reported; when capacity returns nothing is at risk.
TEST_P(BothAgentsTest, CapacityDropKeepsUnplaceableOneOffAtRisk) {
  auto p = makePlanner(GetParam());
  ASSERT_TRUE(p->submit(ReservationId("daily"), block(50, 0, 30), kNow).isOk());
  ASSERT_TRUE(p->submit(ReservationId("first"), def(60, 90, {stage(40, 40, 30)}), kNow).isOk());
  ASSERT_TRUE(p->submit(ReservationId("fixed"), def(60, 90, {stage(40, 40, 30)}), kNow).isOk());
  ASSERT_TRUE(p->submit(ReservationId("loose"), def(60, 300, {stage(20, 20, 30)}), kNow).isOk());
  // Both agents place "loose" off the loaded minutes [60, 90) (LowCost avoids load, greedy
  // goes latest), so the drop below does not touch it.
  for (int64_t m = 60; m < 90; ++m) {
    EXPECT_TRUE(p->guaranteedAt(ReservationId("loose"), minute(m)).isZero()) << m;
  }
  const Placement fixed = *p->placement(ReservationId("fixed"));
  const Placement loose = *p->placement(ReservationId("loose"));
  auto rep = p->setCapacity(containers(45), kNow);
  EXPECT_EQ(rep.periodic_over_capacity, std::vector<ReservationId>{ReservationId("daily")});
  ASSERT_EQ(rep.over_capacity_offsets.size(), 1u);
  EXPECT_EQ(rep.over_capacity_offsets[0].second, Millis(30 * 60'000));
  EXPECT_TRUE(rep.replanned.empty());
  EXPECT_EQ(rep.at_risk, std::vector<ReservationId>{ReservationId("fixed")});
  ASSERT_NE(p->placement(ReservationId("fixed")), nullptr) << "an at-risk one-off stays planned";
  EXPECT_EQ(*p->placement(ReservationId("fixed")), fixed);
  EXPECT_EQ(*p->placement(ReservationId("loose")), loose);
  ASSERT_NE(p->placement(ReservationId("first")), nullptr);
  for (int64_t m = 30; m < 1440; ++m) {
    bool at_risk_step = m >= 60 && m < 90;
    EXPECT_EQ(p->loadAt(minute(m)).fitsIn(containers(45)), !at_risk_step) << m;
  }
  // Capacity returns: nothing is at risk any more and no placement moved.
  auto back = p->setCapacity(containers(100), kNow);
  EXPECT_TRUE(back.at_risk.empty());
  EXPECT_TRUE(back.replanned.empty());
  EXPECT_EQ(*p->placement(ReservationId("fixed")), fixed);
}

// A dropped capacity forces a re-plan of a one-off sitting on an overloaded step.
TEST_P(BothAgentsTest, CapacityDropReplansFlexibleOneOff) {
  auto p = makePlanner(GetParam());
  ASSERT_TRUE(p->submit(ReservationId("wall"), block(100, 90, 600), kNow).isOk());
  ASSERT_TRUE(p->submit(ReservationId("fixed"), def(60, 90, {stage(60, 60, 30)}), kNow).isOk());
  ASSERT_TRUE(p->submit(ReservationId("flex"), def(0, 600, {stage(40, 40, 30)}), kNow).isOk());
  bool overlapped = p->guaranteedAt(ReservationId("flex"), minute(75)) == containers(40);
  EXPECT_EQ(overlapped, GetParam() == "greedy");  // greedy goes latest, LowCost avoids the load
  auto rep = p->setCapacity(containers(99), kNow);
  EXPECT_TRUE(rep.at_risk.empty());
  EXPECT_EQ(rep.periodic_over_capacity, std::vector<ReservationId>{ReservationId("wall")});
  if (overlapped) {
    EXPECT_EQ(rep.replanned, std::vector<ReservationId>{ReservationId("flex")});
  }
  EXPECT_EQ(containerMinutes(p->placement(ReservationId("flex"))->allocations), 1200);
  for (int64_t m = 0; m < 90; ++m) EXPECT_TRUE(p->loadAt(minute(m)).fitsIn(containers(99)));
}

// Restore reproduces the persisted allocations exactly, without re-planning.
TEST_P(BothAgentsTest, RestoreReproducesAllocations) {
  auto a = makePlanner(GetParam());
  auto b = makePlanner(GetParam());
  std::vector<std::pair<ReservationId, ReservationDefinition>> defs = {
      {ReservationId("d"), block(30, 100, 200)},
      {ReservationId("h"), def(5, 50, {stage(20, 2, 15)}, Interpreter::kAll, 60)},
      {ReservationId("o"),
       def(0, 3000, {stage(50, 10, 45), stage(10, 1, 60)}, Interpreter::kOrder)}};
  for (const auto& [id, d] : defs) ASSERT_TRUE(a->submit(id, d, kNow).isOk());
  for (const auto& [id, d] : defs) ASSERT_TRUE(b->restore(id, d, *a->placement(id)).isOk());
  EXPECT_EQ(a->planLoad(minute(0), minute(4000)), b->planLoad(minute(0), minute(4000)));
  for (const auto& [id, d] : defs) {
    EXPECT_EQ(*a->placement(id), *b->placement(id));
    for (int64_t m = 0; m < 3000; m += 7) {
      EXPECT_EQ(a->guaranteedAt(id, minute(m)), b->guaranteedAt(id, minute(m)));
    }
  }
  Placement bad = *a->placement(ReservationId("d"));
  bad.allocations[0].start += Millis(1);
  EXPECT_EQ(b->restore(ReservationId("z"), block(30, 100, 200), bad).code(),
            StatusCode::kInvalidArgument);
}

// Restore refuses a stored placement that holds more than its definition allows (more
// containers at once, more container-time, or outside its window), naming the allocation.
TEST_P(BothAgentsTest, RestoreRefusesPlacementBeyondDefinition) {
  auto a = makePlanner(GetParam());
  const auto d = def(0, 3000, {stage(50, 10, 45), stage(10, 1, 60)}, Interpreter::kOrder);
  ASSERT_TRUE(a->submit(ReservationId("o"), d, kNow).isOk());
  const Placement good = *a->placement(ReservationId("o"));
  auto b = makePlanner(GetParam());
  Placement wide = good;
  wide.allocations[0].resource = containers(61);  // the stages hold at most 60 at once
  Status st = b->restore(ReservationId("o"), d, wide);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(st.message().rfind("placement.allocations[0].resource:", 0), 0u) << st.message();
  // 60 containers at every allocated step: within the peak, but more container-time than the
  // stages' 50 x 45 + 10 x 60 container-minutes.
  Placement longer = good;
  for (auto& a : longer.allocations) a.resource = containers(60);
  st = b->restore(ReservationId("o"), d, longer);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("x time"), std::string::npos) << st.message();
  EXPECT_TRUE(b->planLoad(minute(0), minute(3000)).size() <= 1u) << "nothing was restored";
  EXPECT_TRUE(b->restore(ReservationId("o"), d, good).isOk());
}

// DRA swap: setExtra replaces the earlier grant, counts it as room, and caps
// the count at what every step of the interval can hold.
TEST_P(BothAgentsTest, SetExtraSwapsAndCapsAtPlanRoom) {
  auto p = makePlanner(GetParam());
  ASSERT_TRUE(p->submit(ReservationId("a"), block(50, 0, 60), kNow).isOk());
  ASSERT_TRUE(p->submit(ReservationId("b"), block(40, 30, 60), kNow).isOk());
  std::string limit;
  auto n =
      p->setExtra(ReservationId("a"), containers(1), 8, minute(10), minute(20), minute(10), &limit);
  ASSERT_TRUE(n.isOk()) << n.status().toString();
  EXPECT_EQ(*n, 8);
  EXPECT_TRUE(limit.empty());
  EXPECT_EQ(p->extraAt(ReservationId("a"), minute(15)), containers(8));
  // Replacing at minute 12 with a bigger ask over [12, 40): steps from 30 on
  // hold 90 of 100, so 10 fit; the 8 held before count as room.
  n = p->setExtra(ReservationId("a"), containers(1), 30, minute(12), minute(40), minute(12),
                  &limit);
  ASSERT_TRUE(n.isOk());
  EXPECT_EQ(*n, 10);
  EXPECT_NE(limit.find("allows 10"), std::string::npos) << limit;
  EXPECT_EQ(p->extraAt(ReservationId("a"), minute(11)), containers(8)) << "the past is kept";
  EXPECT_EQ(p->extraAt(ReservationId("a"), minute(35)), containers(10));
  EXPECT_EQ(p->guaranteedAt(ReservationId("a"), minute(35)), containers(60));
  EXPECT_EQ(p->loadAt(minute(35)), containers(100));
  // Nothing fits: no extra from then on, and the count says so.
  n = p->setExtra(ReservationId("b"), containers(1), 5, minute(35), minute(40), minute(35), &limit);
  ASSERT_TRUE(n.isOk());
  EXPECT_EQ(*n, 0);
  EXPECT_EQ(
      p->setExtra(ReservationId("a"), Resource(), 1, minute(35), minute(40), minute(35), nullptr)
          .status()
          .code(),
      StatusCode::kInvalidArgument);
  EXPECT_EQ(p->setExtra(ReservationId("zz"), containers(1), 1, minute(35), minute(40), minute(35),
                        nullptr)
                .status()
                .code(),
            StatusCode::kNotFound);
}

// Skyline stages: a step's demand is stretched over later steps when its own step is full.
TEST_P(BothAgentsTest, SkylineStepStretchesOverLaterSteps) {
  auto p = makePlanner(GetParam());
  ASSERT_TRUE(p->submit(ReservationId("busy"), block(70, 1, 2), kNow).isOk());
  auto d = def(0, 4, skylineStages({50, 50}, kOne, Millis(60'000), SkylineSteps::kStretchable),
               Interpreter::kOrderNoGap);
  auto r = p->submit(ReservationId("sky"), d, kNow);
  ASSERT_TRUE(r.isOk()) << r.status().toString();
  EXPECT_EQ(containerMinutes(r->allocations), 100);
  for (int64_t m = 0; m < 5; ++m) EXPECT_TRUE(p->loadAt(minute(m)).fitsIn(containers(100)));
}

// Whole skyline steps keep the fitted shape: each step is held at its full
// height in consecutive steps (shifted past the busy minute), and a window
// with no such place refuses the skyline where stretchable steps are spread.
TEST_P(BothAgentsTest, WholeSkylineStepsKeepTheirShapeOrAreRefused) {
  auto p = makePlanner(GetParam());
  ASSERT_TRUE(p->submit(ReservationId("busy"), block(70, 1, 2), kNow).isOk());
  auto whole = def(0, 4, skylineStages({50, 50}, kOne, Millis(60'000), SkylineSteps::kWhole),
                   Interpreter::kOrderNoGap);
  ASSERT_EQ(whole.stages[0].min_concurrency, 50);
  auto r = p->submit(ReservationId("sky"), whole, kNow);
  ASSERT_TRUE(r.isOk()) << r.status().toString();
  EXPECT_EQ(containerMinutes(r->allocations), 100);
  EXPECT_EQ(p->loadAt(minute(2)), containers(50));
  EXPECT_EQ(p->loadAt(minute(3)), containers(50));

  auto q = makePlanner(GetParam());
  ASSERT_TRUE(q->submit(ReservationId("busy"), block(70, 1, 3), kNow).isOk());
  EXPECT_FALSE(q->submit(ReservationId("sky"), whole, kNow).isOk());
  auto stretchable = whole;
  stretchable.stages = skylineStages({50, 50}, kOne, Millis(60'000), SkylineSteps::kStretchable);
  EXPECT_TRUE(q->submit(ReservationId("sky"), stretchable, kNow).isOk());
}

TEST(SkylineStepsTest, NamesRoundTripAndUnknownNamesTheField) {
  for (SkylineSteps s : {SkylineSteps::kWhole, SkylineSteps::kStretchable}) {
    auto got = parseSkylineSteps(skylineStepsName(s), "f");
    ASSERT_TRUE(got.isOk());
    EXPECT_EQ(*got, s);
  }
  auto bad = parseSkylineSteps("gang", "proposal.skyline-steps");
  ASSERT_FALSE(bad.isOk());
  EXPECT_NE(bad.status().toString().find("proposal.skyline-steps"), std::string::npos);
}

// clone(): a snapshot decides exactly as the original would, and changes to
// either leave the other as it was (the RM plans on a clone off its lock).
TEST_P(BothAgentsTest, CloneDecidesLikeTheOriginalAndIsIndependent) {
  auto p = makePlanner(GetParam());
  ASSERT_TRUE(p->submit(ReservationId("a"), def(0, 60, {stage(40, 10, 20)}), kNow).isOk());
  auto load = [](const Planner& q) {
    std::vector<Resource> l;
    for (int m = 0; m < 120; ++m) l.push_back(q.loadAt(minute(m)));
    return l;
  };
  const std::vector<Resource> before = load(*p);
  auto snap = p->clone();
  const auto d = def(0, 120, {stage(30, 5, 10), stage(20, 1, 30)});
  auto on_snap = snap->submit(ReservationId("b"), d, kNow);
  ASSERT_TRUE(on_snap.isOk()) << on_snap.status().toString();
  EXPECT_EQ(p->placement(ReservationId("b")), nullptr) << "the original saw the clone's submit";
  EXPECT_EQ(load(*p), before) << "the original's load changed";
  EXPECT_NE(load(*snap), before);
  auto on_orig = p->submit(ReservationId("b"), d, kNow);
  ASSERT_TRUE(on_orig.isOk()) << on_orig.status().toString();
  EXPECT_EQ(*on_orig, *on_snap);
  ASSERT_TRUE(p->remove(ReservationId("a")).isOk());
  EXPECT_NE(snap->placement(ReservationId("a")), nullptr) << "the clone saw the original's remove";
}

INSTANTIATE_TEST_SUITE_P(Agents, BothAgentsTest, ::testing::Values("lowcost", "greedy"));

// LowCost spreads away from loaded steps while greedy packs latest-first.
TEST(LowCostTest, AvoidsLoadedStepsWhereGreedyGoesLatest) {
  auto lc = makePlanner("lowcost");
  auto gr = makePlanner("greedy");
  for (auto* p : {lc.get(), gr.get()}) {
    ASSERT_TRUE(p->submit(ReservationId("busy"), block(60, 90, 120), kNow).isOk());
    ASSERT_TRUE(p->submit(ReservationId("a"), def(0, 120, {stage(30, 30, 30)}), kNow).isOk());
  }
  EXPECT_EQ(gr->placement(ReservationId("a"))->allocations.front().start, minute(90));
  EXPECT_LE(lc->placement(ReservationId("a"))->allocations.back().end, minute(90));
}

// Problematic jobs are pulled towards the middle of their window by the alignment penalty.
TEST(LowCostTest, AlignmentPenaltyCentresProblematicJobs) {
  auto p = makePlanner("lowcost");
  auto d = def(0, 100, {stage(10, 10, 10)});
  auto plain = p->submit(ReservationId("plain"), d, kNow);
  ASSERT_TRUE(plain.isOk());
  EXPECT_EQ(plain->allocations.front().start, minute(0));  // default tie-break: earliest
  d.problematic = true;
  auto r = p->submit(ReservationId("drifty"), d, kNow);
  ASSERT_TRUE(r.isOk());
  int64_t mid =
      (toEpochMs(r->allocations.front().start) + toEpochMs(r->allocations.back().end)) / 2 / 60'000;
  EXPECT_NEAR(static_cast<double>(mid), 50.0, 5.0);
}

// capacity-over-time refuses reservations beyond a user's instantaneous share.
TEST(SharingPolicyTest, CapacityOverTimeLimitsUserShare) {
  PlannerOptions o;
  o.sharing_policy = "capacity-over-time";
  o.sharing.instantaneous_max_share = 0.5;
  o.sharing.average_share = 0.25;
  o.sharing.average_window = Millis(4 * 60 * 60'000);
  auto p = makePlanner("lowcost", 100, o);
  ASSERT_TRUE(p->submit(ReservationId("a"), def(0, 60, {stage(40, 40, 60)}), kNow).isOk());
  auto r = p->submit(ReservationId("b"), def(0, 60, {stage(20, 20, 60)}), kNow);
  ASSERT_FALSE(r.isOk());
  EXPECT_EQ(r.status().code(), StatusCode::kInfeasible);
  EXPECT_EQ(r.status().message().rfind("capacity-over-time:", 0), 0u) << r.status().message();
  auto other = def(0, 60, {stage(20, 20, 60)});
  other.user = UserId("bob");
  EXPECT_TRUE(p->submit(ReservationId("c"), other, kNow).isOk());
  // Average: 40% for 1h of a 4h window is 10%; another 40% x 3h pushes it to 40% > 25%.
  auto longer = def(60, 240, {stage(40, 40, 180)});
  auto ra = p->submit(ReservationId("d"), longer, kNow);
  ASSERT_FALSE(ra.isOk());
  EXPECT_NE(ra.status().message().find("average"), std::string::npos);
}

// guaranteedAt answers for unknown ids and outside allocations with zero.
TEST(PlanTest, GuaranteedAtOutsideAllocationIsZero) {
  auto p = makePlanner("lowcost");
  ASSERT_TRUE(p->submit(ReservationId("a"), block(10, 30, 40), kNow).isOk());
  EXPECT_EQ(p->guaranteedAt(ReservationId("a"), minute(29)), Resource());
  EXPECT_EQ(p->guaranteedAt(ReservationId("a"), minute(30)), containers(10));
  EXPECT_EQ(p->guaranteedAt(ReservationId("a"), minute(1440 * 3 + 35)), containers(10));
  EXPECT_EQ(p->guaranteedAt(ReservationId("a"), minute(-1440 + 35)), containers(10));
  EXPECT_EQ(p->guaranteedAt(ReservationId("zz"), minute(35)), Resource());
  EXPECT_EQ(p->placements().size(), 1u);
}

// expire drops one-off reservations whose deadline has passed.
TEST(PlanTest, ExpireDropsFinishedOneOffs) {
  auto p = makePlanner("lowcost");
  ASSERT_TRUE(p->submit(ReservationId("o"), def(0, 60, {stage(10, 10, 30)}), kNow).isOk());
  ASSERT_TRUE(p->submit(ReservationId("d"), block(10, 0, 60), kNow).isOk());
  EXPECT_TRUE(p->expire(minute(30)).empty());
  EXPECT_EQ(p->expire(minute(60)), std::vector<ReservationId>{ReservationId("o")});
  EXPECT_EQ(p->loadAt(minute(1440 + 30)), containers(10));
}

// placements() lists in acceptance order (not id order) whatever was removed
// or updated since, and a clone lists its own reservations: after the
// original drops one, the clone's list still reads it (Plan's order index
// points into the plan that holds it).
TEST(PlanTest, PlacementsKeepAcceptanceOrderAndCloneListsItsOwn) {
  auto p = makePlanner("lowcost");
  for (const char* id : {"c", "a", "d", "b"}) {
    ASSERT_TRUE(p->submit(ReservationId(id), block(1, 0, 60), kNow).isOk()) << id;
  }
  auto ids = [](const Planner& q) {
    std::vector<std::string> out;
    for (const auto& s : q.placements()) out.push_back(s.id.value());
    return out;
  };
  EXPECT_EQ(ids(*p), (std::vector<std::string>{"c", "a", "d", "b"}));
  ASSERT_TRUE(p->remove(ReservationId("a")).isOk());
  ASSERT_TRUE(p->update(ReservationId("c"), block(2, 0, 60), kNow).isOk());
  EXPECT_EQ(ids(*p), (std::vector<std::string>{"c", "d", "b"})) << "update keeps c's place";
  auto snap = p->clone();
  ASSERT_TRUE(p->remove(ReservationId("d")).isOk());
  ASSERT_TRUE(p->submit(ReservationId("a"), block(1, 0, 60), kNow).isOk());
  EXPECT_EQ(ids(*p), (std::vector<std::string>{"c", "b", "a"}));
  ASSERT_EQ(ids(*snap), (std::vector<std::string>{"c", "d", "b"}));
  EXPECT_EQ(snap->placements()[1].placement->allocations.front().resource, containers(1));
}

// The by-reference queries (find, guaranteedOf, extraOf, instanceOf) answer
// as the by-id ones, extras included, and the placement's part and the
// extras' add up to the guarantee.
TEST(PlanTest, ByReferenceQueriesMatchTheByIdOnes) {
  auto p = makePlanner("lowcost");
  ASSERT_TRUE(p->submit(ReservationId("a"), block(10, 30, 40), kNow).isOk());
  auto n = p->setExtra(ReservationId("a"), containers(1), 3, minute(32), minute(36), kNow, nullptr);
  ASSERT_TRUE(n.isOk()) << n.status().toString();
  EXPECT_EQ(p->find(ReservationId("zz")), nullptr);
  const PlannedReservation* r = p->find(ReservationId("a"));
  ASSERT_NE(r, nullptr);
  for (int64_t m : {-1440 + 35, 0, 29, 30, 32, 35, 36, 39, 40, 1440 * 2 + 33}) {
    EXPECT_EQ(p->guaranteedOf(*r, minute(m)), p->guaranteedAt(ReservationId("a"), minute(m))) << m;
    EXPECT_EQ(p->extraOf(*r, minute(m)), p->extraAt(ReservationId("a"), minute(m))) << m;
    EXPECT_EQ(p->placedOf(*r, minute(m)) + p->extraOf(*r, minute(m)),
              p->guaranteedOf(*r, minute(m)))
        << m;
    const auto w = p->instanceAt(ReservationId("a"), minute(m));
    ASSERT_TRUE(w.has_value());
    EXPECT_EQ(p->instanceOf(*r, minute(m)).index, w->index) << m;
    EXPECT_EQ(p->instanceOf(*r, minute(m)).start, w->start) << m;
  }
  EXPECT_EQ(p->extraOf(*r, minute(33)), containers(*n));
  EXPECT_EQ(p->placedOf(*r, minute(33)), containers(10));
  EXPECT_EQ(p->guaranteedOf(*r, minute(33)), containers(10 + *n));
}

// hasDisplaceable follows every edit that makes or unmakes a reservation
// a periodic admission may displace (a one-off, or a periodic reservation
// holding extras), and edits() moves on adding and removing a reservation
// only: find's pointer is kept over extras, which change in place.
TEST(PlanTest, DisplaceableCountAndEditsFollowEveryEdit) {
  Plan plan(PlanOptions{}, containers(100));
  auto placed = [](int64_t from, int64_t to, Millis period) {
    Placement pl;
    pl.period = period;
    pl.allocations.push_back({minute(from), minute(to), containers(2)});
    return pl;
  };
  const Millis day(86'400'000);
  EXPECT_FALSE(plan.hasDisplaceable());
  const uint64_t e0 = plan.edits();
  ASSERT_TRUE(plan.add(ReservationId("p"), block(2, 0, 60), placed(0, 60, day), 1).isOk());
  EXPECT_FALSE(plan.hasDisplaceable()) << "a periodic reservation without extras";
  EXPECT_EQ(plan.edits(), e0 + 1);
  const PlannedReservation* p = plan.find(ReservationId("p"));
  ASSERT_TRUE(plan.addExtra(ReservationId("p"), containers(1), minute(10), minute(20)).isOk());
  EXPECT_TRUE(plan.hasDisplaceable()) << "its extras may be displaced";
  ASSERT_TRUE(plan.addExtra(ReservationId("p"), containers(1), minute(30), minute(40)).isOk());
  EXPECT_EQ(plan.edits(), e0 + 1) << "extras change the reservation in place";
  EXPECT_EQ(plan.find(ReservationId("p")), p);
  ASSERT_TRUE(plan.removeExtrasFrom(ReservationId("p"), minute(35)).isOk());
  EXPECT_TRUE(plan.hasDisplaceable()) << "extras left before minute 35";
  ASSERT_TRUE(plan.removeExtrasFrom(ReservationId("p"), minute(0)).isOk());
  EXPECT_FALSE(plan.hasDisplaceable()) << "every extra released";
  ASSERT_TRUE(
      plan.add(ReservationId("o"), def(0, 60, {stage(2, 2, 60)}), placed(0, 60, Millis(0)), 2)
          .isOk());
  EXPECT_TRUE(plan.hasDisplaceable()) << "a one-off";
  ASSERT_TRUE(plan.addExtra(ReservationId("o"), containers(1), minute(10), minute(20)).isOk());
  ASSERT_TRUE(plan.removeExtrasFrom(ReservationId("o"), minute(0)).isOk());
  EXPECT_TRUE(plan.hasDisplaceable()) << "still a one-off without its extras";
  ASSERT_TRUE(plan.addExtra(ReservationId("p"), containers(1), minute(10), minute(20)).isOk());
  ASSERT_TRUE(plan.remove(ReservationId("o")).isOk());
  EXPECT_TRUE(plan.hasDisplaceable()) << "p's extras";
  ASSERT_TRUE(plan.remove(ReservationId("p")).isOk());
  EXPECT_FALSE(plan.hasDisplaceable());
  EXPECT_EQ(plan.edits(), e0 + 4);
  EXPECT_FALSE(plan.add(ReservationId("x"), block(2, 0, 60), placed(0, 60, Millis(0)), 3).isOk());
  EXPECT_EQ(plan.edits(), e0 + 4) << "a refused add changes nothing";
  EXPECT_FALSE(plan.hasDisplaceable());
}

}  // namespace
}  // namespace morpheus::planner
