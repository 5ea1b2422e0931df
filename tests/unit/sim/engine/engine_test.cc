// morpheus-sim engine: small scenarios whose outcomes are
// known by hand, determinism, bad inputs. Workloads are hand-made and realised
// exactly (no noise) unless a test says otherwise.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <map>
#include <mutex>
#include <optional>
#include <set>

#include "planner/reservation.h"
#include "sim/engine/cluster_sim.h"
#include "sim/engine/engine.h"
#include "sim/engine/report.h"
#include "sim/engine/strategy.h"

namespace morpheus::sim {
namespace {

constexpr int64_t kMin = 60'000;

SimStage stage(int64_t tasks, int64_t minutes, std::vector<int> deps = {}) {
  SimStage s;
  s.name = "s";
  s.tasks = tasks;
  s.task_duration = Millis(minutes * kMin);
  s.task_resource = Resource(1024, 1);
  s.depends_on = std::move(deps);
  return s;
}

PeriodicJob job(const std::string& key, Millis period, Millis submit, Millis deadline,
                std::vector<SimStage> stages, int64_t user_containers) {
  PeriodicJob j;
  j.key = JobKey(key);
  j.owner = UserId("owner-" + key);
  j.period = period;
  j.submit_offset = submit;
  j.input_available = submit;
  j.deadline = deadline;
  j.stages = std::move(stages);
  j.input_path = "/in/" + key;
  j.output_path = "/out/" + key;
  j.user_containers = user_containers;
  j.user_container_resource = Resource(1024, 1);
  return j;
}

// Instance k exactly as nominal: every task its stage's task_duration.
RealizedInstance exact(const PeriodicJob& j, size_t, int64_t k, uint64_t) {
  RealizedInstance r;
  r.index = k;
  r.submit = fromEpochMs(k * j.period.count() + j.submit_offset.count());
  r.input_available = fromEpochMs(k * j.period.count() + j.input_available.count());
  r.deadline = fromEpochMs(k * j.period.count() + j.deadline.count());
  for (const auto& s : j.stages) {
    r.stages.push_back(
        RealizedStage{std::vector<Millis>(static_cast<size_t>(s.tasks), s.task_duration)});
  }
  return r;
}

ExperimentOptions options(int64_t nodes, int64_t days) {
  ExperimentOptions o;
  o.nodes = nodes;
  o.node_size = Resource(8192, 8);
  o.days = days;
  o.train_fraction = 0.5;
  o.realize = exact;
  return o;
}

// A daily reservation request of `key` (its owner, root.prod) over
// [0, deadline) of each day, without stages.
planner::ReservationDefinition dailyDef(const std::string& key, Millis deadline) {
  planner::ReservationDefinition d;
  d.user = UserId("owner-" + key);
  d.queue = "root.prod";
  d.name = key;
  d.recurrence_key = JobKey(key);
  d.period = Millis(86400'000);
  d.arrival = fromEpochMs(0);
  d.deadline = fromEpochMs(deadline.count());
  return d;
}

// A run over the first day, admitting smallest instance first or not.
RunSetup firstDay(bool admit_smallest_first) {
  RunSetup setup;
  setup.from = fromEpochMs(0);
  setup.to = fromEpochMs(86400'000);
  setup.admit_smallest_first = admit_smallest_first;
  return setup;
}

std::vector<StrategySpec> only(const std::string& name) {
  return *parseStrategies({name}, {}, 0.5);
}

// An over-provisioned baseline job: reserved and used container-seconds are
// exactly what its static reservation and its tasks hold.
TEST(SimEngineTest, OverProvisionedBaselineWasteIsExact) {
  Workload w;
  w.periodic.push_back(
      job("etl", Millis(3600'000), Millis(0), Millis(30 * kMin), {stage(2, 10)}, 10));
  auto s = runExperiment(w, options(2, 2), only("baseline"));
  ASSERT_TRUE(s.isOk()) << s.status().message();
  const StrategyResult& r = s->strategies.at(0);
  ASSERT_EQ(r.periodic_instances, 24);  // day 2: one instance per hour
  EXPECT_EQ(r.deadline_violations, 0);
  EXPECT_EQ(r.worst_case_violations, 0);
  for (const auto& i : r.instances) {
    EXPECT_DOUBLE_EQ(i.reserved_container_s, 10.0 * 1800);  // 10 containers x 30 min
    EXPECT_DOUBLE_EQ(i.used_container_s, 2.0 * 600);        // 2 tasks x 10 min
    EXPECT_EQ(i.runtime, Millis(10 * kMin));
  }
}

// The baseline's user requests go through the reservation system: on one
// 8-container node two jobs each ask for all 8 over the same 20 min window.
// The first is admitted and holds exactly its request; the second, which the
// plan cannot hold, is refused and runs in its ad-hoc queue with nothing
// reserved (a guarantee beyond capacity is not a guarantee).
TEST(SimEngineTest, BaselineAdmitsOnlyUserRequestsThePlanHolds) {
  Workload w;
  w.periodic.push_back(
      job("first", Millis(3600'000), Millis(0), Millis(20 * kMin), {stage(2, 5)}, 8));
  w.periodic.push_back(
      job("second", Millis(3600'000), Millis(0), Millis(20 * kMin), {stage(2, 5)}, 8));
  auto s = runExperiment(w, options(1, 2), only("baseline"));
  ASSERT_TRUE(s.isOk()) << s.status().message();
  const StrategyResult& r = s->strategies.at(0);
  EXPECT_EQ(r.extra.at("unreserved_jobs"), 1);
  ASSERT_EQ(r.periodic_instances, 48);  // day 2, two hourly jobs
  for (const auto& i : r.instances) {
    EXPECT_TRUE(i.met) << i.job << "#" << i.index;  // 4 tasks of 5 min fit either way
    if (i.job == "first") {
      EXPECT_DOUBLE_EQ(i.reserved_container_s, 8.0 * 1200);
      EXPECT_TRUE(i.worst_case_met);
    } else {
      EXPECT_DOUBLE_EQ(i.reserved_container_s, 0);
      EXPECT_FALSE(i.worst_case_met);
    }
  }
}

// A job that cannot meet its deadline (its task alone is longer than the
// window) is one violation per instance, also when still running at the end.
TEST(SimEngineTest, UnmeetableDeadlineCountedOncePerInstance) {
  Workload w;
  // Daily, 30 min deadline, one 2 h task; and one whose 40 h task outlives the run.
  w.periodic.push_back(
      job("slow", Millis(86400'000), Millis(0), Millis(30 * kMin), {stage(1, 120)}, 1));
  w.periodic.push_back(
      job("endless", Millis(86400'000), Millis(0), Millis(30 * kMin), {stage(1, 40 * 60)}, 1));
  auto s = runExperiment(w, options(1, 4), only("baseline"));
  ASSERT_TRUE(s.isOk()) << s.status().message();
  const StrategyResult& r = s->strategies.at(0);
  EXPECT_EQ(r.periodic_instances, 4);  // days 2 and 3, two jobs
  EXPECT_EQ(r.deadline_violations, 4);
  EXPECT_EQ(r.worst_case_violations, 4);
  EXPECT_DOUBLE_EQ(r.violation_rate, 1.0);
  for (const auto& i : r.instances) EXPECT_FALSE(i.met);
}

// Hand-built run: a reservation of 4 containers for 5 min while the job needs
// 12 for 5 min, on a cluster an ad-hoc job fills with endless tasks. Without
// DRA it gets its 4 and waits for the rest (3 waves: misses its 8 min
// deadline); with morpheus-dra the grant of 8 more lets it finish in one wave.
RunOutput reservationTooSmall(const std::string& dra) {
  Workload w;
  w.periodic.push_back(
      job("grow", Millis(86400'000), Millis(kMin), Millis(8 * kMin), {stage(12, 5)}, 4));
  AdhocJob hog;
  hog.name = "hog";
  hog.user = UserId("adhoc");
  hog.submit = Millis(0);
  hog.stages.push_back(stage(16, 48 * 60));
  w.adhoc.push_back(hog);
  ExperimentOptions o = options(2, 2);
  RunSetup setup;
  setup.from = fromEpochMs(0);
  setup.to = fromEpochMs(86400'000);
  setup.dra = dra;
  JobProvision p;
  p.kind = JobProvision::Kind::kPlanned;
  p.def.user = UserId("owner-grow");
  p.def.queue = "root.prod";
  p.def.name = "grow";
  p.def.recurrence_key = JobKey("grow");
  p.def.period = Millis(86400'000);
  p.def.arrival = fromEpochMs(0);
  p.def.deadline = fromEpochMs(5 * kMin);
  p.def.stages.push_back(planner::ReservationStage{Resource(1024, 1), 4, 4, Millis(5 * kMin)});
  p.budget_container_ms = 8 * 10 * kMin;  // 8 extra containers for 10 min
  setup.provisions.push_back(p);
  auto out = simulateRun(w, o, setup, "test", nullptr, nullptr);
  EXPECT_TRUE(out.isOk()) << out.status().message();
  return out.isOk() ? std::move(*out) : RunOutput{};
}

TEST(SimEngineTest, SmallReservationMissesWithoutDraMeetsWithDra) {
  RunOutput without = reservationTooSmall("");
  ASSERT_EQ(without.result.instances.size(), 1u);
  EXPECT_FALSE(without.result.instances[0].met);
  EXPECT_EQ(without.result.instances[0].dra_grants, 0);

  RunOutput with = reservationTooSmall("morpheus-dra");
  ASSERT_EQ(with.result.instances.size(), 1u);
  EXPECT_TRUE(with.result.instances[0].met)
      << "runtime " << with.result.instances[0].runtime.count();
  EXPECT_GT(with.result.instances[0].dra_grants, 0);
}

// Two jobs on one 8-container node, both due 10 min after submit: "greedy"
// (first in the workload) has no reservation of the strategy's and a user
// fallback of all 8 containers; "fit" has a planned skyline of 4. The
// strategy's reservation is admitted before any fallback, so "fit" is
// reserved and meets its deadline on reserved capacity alone, and "greedy"'s
// fallback, which no longer fits, leaves it unreserved.
TEST(SimEngineTest, StrategyReservationsAdmittedBeforeUserFallbacks) {
  Workload w;
  w.periodic.push_back(
      job("greedy", Millis(86400'000), Millis(0), Millis(10 * kMin), {stage(2, 5)}, 8));
  w.periodic.push_back(
      job("fit", Millis(86400'000), Millis(0), Millis(10 * kMin), {stage(4, 5)}, 8));
  ExperimentOptions o = options(1, 2);
  RunSetup setup = firstDay(false);
  auto def = [&](const std::string& key, int64_t containers, Millis duration) {
    planner::ReservationDefinition d = dailyDef(key, Millis(10 * kMin));
    d.stages.push_back(
        planner::ReservationStage{Resource(1024, 1), containers, containers, duration});
    return d;
  };
  JobProvision greedy;  // kNone: the strategy derived nothing for it
  greedy.fallback = def("greedy", 8, Millis(9 * kMin));
  JobProvision fit;
  fit.kind = JobProvision::Kind::kPlanned;
  fit.def = def("fit", 4, Millis(5 * kMin));
  fit.fallback = def("fit", 8, Millis(9 * kMin));
  setup.provisions = {greedy, fit};
  auto out = simulateRun(w, o, setup, "test", nullptr, nullptr);
  ASSERT_TRUE(out.isOk()) << out.status().message();
  EXPECT_EQ(out->result.extra.at("unreserved_jobs"), 1);
  EXPECT_EQ(out->result.extra.at("user_reservation_jobs"), 0);
  ASSERT_EQ(out->result.instances.size(), 2u);  // greedy#0, fit#0 (sorted by job)
  EXPECT_EQ(out->result.instances[1].job, "fit");
  EXPECT_TRUE(out->result.instances[1].worst_case_met);
  EXPECT_DOUBLE_EQ(out->result.instances[0].reserved_container_s, 0);
}

// One 8-container node; "early" holds 6 containers in minutes 0-2. The
// front-loaded skyline of "late" (6, 6, 2, 2 in its 4 min window) finds no
// room there; its in-order compression (2, 2, 6, 6) is tried right after and
// fits, so "late" is reserved, as morpheus-inference's sign-off does.
TEST(SimEngineTest, RefusedFrontLoadedSkylineIsReservedInOrder) {
  Workload w;
  w.periodic.push_back(
      job("early", Millis(86400'000), Millis(0), Millis(2 * kMin), {stage(6, 2)}, 6));
  w.periodic.push_back(job("late", Millis(86400'000), Millis(0), Millis(4 * kMin),
                           {stage(2, 2), stage(6, 2, {0})}, 6));
  ExperimentOptions o = options(1, 2);
  auto planned = [](const std::string& key, Millis deadline, std::vector<int64_t> skyline) {
    planner::ReservationDefinition d = dailyDef(key, deadline);
    d.stages = planner::skylineStages(skyline, Resource(1024, 1), Millis(kMin),
                                      planner::SkylineSteps::kStretchable);
    d.interpreter = planner::Interpreter::kOrderNoGap;
    return d;
  };
  for (bool with_in_order : {false, true}) {
    RunSetup setup = firstDay(true);
    JobProvision early, late;
    early.kind = late.kind = JobProvision::Kind::kPlanned;
    early.def = planned("early", Millis(2 * kMin), {6, 6});
    late.def = planned("late", Millis(4 * kMin), {6, 6, 2, 2});
    if (with_in_order) late.in_order = planned("late", Millis(4 * kMin), {2, 2, 6, 6});
    setup.provisions = {early, late};
    auto out = simulateRun(w, o, setup, "test", nullptr, nullptr);
    ASSERT_TRUE(out.isOk()) << out.status().message();
    EXPECT_EQ(out->result.extra.at("unreserved_jobs"), with_in_order ? 0 : 1) << with_in_order;
    ASSERT_EQ(out->result.instances.size(), 2u);  // early, late
    EXPECT_EQ(out->result.instances[1].job, "late");
    EXPECT_EQ(out->result.instances[1].worst_case_met, with_in_order) << with_in_order;
  }
}

// One 8-container node. A big reservation (8 containers, 9 min) listed
// first and two small ones (4 containers, 5 min each) cannot all fit before
// the 10 min deadline: in workload order (users submitting their requests)
// the big one takes the node, smallest first (the strategy's own batch) the
// two small ones do, so two instances are reserved instead of one.
TEST(SimEngineTest, SmallestFirstAdmissionReservesMoreInstances) {
  Workload w;
  w.periodic.push_back(
      job("big", Millis(86400'000), Millis(0), Millis(10 * kMin), {stage(8, 9)}, 8));
  for (const char* key : {"small-a", "small-b"}) {
    w.periodic.push_back(
        job(key, Millis(86400'000), Millis(0), Millis(10 * kMin), {stage(4, 5)}, 4));
  }
  ExperimentOptions o = options(1, 2);
  auto planned = [&](const std::string& key, int64_t containers, Millis duration) {
    JobProvision p;
    p.kind = JobProvision::Kind::kPlanned;
    p.def = dailyDef(key, Millis(10 * kMin));
    p.def.stages.push_back(
        planner::ReservationStage{Resource(1024, 1), containers, containers, duration});
    return p;
  };
  for (bool smallest_first : {false, true}) {
    RunSetup setup = firstDay(smallest_first);
    setup.provisions = {planned("big", 8, Millis(9 * kMin)),
                        planned("small-a", 4, Millis(5 * kMin)),
                        planned("small-b", 4, Millis(5 * kMin))};
    auto out = simulateRun(w, o, setup, "test", nullptr, nullptr);
    ASSERT_TRUE(out.isOk()) << out.status().message();
    EXPECT_EQ(out->result.extra.at("unreserved_jobs"), smallest_first ? 1 : 2) << smallest_first;
    ASSERT_EQ(out->result.instances.size(), 3u);  // big, small-a, small-b
    EXPECT_EQ(out->result.instances[0].worst_case_met, !smallest_first);
    EXPECT_EQ(out->result.instances[1].worst_case_met, smallest_first);
    EXPECT_EQ(out->result.instances[2].worst_case_met, smallest_first);
  }
}

// One 8-container node whose hour 5 a daily reservation fills: an hourly
// job's reservation (4 containers, 5 of the first 10 min of each hour)
// cannot hold that hour, so the plan refuses it whole. Admitted per instance
// of the day, it is reserved in the other 23 hours (worst case met there)
// and runs unreserved in hour 5 only; without, every instance is unreserved.
TEST(SimEngineTest, RefusedRecurringJobIsReservedPerInstanceWhereThePlanHoldsIt) {
  const Millis hour(60 * kMin);
  Workload w;
  w.periodic.push_back(
      job("busy", Millis(86400'000), hour * 5, hour * 5 + Millis(10 * kMin), {stage(8, 10)}, 8));
  w.periodic.push_back(job("hourly", hour, Millis(0), Millis(10 * kMin), {stage(4, 5)}, 4));
  ExperimentOptions o = options(1, 2);
  JobProvision busy, hourly;
  busy.kind = hourly.kind = JobProvision::Kind::kPlanned;
  busy.def = dailyDef("busy", hour * 5 + Millis(10 * kMin));
  busy.def.arrival = fromEpochMs((hour * 5).count());
  busy.def.stages.push_back(planner::ReservationStage{Resource(1024, 1), 8, 8, Millis(10 * kMin)});
  hourly.def = dailyDef("hourly", Millis(10 * kMin));
  hourly.def.period = hour;
  hourly.def.stages.push_back(planner::ReservationStage{Resource(1024, 1), 4, 4, Millis(5 * kMin)});
  for (bool per_instance : {false, true}) {
    RunSetup setup = firstDay(false);
    setup.admit_per_instance = per_instance;
    setup.provisions = {busy, hourly};
    auto out = simulateRun(w, o, setup, "test", nullptr, nullptr);
    ASSERT_TRUE(out.isOk()) << out.status().message();
    EXPECT_EQ(out->result.extra.at("unreserved_jobs"), per_instance ? 0 : 1);
    int64_t reserved = 0;
    for (const auto& i : out->result.instances) {
      if (i.job != "hourly") continue;
      EXPECT_EQ(i.worst_case_met, per_instance && i.index % 24 != 5) << i.index;
      reserved += i.worst_case_met ? 1 : 0;
    }
    EXPECT_EQ(reserved, per_instance ? 23 : 0);
    if (per_instance) {
      EXPECT_EQ(out->result.extra.at("per_instance_jobs"), 1);
      EXPECT_EQ(out->result.extra.at("one_offs_unreserved"), 1);
    }
  }
}

// Morpheus §6: a 7-hourly job (7 h does not divide the day) gets a one-off
// reservation per instance, submitted within the lead before its window
// opens, on the residual of the periodic plan: a daily job holding the whole
// node over [14:00, 14:35) leaves the instance of 14:05 unreserved and every
// other one reserved. With a 2 h lead the one-offs submitted by the end of
// the 2-day run reach 49:05; with one day, 70:05.
TEST(SimEngineTest, OffKilterJobGetsAOneOffPerInstanceWithinTheLead) {
  const Millis hour(60 * kMin);
  Workload w;
  w.periodic.push_back(
      job("busy", Millis(86400'000), hour * 14, hour * 14 + Millis(35 * kMin), {stage(8, 30)}, 8));
  w.periodic.push_back(
      job("seven", hour * 7, Millis(5 * kMin), Millis(35 * kMin), {stage(4, 5)}, 4));
  ExperimentOptions o = options(1, 2);
  JobProvision busy, seven;
  busy.kind = JobProvision::Kind::kPlanned;
  busy.def = dailyDef("busy", hour * 14 + Millis(35 * kMin));
  busy.def.arrival = fromEpochMs((hour * 14).count());
  busy.def.stages.push_back(planner::ReservationStage{Resource(1024, 1), 8, 8, Millis(35 * kMin)});
  seven.kind = JobProvision::Kind::kPerInstance;
  seven.def = dailyDef("seven", Millis(35 * kMin));
  seven.def.period = hour * 7;
  seven.def.arrival = fromEpochMs(5 * kMin);
  seven.def.stages.push_back(planner::ReservationStage{Resource(1024, 1), 4, 4, Millis(5 * kMin)});
  for (int64_t lead_h : {2, 24}) {
    RunSetup setup = firstDay(false);
    setup.to = fromEpochMs(2 * 86400'000LL);
    setup.one_off_lead = hour * lead_h;
    setup.provisions = {busy, seven};
    auto out = simulateRun(w, o, setup, "test", nullptr, nullptr);
    ASSERT_TRUE(out.isOk()) << out.status().message();
    int64_t instances = 0;
    for (const auto& i : out->result.instances) {
      if (i.job != "seven") continue;
      instances++;
      EXPECT_EQ(i.worst_case_met, i.index != 2) << "instance " << i.index;
    }
    EXPECT_EQ(instances, 7);  // 0:05, 7:05, ..., 42:05
    EXPECT_EQ(out->result.extra.at("off_kilter_jobs"), 1);
    EXPECT_EQ(out->result.extra.at("one_offs_refused_first"), 1);
    EXPECT_EQ(out->result.extra.at("one_offs_reserved"), lead_h == 2 ? 7 : 10);
    EXPECT_EQ(out->result.extra.at("unreserved_jobs"), 0);
  }
}

// morpheus-inference submits a refused one-off again at every check until
// the instance's window opens. With a lead of 8 days, beyond the planner's
// 7-day one-off horizon, a 7-hourly job's instances 24-27 (days 7-8) are
// refused when first submitted at the start, as are later ones when they come
// within the lead; each is reserved by the first check at which the horizon
// reaches its deadline, so every instance of the 8-day run meets its
// deadline on reserved capacity. Submitted once, instances 24-27 would run
// unreserved.
TEST(SimEngineTest, RefusedOneOffIsReservedByALaterCheckOnceThePlanCanHoldIt) {
  const Millis hour(60 * kMin);
  Workload w;
  w.periodic.push_back(
      job("seven", hour * 7, Millis(5 * kMin), Millis(35 * kMin), {stage(4, 5)}, 4));
  JobProvision seven;
  seven.kind = JobProvision::Kind::kPerInstance;
  seven.def = dailyDef("seven", Millis(35 * kMin));
  seven.def.period = hour * 7;
  seven.def.arrival = fromEpochMs(5 * kMin);
  seven.def.stages.push_back(planner::ReservationStage{Resource(1024, 1), 4, 4, Millis(5 * kMin)});
  RunSetup setup = firstDay(false);
  setup.to = fromEpochMs(8 * 86400'000LL);
  setup.one_off_lead = hour * (8 * 24);
  setup.provisions = {seven};
  auto out = simulateRun(w, options(1, 8), setup, "test", nullptr, nullptr);
  ASSERT_TRUE(out.isOk()) << out.status().message();
  int64_t instances = 0;
  for (const auto& i : out->result.instances) {
    instances++;
    EXPECT_TRUE(i.worst_case_met) << "instance " << i.index;
  }
  EXPECT_EQ(instances, 28);  // 0:05, 7:05, ..., 189:05
  // Refused first: instances 24-54 (windows opening by 2 x 8 days); reserved
  // on a retry: 24-51 (deadlines within 7 days of the run's last check).
  EXPECT_EQ(out->result.extra.at("one_offs_refused_first"), 31);
  EXPECT_EQ(out->result.extra.at("one_offs_reserved_on_retry"), 28);
  EXPECT_EQ(out->result.extra.at("one_offs_unreserved"), 0);
}

// The same through inference: the 7-hourly job's SLO is off-kilter, and
// morpheus reserves its instances one by one instead of leaving it to the
// user's request (it used to count it as unplanned_off_kilter_jobs).
TEST(SimEngineTest, InferredOffKilterJobIsReservedPerInstance) {
  const Millis hour(60 * kMin);
  Workload w;
  w.periodic.push_back(
      job("seven", hour * 7, Millis(5 * kMin), Millis(35 * kMin), {stage(2, 5)}, 2));
  auto s = runExperiment(w, options(2, 6), only("morpheus"));
  ASSERT_TRUE(s.isOk()) << s.status().message();
  const StrategyResult& r = s->strategies.at(0);
  EXPECT_EQ(r.extra.at("unplanned_off_kilter_jobs"), 0);
  EXPECT_EQ(r.extra.at("off_kilter_jobs"), 1);
  EXPECT_EQ(r.extra.at("user_reservation_jobs"), 0);
  EXPECT_GE(r.periodic_instances, 10);
  EXPECT_EQ(r.worst_case_violations, 0);
  EXPECT_EQ(r.deadline_violations, 0);
}

// An hourly job due 30 min after submit whose one 10 min task runs 40 min
// every fourth hour: its consumer reads at the deadline (or at the late
// end), so the inferred window is [0, 30 min), while the LP skyline (alpha
// 0.01) covers the 40 min runs. Morpheus cannot place it, says why in the
// summary, and the job keeps the user's request.
RealizedInstance everyFourthLong(const PeriodicJob& j, size_t i, int64_t k, uint64_t seed) {
  RealizedInstance r = exact(j, i, k, seed);
  if (k % 4 == 0) r.stages[0].task_durations[0] = Millis(40 * kMin);
  return r;
}

TEST(SimEngineTest, SkylineLongerThanWindowIsCountedAndFallsBack) {
  Workload w;
  w.periodic.push_back(
      job("tail", Millis(3600'000), Millis(0), Millis(30 * kMin), {stage(1, 10)}, 1));
  ExperimentOptions o = options(1, 4);
  o.realize = everyFourthLong;
  auto s = runExperiment(w, o, *parseStrategies({"morpheus"}, {}, 0.01));
  ASSERT_TRUE(s.isOk()) << s.status().message();
  const StrategyResult& r = s->strategies.at(0);
  EXPECT_EQ(r.extra.at("unplanned_window_too_short_jobs"), 1);
  EXPECT_EQ(r.extra.at("unplanned_no_slo_jobs"), 0);
  EXPECT_EQ(r.extra.at("user_reservation_jobs"), 1);
  EXPECT_EQ(r.extra.at("unreserved_jobs"), 0);
}

// Runs morpheus on `w`: the one job's skyline was reshaped to its window and
// reserved for the job itself (no fallback to the user's request, none
// unreserved).
void expectReshapedOwnReservation(const Workload& w, const ExperimentOptions& o) {
  auto s = runExperiment(w, o, *parseStrategies({"morpheus"}, {}, 0.01));
  ASSERT_TRUE(s.isOk()) << s.status().message();
  const StrategyResult& r = s->strategies.at(0);
  EXPECT_EQ(r.extra.at("skyline_reshaped_jobs"), 1);
  EXPECT_EQ(r.extra.at("unplanned_window_too_short_jobs"), 0);
  EXPECT_EQ(r.extra.at("user_reservation_jobs"), 0);
  EXPECT_EQ(r.extra.at("unreserved_jobs"), 0);
}

// A job that could run wider than its runs did: its skyline (long tail of
// every fourth run) outlasts the 30 min window, so it is reshaped to the window
// (same area, up to 4 containers) and the job keeps a reservation of its own.
TEST(SimEngineTest, SkylineLongerThanWindowIsReshapedWhenTheJobCanRunWider) {
  Workload w;
  w.periodic.push_back(
      job("wide", Millis(3600'000), Millis(0), Millis(30 * kMin), {stage(4, 10)}, 1));
  ExperimentOptions o = options(1, 4);
  o.realize = everyFourthLong;
  expectReshapedOwnReservation(w, o);
}

// A window off
// the plan-step grid. Input and submission at 30 s, due at 30 min 30 s: the
// window is 30 min long but holds only 29 whole plan steps ([1 min, 30 min)),
// all the planner can place in. The skyline (40 min runs every fourth hour)
// must be reshaped to those 29 steps; reshaped to 30 the planner refused it
// and the job fell back to the user's request.
TEST(SimEngineTest, SkylineIsReshapedToTheWholePlanStepsOfAnOffGridWindow) {
  Workload w;
  w.periodic.push_back(job("offgrid", Millis(3600'000), Millis(30'000), Millis(30 * kMin + 30'000),
                           {stage(4, 10)}, 1));
  ExperimentOptions o = options(1, 4);
  o.realize = everyFourthLong;
  expectReshapedOwnReservation(w, o);
}

// A join DAG: two 8-task map stages of 30 s run side by side (16 containers
// at once), then 8 reduce tasks of 10 min that run 40 min every fourth hour.
// The LP skyline (alpha 0.01) covers the 40 min runs: about 8 + 8 x 40 = 328
// container-min over 41 steps, longer than the 22 min window. The runs never
// hold 16 containers for a whole step (peak about 12), so reshaping them to
// the window needs the job's real parallelism, 16 (22 x 16 = 352 fits); capped
// at the widest single stage (8, or the peak: 22 x 12 = 264) the skyline was
// declared infeasible and the job fell back to the user's request.
RealizedInstance everyFourthLongReduce(const PeriodicJob& j, size_t i, int64_t k, uint64_t seed) {
  RealizedInstance r = exact(j, i, k, seed);
  if (k % 4 == 0) {
    for (auto& d : r.stages[2].task_durations) d = Millis(40 * kMin);
  }
  return r;
}

// An hourly join of two `tasks`-task maps of 30 s and a `tasks`-task reduce
// of 10 min, due `deadline_min` after submission.
Workload hourlyJoin(const std::string& name, int64_t tasks, int64_t deadline_min,
                    int64_t user_containers) {
  SimStage map = stage(tasks, 1);
  map.task_duration = Millis(30'000);
  Workload w;
  w.periodic.push_back(job(name, Millis(3600'000), Millis(0), Millis(deadline_min * kMin),
                           {map, map, stage(tasks, 10, {0, 1})}, user_containers));
  return w;
}

TEST(SimEngineTest, ReshapeCapCountsStagesThatRunSideBySide) {
  ExperimentOptions o = options(2, 4);
  o.realize = everyFourthLongReduce;
  expectReshapedOwnReservation(hourlyJoin("join", 8, 22, 16), o);
}

// Input growth: the join above declared with 4 tasks per stage, but every
// run has 6 (as its AM reports), and every fourth run's reduce tasks take
// 40 min. The LP skyline (~6 x 41 container-min over 41 steps) outlasts the
// 24 min window. Capped at the declared parallelism (4 + 4 maps: 8 x 24 < 246)
// it could not be reshaped and the job fell back to the user's request; the
// cap is now that of the last run the AM reported (6 + 6: 12 x 24 >= 246).
RealizedInstance grownJoin(const PeriodicJob& j, size_t i, int64_t k, uint64_t seed) {
  RealizedInstance r = everyFourthLongReduce(j, i, k, seed);
  for (auto& st : r.stages) st.task_durations.resize(6, st.task_durations.front());
  return r;
}

TEST(SimEngineTest, ReshapeCapIsTheLastReportedRunsParallelismNotTheDeclaredOne) {
  ExperimentOptions o = options(2, 4);
  o.realize = grownJoin;
  expectReshapedOwnReservation(hourlyJoin("grown", 4, 24, 12), o);
}

// The same off-grid window for slo-packing: the user's container for the
// median runtime (30 min, 30 steps) does not fit the window's 29 whole plan
// steps. The job is counted as too short for its window (before, the request
// went to the planner, which refused it, and the summary did not say why).
TEST(SimEngineTest, PackedUserNeedsWholePlanStepsOfAnOffGridWindow) {
  Workload w;
  w.periodic.push_back(job("offgrid", Millis(3600'000), Millis(30'000), Millis(30 * kMin + 30'000),
                           {stage(1, 30)}, 1));
  auto s = runExperiment(w, options(1, 4), only("slo-packing"));
  ASSERT_TRUE(s.isOk()) << s.status().message();
  const StrategyResult& r = s->strategies.at(0);
  EXPECT_EQ(r.extra.at("unplanned_window_too_short_jobs"), 1);
  EXPECT_EQ(r.extra.at("user_reservation_jobs"), 1);
}

// The paper's population: "ok" (10 min, due at 30 min) has its output read,
// so an SLO is inferred; nobody reads "unread"'s output, so it has none, and
// its 50 min task misses the 30 min deadline every hour. Over all jobs the
// baseline misses half its instances; over the jobs with an SLO, none.
TEST(SimEngineTest, SloJobFiguresCountOnlyJobsWithAnInferredSlo) {
  Workload w;
  w.periodic.push_back(
      job("ok", Millis(3600'000), Millis(0), Millis(30 * kMin), {stage(1, 10)}, 1));
  w.periodic.push_back(
      job("unread", Millis(3600'000), Millis(0), Millis(30 * kMin), {stage(1, 50)}, 1));
  w.periodic.back().output_path.clear();
  auto s = runExperiment(w, options(2, 2), only("baseline"));
  ASSERT_TRUE(s.isOk()) << s.status().message();
  const StrategyResult& r = s->strategies.at(0);
  EXPECT_EQ(r.periodic_instances, 48);
  EXPECT_DOUBLE_EQ(r.violation_rate, 0.5);
  EXPECT_EQ(r.extra.at("slo_jobs"), 1);
  EXPECT_EQ(r.extra.at("slo_jobs_instances"), 24);
  EXPECT_EQ(r.extra.at("slo_jobs_violations"), 0);
  EXPECT_DOUBLE_EQ(r.extra.at("slo_jobs_violation_rate"), 0);
}

// Worst case (Morpheus §9): only reserved capacity counts.
TEST(SimEngineTest, WorstCaseUsesReservedCapacityOnly) {
  std::vector<SimStage> stages{stage(4, 10), stage(2, 5, {0})};
  PeriodicJob j = job("w", Millis(86400'000), Millis(0), Millis(kMin * 60), stages, 2);
  RealizedInstance inst = exact(j, 0, 0, 1);
  auto two = [](TimePoint) -> int64_t { return 2; };
  // 4 tasks of 10 min on 2 units: 20 min, then 2 tasks of 5 min: 25 min.
  auto done = worstCaseCompletion(stages, inst, Resource(1024, 1), fromEpochMs(0),
                                  fromEpochMs(60 * kMin), Millis(kMin), two);
  ASSERT_TRUE(done.has_value());
  EXPECT_EQ(*done, fromEpochMs(25 * kMin));
  EXPECT_FALSE(worstCaseCompletion(stages, inst, Resource(1024, 1), fromEpochMs(0),
                                   fromEpochMs(24 * kMin), Millis(kMin), two)
                   .has_value());
  auto none = [](TimePoint) -> int64_t { return 0; };
  EXPECT_FALSE(worstCaseCompletion(stages, inst, Resource(1024, 1), fromEpochMs(0),
                                   fromEpochMs(60 * kMin), Millis(kMin), none)
                   .has_value());
}

// A job with no usable SLO (nobody reads its output) keeps under morpheus
// what its owner has under the baseline: the user's own request (10
// containers over [submit, deadline)), no DRA, the same outcomes.
TEST(SimEngineTest, JobWithoutSloKeepsTheUsersOwnProvisioning) {
  Workload w;
  w.periodic.push_back(
      job("unread", Millis(3600'000), Millis(0), Millis(30 * kMin), {stage(12, 10)}, 10));
  w.periodic.back().output_path.clear();
  auto s = runExperiment(w, options(2, 2), *parseStrategies({"baseline", "morpheus"}, {}, 0.5));
  ASSERT_TRUE(s.isOk()) << s.status().message();
  const StrategyResult& base = s->strategies.at(0);
  const StrategyResult& m = s->strategies.at(1);
  EXPECT_EQ(m.extra.at("unplanned_no_slo_jobs"), 1);
  EXPECT_EQ(m.extra.at("user_reservation_jobs"), 1);
  ASSERT_EQ(m.instances.size(), 24u);
  ASSERT_EQ(base.instances.size(), m.instances.size());
  for (size_t i = 0; i < m.instances.size(); i++) {
    EXPECT_DOUBLE_EQ(m.instances[i].reserved_container_s, 10.0 * 1800) << i;
    EXPECT_EQ(m.instances[i].dra_grants, 0) << i;
    EXPECT_EQ(m.instances[i].runtime, base.instances[i].runtime) << i;
    EXPECT_EQ(m.instances[i].met, base.instances[i].met) << i;
  }
}

// Instance k runs 10, 40 or 50 min (k mod 3): late for its 30 min deadline in
// two of three runs.
RealizedInstance lateTwoInThree(const PeriodicJob& j, size_t i, int64_t k, uint64_t seed) {
  RealizedInstance r = exact(j, i, k, seed);
  r.stages[0].task_durations[0] = Millis((k % 3 == 0 ? 10 : k % 3 == 1 ? 40 : 50) * kMin);
  return r;
}

// Morpheus §4 with a scheduled consumer: a job late in most training runs
// (its consumer's reads follow the late outputs, at 30, ~40 and ~50 min) still
// gets an SLO whose deadline is its consumer's scheduled start (30 min), from
// the consumer's run records in the training provenance.
TEST(SimEngineTest, LateJobGetsItsConsumersScheduledStartAsDeadline) {
  Workload w;
  w.periodic.push_back(
      job("late", Millis(3600'000), Millis(0), Millis(30 * kMin), {stage(1, 10)}, 1));
  ExperimentOptions o = options(1, 2);
  o.realize = lateTwoInThree;
  RunSetup setup;
  setup.from = fromEpochMs(0);
  setup.to = fromEpochMs(86400'000);
  setup.provisions.resize(1);
  setup.record_history = true;
  auto out = simulateRun(w, o, setup, "training", nullptr, nullptr);
  ASSERT_TRUE(out.isOk()) << out.status().message();
  int late = 0;
  for (const auto& r : out->history.runs[0]) late += r.end > r.submit + Millis(30 * kMin);
  EXPECT_EQ(late, 16);  // of 24
  ASSERT_EQ(out->history.consumer_runs.size(), 24u);
  EXPECT_EQ(out->history.consumer_runs[1].start, fromEpochMs(kMin * 90));
  auto v = inferTrainingSlos(w, out->history);
  ASSERT_TRUE(v[0].slo.has_value()) << v[0].reason;
  EXPECT_EQ(v[0].slo->deadline_offset, Millis(30 * kMin));
}

// The training history is windowed as morpheus-inference reads its store
// (ExperimentOptions::history_window): after 8 days of two 5-minute jobs
// (the second reads the first's output), a 1-day window keeps each job's
// runs of the last day only, and far fewer file events than were recorded;
// SLO inference on what is kept gives exactly the verdicts of inference on
// the whole history with only the window's runs (the daemon's view: every
// event, the runs within the window).
TEST(SimEngineTest, TrainingHistoryKeepsOnlyTheWindowInferenceReads) {
  constexpr int64_t kDay = 86'400'000;
  Workload w;
  w.periodic.push_back(job("a", Millis(5 * kMin), Millis(0), Millis(4 * kMin), {stage(1, 1)}, 1));
  PeriodicJob b = job("b", Millis(5 * kMin), Millis(2 * kMin), Millis(5 * kMin), {stage(1, 1)}, 1);
  b.input_path = "/out/a";
  b.input_available = Millis(0);  // its inputs are written before its submission
  w.periodic.push_back(b);
  auto train = [&](Millis window) {
    ExperimentOptions o = options(1, 9);
    o.history_window = window;
    RunSetup setup;
    setup.from = fromEpochMs(0);
    // Off the instances' grid: the first run in the window had its inputs
    // written before the window (T_inAvail from a write before the cutoff).
    setup.to = fromEpochMs(8 * kDay + 2 * kMin);
    setup.provisions.resize(2);
    setup.record_history = true;
    auto out = simulateRun(w, o, setup, "training", nullptr, nullptr);
    EXPECT_TRUE(out.isOk()) << out.status().message();
    return std::move(out->history);
  };
  const History all = train(Millis(100 * kDay));
  const History day = train(Millis(kDay));
  const auto per_day = static_cast<size_t>(kDay / (5 * kMin));  // 288 instances
  // The daemon's view: every event, each job's runs submitted within the day.
  History reference = all;
  for (auto& runs : reference.runs) {
    ASSERT_GT(runs.size(), 7 * per_day);
    runs.erase(
        std::remove_if(runs.begin(), runs.end(),
                       [&](const auto& r) { return r.submit < fromEpochMs(7 * kDay + 2 * kMin); }),
        runs.end());
  }
  for (size_t j = 0; j < 2; j++) {
    EXPECT_EQ(day.runs[j].size(), per_day) << j;
    EXPECT_EQ(day.runs[j].size(), reference.runs[j].size()) << j;
    EXPECT_EQ(day.runtimes[j].size(), per_day) << j;
    EXPECT_LT(day.own_events[j].size(), all.own_events[j].size() / 2) << j;
  }
  EXPECT_LT(day.path_events.size(), all.path_events.size() / 2);
  EXPECT_LT(day.consumer_runs.size(), all.consumer_runs.size() / 2);
  // What inference reads for each kept run is all there: its own events, the
  // last write by another job to its input before its start (T_inAvail), the
  // first read by another job of its output after it wrote it (T_outRead),
  // and that reader's run record when it is a consumer's.
  auto lastWrite = [](const History& h, const PeriodicJob& pj, const store::RunRecord& r) {
    std::optional<TimePoint> t;
    for (const auto& e : h.path_events) {
      if (e.path == pj.input_path && e.kind == store::FileAccess::kWrite && e.job != pj.key &&
          e.time <= r.start && (!t || e.time > *t))
        t = e.time;
    }
    return t;
  };
  auto firstRead = [](const History& h, const PeriodicJob& pj, const store::RunRecord& r) {
    std::optional<std::pair<TimePoint, std::string>> t;
    for (const auto& e : h.path_events) {
      if (e.path == pj.output_path && e.kind == store::FileAccess::kRead && e.job != pj.key &&
          e.time >= r.end && (!t || e.time < t->first))
        t = std::make_pair(e.time, e.job.value() + "/" + e.run.value());
    }
    return t;
  };
  auto consumerStart = [](const History& h, const std::string& who) {
    std::optional<TimePoint> t;
    for (const auto& c : h.consumer_runs) {
      if (c.job.value() + "/" + c.run.value() == who) t = c.start;
    }
    return t;
  };
  auto ownEvents = [](const History& h, size_t j, const store::RunRecord& r) {
    return std::count_if(h.own_events[j].begin(), h.own_events[j].end(),
                         [&](const auto& e) { return e.run == r.run; });
  };
  for (size_t j = 0; j < 2; j++) {
    for (const auto& r : day.runs[j]) {
      SCOPED_TRACE(r.run.value());
      EXPECT_EQ(ownEvents(day, j, r), ownEvents(all, j, r));
      EXPECT_EQ(lastWrite(day, w.periodic[j], r), lastWrite(all, w.periodic[j], r));
      auto read = firstRead(day, w.periodic[j], r);
      EXPECT_EQ(read, firstRead(all, w.periodic[j], r));
      if (read) {
        EXPECT_EQ(consumerStart(day, read->second), consumerStart(all, read->second));
      }
    }
  }
  auto got = inferTrainingSlos(w, day);
  auto want = inferTrainingSlos(w, reference);
  auto whole = inferTrainingSlos(w, all);
  for (size_t j = 0; j < 2; j++) {
    ASSERT_TRUE(want[j].slo.has_value()) << want[j].reason;
    ASSERT_TRUE(got[j].slo.has_value()) << got[j].reason;
    EXPECT_EQ(got[j].slo->period, want[j].slo->period) << j;
    EXPECT_EQ(got[j].slo->start_offset, want[j].slo->start_offset) << j;
    EXPECT_EQ(got[j].slo->deadline_offset, want[j].slo->deadline_offset) << j;
    EXPECT_EQ(got[j].slo->problematic, want[j].slo->problematic) << j;
    EXPECT_EQ(got[j].slo->outread_cv, want[j].slo->outread_cv) << j;
    EXPECT_EQ(got[j].slo->runs_used, static_cast<int>(per_day)) << j;
    ASSERT_TRUE(whole[j].slo.has_value()) << whole[j].reason;
    EXPECT_GT(whole[j].slo->runs_used, got[j].slo->runs_used) << j;
  }
  ExperimentOptions bad = options(1, 4);
  bad.history_window = Millis(0);
  auto refused = runExperiment(w, bad, only("baseline"));
  ASSERT_FALSE(refused.isOk());
  EXPECT_EQ(refused.status().message().rfind("history_window", 0), 0u)
      << refused.status().message();
}

// Noisy but seeded realisation for the determinism test.
RealizedInstance noisy(const PeriodicJob& j, size_t idx, int64_t k, uint64_t seed) {
  RealizedInstance r = exact(j, idx, k, seed);
  uint64_t x = seed * 0x9E3779B97F4A7C15ull + idx * 7919 + static_cast<uint64_t>(k) * 104729;
  for (auto& s : r.stages) {
    for (auto& d : s.task_durations) {
      x ^= x >> 12;
      x ^= x << 25;
      x ^= x >> 27;
      d = Millis(d.count() * static_cast<int64_t>(80 + (x * 0x2545F4914F6CDD1Dull) % 50) / 100);
    }
  }
  return r;
}

Workload mixed() {
  Workload w;
  w.periodic.push_back(job("a", Millis(3600'000), Millis(2 * kMin), Millis(40 * kMin),
                           {stage(6, 8), stage(3, 6, {0})}, 8));
  w.periodic.push_back(
      job("b", Millis(3600'000), Millis(10 * kMin), Millis(50 * kMin), {stage(10, 12)}, 3));
  w.periodic.push_back(
      job("c", Millis(4 * 3600'000), Millis(0), Millis(120 * kMin), {stage(8, 30)}, 16));
  for (int i = 0; i < 200; i++) {
    AdhocJob a;
    a.name = "q" + std::to_string(i);
    a.user = UserId(i % 2 ? "alice" : "bob");
    a.submit = Millis(static_cast<int64_t>(i) * 1728'000 / 2);  // spread over 4 days
    a.stages.push_back(stage(1 + i % 7, 3 + i % 11));
    w.adhoc.push_back(a);
  }
  return w;
}

// Every strategy of `a` and `b` has the same outcomes: counts, utilisation,
// ad-hoc tail, extra figures (preemptions, events) and each instance's
// runtime and reserved capacity.
void expectSameOutcomes(const SimSummary& a, const SimSummary& b) {
  ASSERT_EQ(a.strategies.size(), b.strategies.size());
  for (size_t i = 0; i < a.strategies.size(); i++) {
    const auto &x = a.strategies[i], &y = b.strategies[i];
    EXPECT_EQ(x.name, y.name);
    EXPECT_GT(x.periodic_instances, 0) << x.name;
    EXPECT_EQ(x.deadline_violations, y.deadline_violations) << x.name;
    EXPECT_EQ(x.worst_case_violations, y.worst_case_violations) << x.name;
    EXPECT_EQ(x.utilisation, y.utilisation) << x.name;
    EXPECT_EQ(x.adhoc_jct_p95_s, y.adhoc_jct_p95_s) << x.name;
    EXPECT_EQ(x.utilisation_series, y.utilisation_series) << x.name;
    EXPECT_EQ(x.extra, y.extra) << x.name;
    ASSERT_EQ(x.instances.size(), y.instances.size()) << x.name;
    for (size_t k = 0; k < x.instances.size(); k++) {
      EXPECT_EQ(x.instances[k].runtime, y.instances[k].runtime) << x.name << " " << k;
      EXPECT_EQ(x.instances[k].reserved_container_s, y.instances[k].reserved_container_s);
    }
  }
}

// Same seed and inputs: identical results for every strategy, in the same
// order and with the same summary.json bytes (the reasons jobs went
// unplanned included), whether the strategies and each learned strategy's
// skyline fits run one after the other or side by side on 3 threads; the
// progress then adds up every strategy's steps under one phase; threads < 1
// is refused naming the field.
TEST(SimEngineTest, SameSeedGivesIdenticalResultsOnAnyThreadCount) {
  Workload w = mixed();
  ExperimentOptions o = options(3, 4);
  o.realize = noisy;
  auto specs = parseStrategies({}, {0.1}, 0.5);
  ASSERT_TRUE(specs.isOk());
  auto one = runExperiment(w, o, *specs);
  o.threads = 3;
  std::mutex mu;
  int64_t last_done = 0, total = 0;
  auto progress = [&](const std::string& phase, int64_t done, int64_t t) {
    std::lock_guard<std::mutex> lk(mu);
    if (phase != "evaluation") return;
    last_done = std::max(last_done, done);
    total = t;
  };
  auto three = runExperiment(w, o, *specs, progress);
  ASSERT_TRUE(one.isOk()) << one.status().message();
  ASSERT_TRUE(three.isOk()) << three.status().message();
  ASSERT_EQ(three->strategies.size(), 8u);
  expectSameOutcomes(*one, *three);
  EXPECT_EQ(summaryJson(*one), summaryJson(*three));
  EXPECT_EQ(last_done, 8 * 2 * 1440) << "2 evaluation days of 1440 steps per strategy";
  EXPECT_EQ(total, last_done);
  o.threads = 0;
  auto bad = runExperiment(w, o, *specs);
  ASSERT_FALSE(bad.isOk());
  EXPECT_NE(bad.status().message().find("threads"), std::string::npos);
}

// The baseline's evaluation reads nothing of the training, so with 2
// threads it runs beside the training: its evaluation progress is reported
// before the training's last step (one evaluation day against nine training
// days), and every result is that of the strategies run one after the other
// after the training.
TEST(SimEngineTest, BaselineEvaluationRunsBesideTheTrainingWithTheSameResults) {
  Workload w = mixed();
  ExperimentOptions o = options(3, 10);
  o.train_fraction = 0.9;
  o.realize = noisy;
  auto specs = parseStrategies({"morpheus", "baseline"}, {}, 0.5);
  ASSERT_TRUE(specs.isOk());
  auto one = runExperiment(w, o, *specs);
  o.threads = 2;
  int64_t evaluation_before_training_ended = 0;
  int64_t training_done = 0, training_total = 0;
  auto progress = [&](const std::string& phase, int64_t done, int64_t total) {
    if (phase == "training") {
      training_done = done;
      training_total = total;
    } else if (training_done < training_total || training_total == 0) {
      evaluation_before_training_ended = std::max(evaluation_before_training_ended, done);
    }
  };
  auto two = runExperiment(w, o, *specs, progress);
  ASSERT_TRUE(one.isOk()) << one.status().message();
  ASSERT_TRUE(two.isOk()) << two.status().message();
  ASSERT_EQ(two->strategies.size(), 2u);
  EXPECT_EQ(two->strategies[0].name, "morpheus");
  EXPECT_EQ(two->strategies[1].name, "baseline");
  expectSameOutcomes(*one, *two);
  EXPECT_EQ(summaryJson(*one), summaryJson(*two));
  EXPECT_EQ(training_done, 9 * 1440);
  EXPECT_GT(evaluation_before_training_ended, 0)
      << "the baseline's evaluation waited for the training";
}

// A segmented training (ExperimentOptions::train_segments): 4 training days
// in 2 segments, the second with 1 warm-up day, on a cluster with room for
// everything (so a run's times do not depend on what ran before it). An
// hourly job, and a daily one whose instance submitted at 23:30 of day 1
// runs an hour, across the segments' boundary (day 2). The merged history
// holds every run of the training exactly once, in submit order: none from
// the warm-up day (recorded by the first segment), the straddling run whole
// (the first segment runs on until it ends); runs, runtimes, own events,
// path events and consumers' runs are those of one Sim over the 4 days.
// One segment is that Sim's history exactly.
TEST(SimEngineTest, SegmentedTrainingRecordsEveryRunOnceInTimeOrder) {
  constexpr int64_t kDay = 86'400'000;
  Workload w;
  w.periodic.push_back(
      job("hourly", Millis(3600'000), Millis(0), Millis(30 * kMin), {stage(1, 10)}, 1));
  w.periodic.push_back(job("daily", Millis(kDay), Millis(23 * 60 * kMin + 30 * kMin), Millis(kDay),
                           {stage(1, 60)}, 1));
  ExperimentOptions o = options(2, 8);
  ASSERT_EQ(trainDays(o), 4);
  RunSetup setup;
  setup.from = fromEpochMs(0);
  setup.to = fromEpochMs(4 * kDay);
  setup.record_history = true;
  setup.provisions.resize(2);
  auto one_sim = simulateRun(w, o, setup, "training", nullptr, nullptr);
  ASSERT_TRUE(one_sim.isOk()) << one_sim.status().message();
  const History& want = one_sim->history;

  o.train_segments = 2;
  o.train_warmup_days = 1;
  const std::vector<DaySegment> segs = trainSegments(o);
  ASSERT_EQ(segs.size(), 2u);
  EXPECT_EQ(segs[0].from, fromEpochMs(0));
  EXPECT_EQ(segs[0].record_until, fromEpochMs(2 * kDay));
  EXPECT_EQ(segs[0].to, fromEpochMs(3 * kDay));
  EXPECT_EQ(segs[1].from, fromEpochMs(kDay));
  EXPECT_EQ(segs[1].record_from, fromEpochMs(2 * kDay));
  EXPECT_EQ(segs[1].to, fromEpochMs(4 * kDay));
  for (int threads : {1, 2}) {
    SCOPED_TRACE(threads);
    o.threads = threads;
    bool interrupted = true;
    auto got = trainingHistory(w, o, &interrupted);
    ASSERT_TRUE(got.isOk()) << got.status().message();
    EXPECT_FALSE(interrupted);
    ASSERT_EQ(got->runs.size(), 2u);
    EXPECT_EQ(got->runs[0].size(), 96u) << "hourly: every instance of the 4 days once";
    EXPECT_EQ(got->runs[1].size(), 3u) << "daily: days 0-2 (day 3's ends after the training)";
    for (size_t j = 0; j < 2; j++) {
      for (size_t i = 1; i < got->runs[j].size(); i++) {
        EXPECT_LT(got->runs[j][i - 1].submit, got->runs[j][i].submit) << j << " " << i;
      }
      ASSERT_EQ(got->runs[j].size(), want.runs[j].size()) << j;
      for (size_t i = 0; i < want.runs[j].size(); i++) {
        EXPECT_EQ(got->runs[j][i].run, want.runs[j][i].run);
        EXPECT_EQ(got->runs[j][i].start, want.runs[j][i].start);
        EXPECT_EQ(got->runs[j][i].end, want.runs[j][i].end);
      }
      EXPECT_EQ(got->runtimes[j], want.runtimes[j]) << j;
      EXPECT_EQ(got->own_events[j].size(), want.own_events[j].size()) << j;
      EXPECT_EQ(got->last_stage_tasks[j], want.last_stage_tasks[j]) << j;
    }
    ASSERT_EQ(got->path_events.size(), want.path_events.size());
    for (size_t i = 0; i < want.path_events.size(); i++) {
      EXPECT_EQ(got->path_events[i].time, want.path_events[i].time) << i;
    }
    EXPECT_EQ(got->consumer_runs.size(), want.consumer_runs.size());
  }
  o.train_segments = 1;
  bool interrupted = true;
  auto whole = trainingHistory(w, o, &interrupted);
  ASSERT_TRUE(whole.isOk()) << whole.status().message();
  for (size_t j = 0; j < 2; j++) {
    ASSERT_EQ(whole->runs[j].size(), want.runs[j].size());
    for (size_t i = 0; i < want.runs[j].size(); i++) {
      EXPECT_EQ(whole->runs[j][i].run, want.runs[j][i].run);
      EXPECT_EQ(whole->runs[j][i].end, want.runs[j][i].end);
    }
    EXPECT_EQ(whole->own_events[j].size(), want.own_events[j].size());
  }
  EXPECT_EQ(whole->path_events.size(), want.path_events.size());
  o.train_segments = 5;
  auto refused = trainingHistory(w, o, &interrupted);
  ASSERT_FALSE(refused.isOk());
  EXPECT_EQ(refused.status().message().rfind("train_segments", 0), 0u)
      << refused.status().message();
}

// The merged history is windowed as one Sim's (ExperimentOptions::
// history_window): with a 1-day window over 4 training days in 2 segments,
// each job keeps the runs of the last day only, and the own events of the
// runs dropped go with them.
TEST(SimEngineTest, SegmentedTrainingKeepsOnlyTheWindowOfTheWholeTraining) {
  constexpr int64_t kDay = 86'400'000;
  Workload w;
  w.periodic.push_back(
      job("hourly", Millis(3600'000), Millis(0), Millis(30 * kMin), {stage(1, 10)}, 1));
  ExperimentOptions o = options(2, 8);
  o.history_window = Millis(kDay);
  o.train_segments = 2;
  bool interrupted = true;
  auto got = trainingHistory(w, o, &interrupted);
  ASSERT_TRUE(got.isOk()) << got.status().message();
  ASSERT_EQ(got->runs[0].size(), 24u);
  EXPECT_EQ(got->runs[0].front().submit, fromEpochMs(3 * kDay));
  EXPECT_EQ(got->runtimes[0].size(), 24u);
  EXPECT_EQ(got->own_events[0].size(), 48u) << "each kept run's read and write";
}

// Segmented training: the same results on any thread count (the segments
// and the strategies side by side or one after the other), and progress
// that reaches the segments' whole span once.
TEST(SimEngineTest, SegmentedTrainingGivesIdenticalResultsOnAnyThreadCount) {
  Workload w = mixed();
  ExperimentOptions o = options(3, 10);
  o.train_fraction = 0.9;
  o.realize = noisy;
  o.train_segments = 3;
  o.train_warmup_days = 1;
  auto specs = parseStrategies({"morpheus", "baseline"}, {}, 0.5);
  ASSERT_TRUE(specs.isOk());
  auto one = runExperiment(w, o, *specs);
  o.threads = 2;
  std::mutex mu;
  int64_t training_done = 0, training_total = 0;
  auto progress = [&](const std::string& phase, int64_t done, int64_t total) {
    std::lock_guard<std::mutex> lk(mu);
    if (phase != "training") return;
    EXPECT_GE(done, training_done);
    training_done = done;
    training_total = total;
  };
  auto two = runExperiment(w, o, *specs, progress);
  ASSERT_TRUE(one.isOk()) << one.status().message();
  ASSERT_TRUE(two.isOk()) << two.status().message();
  expectSameOutcomes(*one, *two);
  EXPECT_EQ(summaryJson(*one), summaryJson(*two));
  EXPECT_NE(summaryJson(*one).find("\"train_segments\": 3"), std::string::npos);
  // 9 days in 3 segments of 3: spans [0, 4), [2, 7), [5, 9) days.
  EXPECT_EQ(training_total, (4 + 5 + 4) * 1440);
  EXPECT_EQ(training_done, training_total);
}

// A segmented evaluation (ExperimentOptions::eval_segments) on a cluster
// with room for everything, where an instance's run does not depend on what
// ran before it: 4 evaluation days in 2 segments, the second with 1 warm-up
// day. Every instance of the evaluation is judged exactly once, the daily
// one submitted at 23:30 of day 5 (across the boundary) whole, and every
// figure is one Sim's but the events simulated (the warm-up's are extra):
// the instances, the plan steps' utilisation, the counted preemptions.
TEST(SimEngineTest, SegmentedEvaluationJudgesEveryInstanceOnceAsOneSim) {
  constexpr int64_t kDay = 86'400'000;
  Workload w;
  w.periodic.push_back(job("hourly", Millis(3600'000), Millis(5 * kMin), Millis(45 * kMin),
                           {stage(4, 10), stage(2, 5, {0})}, 6));
  w.periodic.push_back(job("daily", Millis(kDay), Millis(23 * 60 * kMin + 30 * kMin), Millis(kDay),
                           {stage(1, 60)}, 1));
  ExperimentOptions o = options(20, 8);
  ASSERT_EQ(trainDays(o), 4);
  auto specs = parseStrategies({"baseline", "morpheus"}, {}, 0.5);
  ASSERT_TRUE(specs.isOk());
  auto one = runExperiment(w, o, *specs);
  ASSERT_TRUE(one.isOk()) << one.status().message();

  o.eval_segments = 2;
  o.eval_warmup_days = 1;
  const std::vector<DaySegment> segs = evalSegments(o);
  ASSERT_EQ(segs.size(), 2u);
  EXPECT_EQ(segs[0].from, fromEpochMs(4 * kDay));
  EXPECT_EQ(segs[0].record_until, fromEpochMs(6 * kDay));
  EXPECT_EQ(segs[0].to, fromEpochMs(7 * kDay));
  EXPECT_EQ(segs[1].from, fromEpochMs(5 * kDay));
  EXPECT_EQ(segs[1].record_from, fromEpochMs(6 * kDay));
  EXPECT_EQ(segs[1].to, fromEpochMs(8 * kDay));
  for (int threads : {1, 2}) {
    SCOPED_TRACE(threads);
    o.threads = threads;
    auto two = runExperiment(w, o, *specs);
    ASSERT_TRUE(two.isOk()) << two.status().message();
    ASSERT_EQ(two->strategies.size(), one->strategies.size());
    for (size_t i = 0; i < one->strategies.size(); i++) {
      const StrategyResult &x = one->strategies[i], &y = two->strategies[i];
      SCOPED_TRACE(x.name);
      EXPECT_EQ(y.name, x.name);
      EXPECT_EQ(y.periodic_instances, 4 * 24 + 4) << "hourly and daily, 4 days";
      ASSERT_EQ(y.instances.size(), x.instances.size());
      for (size_t k = 0; k < x.instances.size(); k++) {
        EXPECT_EQ(y.instances[k].job, x.instances[k].job) << k;
        EXPECT_EQ(y.instances[k].index, x.instances[k].index) << k;
        EXPECT_EQ(y.instances[k].runtime, x.instances[k].runtime) << k;
        EXPECT_EQ(y.instances[k].met, x.instances[k].met) << k;
        EXPECT_EQ(y.instances[k].worst_case_met, x.instances[k].worst_case_met) << k;
        EXPECT_EQ(y.instances[k].reserved_container_s, x.instances[k].reserved_container_s) << k;
        EXPECT_EQ(y.instances[k].dra_grants, x.instances[k].dra_grants) << k;
      }
      EXPECT_EQ(y.deadline_violations, x.deadline_violations);
      EXPECT_EQ(y.worst_case_violations, x.worst_case_violations);
      EXPECT_EQ(y.utilisation_series, x.utilisation_series);
      EXPECT_EQ(y.utilisation, x.utilisation);
      std::map<std::string, double> xe = x.extra, ye = y.extra;
      EXPECT_GT(ye["events"], xe["events"]) << "the warm-up day is simulated too";
      xe.erase("events");
      ye.erase("events");
      EXPECT_EQ(ye, xe);
    }
    EXPECT_NE(summaryJson(*two).find("\"eval_segments\": 2"), std::string::npos);
  }
}

// A segmented evaluation on a contended cluster with the ad-hoc load: the
// same results on any thread count, progress that reaches every segment's
// span once, and bad segment counts refused naming the field (min-cluster
// evaluates each size whole).
TEST(SimEngineTest, SegmentedEvaluationGivesIdenticalResultsOnAnyThreadCount) {
  Workload w = mixed();
  ExperimentOptions o = options(3, 8);
  o.realize = noisy;
  o.eval_segments = 3;
  o.eval_warmup_days = 1;
  auto specs = parseStrategies({"morpheus", "baseline"}, {}, 0.5);
  ASSERT_TRUE(specs.isOk());
  auto one = runExperiment(w, o, *specs);
  o.threads = 2;
  std::mutex mu;
  int64_t evaluation_done = 0, evaluation_total = 0;
  auto progress = [&](const std::string& phase, int64_t done, int64_t total) {
    std::lock_guard<std::mutex> lk(mu);
    if (phase != "evaluation") return;
    EXPECT_GE(done, evaluation_done);
    evaluation_done = done;
    evaluation_total = total;
  };
  auto two = runExperiment(w, o, *specs, progress);
  ASSERT_TRUE(one.isOk()) << one.status().message();
  ASSERT_TRUE(two.isOk()) << two.status().message();
  expectSameOutcomes(*one, *two);
  EXPECT_EQ(summaryJson(*one), summaryJson(*two));
  // 4 evaluation days in 3 segments recording days 4-5, 6 and 7: spans
  // [4, 7), [5, 8) and [6, 8) days (the first two run on up to a day past
  // their recorded days), two strategies.
  EXPECT_EQ(evaluation_total, 2 * (3 + 3 + 2) * 1440);
  EXPECT_EQ(evaluation_done, evaluation_total);

  for (int64_t bad : {0, 5}) {
    o.eval_segments = bad;
    auto refused = runExperiment(w, o, *specs);
    ASSERT_FALSE(refused.isOk()) << bad;
    EXPECT_EQ(refused.status().message().rfind("eval_segments", 0), 0u)
        << refused.status().message();
  }
  o.eval_segments = 2;
  auto min = runMinCluster(w, o, *specs);
  ASSERT_FALSE(min.isOk());
  EXPECT_EQ(min.status().message().rfind("eval_segments", 0), 0u) << min.status().message();
}

// Scale: skipping offers of new asks to free nodes that cannot
// change anything (no more room than a node that just declined, no notice
// to withdraw) leaves every decision as offering each node does.
TEST(SimEngineTest, SkippedOffersChangeNoDecision) {
  GeneratorOptions g;
  g.periodic_jobs = 10;
  g.periodic_load = 0.25;
  g.days = 3;
  g.node_size = Resource(65536, 16);
  g.nodes = 20;
  auto w = generatePeriodic(g);
  ASSERT_TRUE(w.isOk()) << w.status().message();
  for (int i = 0; i < 3 * 24 * 60; i++) {  // borrowers: a 16-task job every minute
    AdhocJob a;
    a.name = "busy" + std::to_string(i);
    a.user = UserId(i % 3 == 0 ? "carol" : "dave");
    a.submit = Millis(static_cast<int64_t>(i) * kMin);
    a.stages.push_back(stage(16, 4 + i % 9));
    w->adhoc.push_back(a);
  }
  ExperimentOptions o = options(20, 3);
  o.node_size = g.node_size;
  o.realize = drawInstance;
  auto specs = parseStrategies({"baseline", "morpheus"}, {}, 0.5);
  ASSERT_TRUE(specs.isOk());
  auto skipping = runExperiment(*w, o, *specs);
  o.offer_every_free_node = true;
  auto every = runExperiment(*w, o, *specs);
  ASSERT_TRUE(skipping.isOk()) << skipping.status().message();
  ASSERT_TRUE(every.isOk());
  for (const auto& y : every->strategies) {
    EXPECT_GT(y.extra.at("preemption_notices"), 0) << y.name;  // notices are exercised
  }
  expectSameOutcomes(*skipping, *every);
}

// The min-cluster searches below: baseline and no-dra on the mixed workload
// with noisy runtimes, 4 days on `nodes` nodes.
struct NoDraSearch {
  explicit NoDraSearch(int64_t nodes) : o(options(nodes, 4)) { o.realize = noisy; }
  Result<SimSummary> run() const { return runMinCluster(w, o, specs); }
  Workload w = mixed();
  ExperimentOptions o;
  std::vector<StrategySpec> specs = *parseStrategies({"baseline", "no-dra"}, {}, 0.5);
};

// min-cluster: the baseline keeps --nodes; every other strategy's size, when
// found, is the smallest whose violation rate is at most the baseline's.
TEST(SimEngineTest, MinClusterFindsSmallestSizeAtBaselineRate) {
  NoDraSearch search(4);
  auto s = search.run();
  ASSERT_TRUE(s.isOk()) << s.status().message();
  ASSERT_EQ(s->strategies.size(), 2u);
  const StrategyResult& base = s->strategies[0];
  EXPECT_EQ(base.min_nodes_at_baseline_rate, std::optional<int64_t>(4));
  const StrategyResult& nd = s->strategies[1];
  ASSERT_TRUE(nd.min_nodes_at_baseline_rate.has_value());
  const int64_t n = *nd.min_nodes_at_baseline_rate;
  EXPECT_LE(nd.violation_rate, base.violation_rate + 1e-12);
  if (n > 1) {
    // One node fewer misses more often than the baseline.
    ExperimentOptions smaller = search.o;
    smaller.nodes = n - 1;
    auto r = runExperiment(search.w, smaller, {search.specs.at(1)});
    ASSERT_TRUE(r.isOk());
    EXPECT_GT(r->strategies[0].violation_rate, base.violation_rate);
  }
}

// min-cluster keeps every size its bisection evaluated: --nodes first, each
// with the rate it matched and whether it matched; the answer is the
// smallest matching size of the trail, one node fewer is in it and does not
// match, and the strategy's figures are those of the answer's run. --sizes
// and the baseline have no trail.
TEST(SimEngineTest, MinClusterKeepsEverySizeItSearched) {
  NoDraSearch search(8);
  auto s = search.run();
  ASSERT_TRUE(s.isOk()) << s.status().message();
  ASSERT_EQ(s->strategies.size(), 2u);
  const StrategyResult& base = s->strategies[0];
  EXPECT_TRUE(base.min_cluster_search.empty());
  const StrategyResult& nd = s->strategies[1];
  ASSERT_TRUE(nd.min_nodes_at_baseline_rate.has_value());
  const int64_t n = *nd.min_nodes_at_baseline_rate;
  ASSERT_LT(n, 8) << "the workload must let the search go below --nodes";
  const std::vector<SearchStep>& trail = nd.min_cluster_search;
  ASSERT_GE(trail.size(), 2u);
  EXPECT_EQ(trail.front().nodes, 8);
  std::set<int64_t> seen;
  for (const SearchStep& st : trail) {
    EXPECT_TRUE(seen.insert(st.nodes).second) << st.nodes << " evaluated twice";
    EXPECT_EQ(st.matches, st.rate <= base.violation_rate + 1e-12) << st.nodes;
    EXPECT_EQ(st.matches, st.nodes >= n) << st.nodes;  // bisection: consistent brackets
    if (st.nodes == n) {
      EXPECT_DOUBLE_EQ(st.rate, nd.violation_rate);
    }
  }
  EXPECT_TRUE(seen.count(n));
  if (n > 1) {
    EXPECT_TRUE(seen.count(n - 1)) << "the bracket below the answer";
  }
  // Bisection over [0, 8]: at most 1 + ceil(log2(8)) sizes.
  EXPECT_LE(trail.size(), 4u);

  search.o.min_cluster_sizes = {n};
  auto at = search.run();
  ASSERT_TRUE(at.isOk()) << at.status().message();
  ASSERT_EQ(at->strategies.size(), 2u);
  EXPECT_TRUE(at->strategies[1].min_cluster_search.empty());
  EXPECT_DOUBLE_EQ(at->strategies[1].violation_rate, nd.violation_rate);
}

// min-cluster on the paper's metric: the size found matches the baseline's
// worst-case rate, and one node fewer does not.
TEST(SimEngineTest, MinClusterOnWorstCaseMatchesTheWorstCaseRate) {
  // An hourly job that needs three of the four nodes for 20 of its 25
  // minutes, provisioned right: the baseline reserves it, so its worst case
  // is clean, and a plan needs three nodes to hold it.
  Workload w;
  w.periodic.push_back(
      job("wide", Millis(3600'000), Millis(30 * kMin), Millis(55 * kMin), {stage(24, 20)}, 24));
  ExperimentOptions o = options(4, 4);
  o.min_cluster_worst_case = true;
  auto specs = parseStrategies({"baseline", "no-dra"}, {}, 0.5);
  ASSERT_TRUE(specs.isOk());
  auto s = runMinCluster(w, o, *specs);
  ASSERT_TRUE(s.isOk()) << s.status().message();
  ASSERT_EQ(s->strategies.size(), 2u);
  const StrategyResult& base = s->strategies[0];
  const StrategyResult& nd = s->strategies[1];
  ASSERT_TRUE(nd.min_nodes_at_baseline_rate.has_value());
  const int64_t n = *nd.min_nodes_at_baseline_rate;
  EXPECT_LE(nd.worst_case_violation_rate, base.worst_case_violation_rate + 1e-12);
  EXPECT_EQ(nd.extra.at("min_cluster_worst_case"), 1);
  // The baseline's own line names the same metric (the report reads it).
  EXPECT_EQ(base.extra.at("min_cluster_worst_case"), 1);
  EXPECT_EQ(n, 3);
  ExperimentOptions smaller = o;
  smaller.nodes = n - 1;
  auto r = runExperiment(w, smaller, {specs->at(1)});
  ASSERT_TRUE(r.isOk());
  EXPECT_GT(r->strategies[0].worst_case_violation_rate, base.worst_case_violation_rate);
  o.min_cluster_worst_case = false;
  auto adhoc = runMinCluster(w, o, *specs);
  ASSERT_TRUE(adhoc.isOk());
  EXPECT_EQ(adhoc->strategies[1].extra.at("min_cluster_worst_case"), 0);
  EXPECT_EQ(adhoc->strategies[0].extra.at("min_cluster_worst_case"), 0);
}

// The two hourly jobs the min-cluster tests below search over: "wide"
// (24 containers from minute 30) and "narrow" (2 containers from minute 0).
Workload wideAndNarrow() {
  Workload w;
  w.periodic.push_back(
      job("wide", Millis(3600'000), Millis(30 * kMin), Millis(55 * kMin), {stage(24, 20)}, 24));
  w.periodic.push_back(
      job("narrow", Millis(3600'000), Millis(0), Millis(25 * kMin), {stage(12, 10)}, 2));
  return w;
}

// min-cluster matches the metric it is asked for; the two metrics give
// different sizes here, so a search that read one metric for the other (the
// target, the strategies' rates, or both) finds another size. "wide" needs
// three of the four nodes for 20 of its 25 minutes (as above); "narrow" is
// under-provisioned by its user (2 containers for 12 tasks of 10 minutes in
// 25): reserved as its user asks, it misses every instance in the worst case
// (six waves), while with the cluster's free capacity it runs all 12 at once
// and meets them. So the baseline's worst-case rate is 0.5 and its rate with
// the ad-hoc load 0. no-dra holds narrow's fitted skyline from one node on
// and wide's from three: worst case 0.5 from one node, every deadline met
// from three. slo-packing reserves the users' containers: narrow misses in
// the worst case at every size, wide from three nodes on is held, so its
// worst-case rate is 0.5 from three nodes (1 below) while it meets every
// deadline from three (0.5 below).
TEST(SimEngineTest, MinClusterMatchesTheMetricItIsAskedFor) {
  Workload w = wideAndNarrow();
  ExperimentOptions o = options(4, 4);
  o.min_cluster_retrain = true;  // the sizes above are those of each size's own training
  auto specs = parseStrategies({"baseline", "no-dra", "slo-packing"}, {}, 0.5);
  ASSERT_TRUE(specs.isOk());
  o.min_cluster_worst_case = true;
  auto worst = runMinCluster(w, o, *specs);
  o.min_cluster_worst_case = false;
  auto with_adhoc = runMinCluster(w, o, *specs);
  ASSERT_TRUE(worst.isOk()) << worst.status().message();
  ASSERT_TRUE(with_adhoc.isOk()) << with_adhoc.status().message();
  ASSERT_EQ(worst->strategies.size(), 3u);
  ASSERT_EQ(with_adhoc->strategies.size(), 3u);
  const StrategyResult& base = worst->strategies[0];
  EXPECT_DOUBLE_EQ(base.worst_case_violation_rate, 0.5);
  EXPECT_DOUBLE_EQ(base.violation_rate, 0.0);
  // The paper's metric: no-dra at one node, slo-packing at three.
  EXPECT_EQ(worst->strategies[1].min_nodes_at_baseline_rate, std::optional<int64_t>(1));
  EXPECT_EQ(worst->strategies[2].min_nodes_at_baseline_rate, std::optional<int64_t>(3));
  for (size_t i = 1; i < 3; i++) {
    EXPECT_LE(worst->strategies[i].worst_case_violation_rate,
              base.worst_case_violation_rate + 1e-12);
  }
  // With the ad-hoc load: both at three nodes.
  EXPECT_EQ(with_adhoc->strategies[1].min_nodes_at_baseline_rate, std::optional<int64_t>(3));
  EXPECT_EQ(with_adhoc->strategies[2].min_nodes_at_baseline_rate, std::optional<int64_t>(3));
  for (size_t i = 1; i < 3; i++) {
    EXPECT_LE(with_adhoc->strategies[i].violation_rate, base.violation_rate + 1e-12);
  }
  // One node fewer: slo-packing misses more on either metric.
  ExperimentOptions two = o;
  two.nodes = 2;
  auto r = runExperiment(w, two, {specs->at(2)});
  ASSERT_TRUE(r.isOk());
  EXPECT_GT(r->strategies[0].violation_rate, base.violation_rate);
  EXPECT_GT(r->strategies[0].worst_case_violation_rate, base.worst_case_violation_rate);
}

// min-cluster --sizes: no search, one result per given size, each saying
// whether it matches the baseline's rate. On the workload of the test above
// (worst case: no-dra matches from one node, slo-packing from three) the
// answers read off the sizes are the search's, the rows are those of plain
// runs at those sizes, and the summary is the same bytes on any thread
// count. Sizes outside [1, nodes] or given twice are refused naming the field.
TEST(SimEngineTest, MinClusterAtGivenSizesSaysWhichMatch) {
  Workload w = wideAndNarrow();
  ExperimentOptions o = options(4, 4);
  o.min_cluster_worst_case = true;
  o.min_cluster_retrain = true;  // each size trained anew: a row is a plain run at its size
  o.min_cluster_sizes = {3, 2};
  auto specs = parseStrategies({"baseline", "no-dra", "slo-packing"}, {}, 0.5);
  ASSERT_TRUE(specs.isOk());
  auto s = runMinCluster(w, o, *specs);
  ASSERT_TRUE(s.isOk()) << s.status().message();
  ASSERT_EQ(s->strategies.size(), 5u);
  EXPECT_EQ(s->strategies[0].name, "baseline");
  EXPECT_EQ(s->strategies[0].min_nodes_at_baseline_rate, std::optional<int64_t>(4));
  const std::vector<std::pair<std::string, int>> rows = {
      {"no-dra@2", 1}, {"no-dra@3", 1}, {"slo-packing@2", 0}, {"slo-packing@3", 1}};
  for (size_t i = 0; i < rows.size(); i++) {
    const StrategyResult& r = s->strategies[i + 1];
    EXPECT_EQ(r.name, rows[i].first);
    EXPECT_FALSE(r.min_nodes_at_baseline_rate.has_value()) << r.name;
    EXPECT_EQ(r.extra.at("matches_baseline_rate"), rows[i].second) << r.name;
    EXPECT_EQ(r.extra.at("min_cluster_worst_case"), 1) << r.name;
  }
  EXPECT_EQ(s->strategies[1].extra.at("nodes"), 2);
  EXPECT_EQ(s->strategies[4].extra.at("nodes"), 3);
  // slo-packing@2's row is a plain run at two nodes.
  ExperimentOptions two = o;
  two.nodes = 2;
  two.min_cluster_sizes.clear();
  auto r = runExperiment(w, two, {specs->at(2)});
  ASSERT_TRUE(r.isOk());
  EXPECT_EQ(s->strategies[3].worst_case_violations, r->strategies[0].worst_case_violations);
  EXPECT_EQ(s->strategies[3].deadline_violations, r->strategies[0].deadline_violations);
  EXPECT_GT(s->strategies[3].worst_case_violation_rate, s->strategies[0].worst_case_violation_rate);
  // Rates as the search reads them: with the ad-hoc load both match at three.
  o.min_cluster_worst_case = false;
  o.min_cluster_sizes = {2, 3};
  auto adhoc = runMinCluster(w, o, *specs);
  ASSERT_TRUE(adhoc.isOk());
  ASSERT_EQ(adhoc->strategies.size(), 5u);
  EXPECT_EQ(adhoc->strategies[1].extra.at("matches_baseline_rate"), 0);  // no-dra@2
  EXPECT_EQ(adhoc->strategies[2].extra.at("matches_baseline_rate"), 1);  // no-dra@3
  EXPECT_EQ(adhoc->strategies[4].extra.at("matches_baseline_rate"), 1);  // slo-packing@3
  o.threads = 3;
  auto three = runMinCluster(w, o, *specs);
  ASSERT_TRUE(three.isOk());
  EXPECT_EQ(summaryJson(*adhoc), summaryJson(*three));

  for (const std::vector<int64_t>& bad :
       {std::vector<int64_t>{0}, std::vector<int64_t>{5}, std::vector<int64_t>{2, 3, 2}}) {
    o.min_cluster_sizes = bad;
    auto refused = runMinCluster(w, o, *specs);
    ASSERT_FALSE(refused.isOk());
    EXPECT_NE(refused.status().message().find("min_cluster_sizes"), std::string::npos)
        << refused.status().message();
  }
}

// By default every size plans from the one training at --nodes: the SLOs
// and skylines a size's run uses are those of the cluster as it is, so a
// row at --nodes is the plain run there and a smaller size keeps every SLO
// the full-size training gave. Trained anew at each size (retrain), the
// training on the small cluster is what the inference sees.
TEST(SimEngineTest, MinClusterPlansEverySizeFromTheTrainingAtNodes) {
  Workload w = wideAndNarrow();
  ExperimentOptions o = options(4, 4);
  o.min_cluster_sizes = {1, 4};
  auto specs = parseStrategies({"baseline", "morpheus"}, {}, 0.5);
  ASSERT_TRUE(specs.isOk());
  auto kept = runMinCluster(w, o, *specs);
  ASSERT_TRUE(kept.isOk()) << kept.status().message();
  ASSERT_EQ(kept->strategies.size(), 3u);
  const StrategyResult& at1 = kept->strategies[1];
  const StrategyResult& at4 = kept->strategies[2];
  EXPECT_EQ(at1.name, "morpheus@1");
  EXPECT_EQ(at1.extra.at("min_cluster_retrain"), 0);
  ExperimentOptions four = o;
  four.min_cluster_sizes.clear();
  auto plain = runExperiment(w, four, {specs->at(1)});
  ASSERT_TRUE(plain.isOk());
  EXPECT_EQ(at4.worst_case_violations, plain->strategies[0].worst_case_violations);
  EXPECT_EQ(at4.deadline_violations, plain->strategies[0].deadline_violations);
  EXPECT_EQ(at1.extra.at("slo_jobs"), plain->strategies[0].extra.at("slo_jobs"));
  o.min_cluster_retrain = true;
  auto retrained = runMinCluster(w, o, *specs);
  ASSERT_TRUE(retrained.isOk());
  EXPECT_EQ(retrained->strategies[1].extra.at("min_cluster_retrain"), 1);
  // On one node one of the two jobs starves in that training: no SLO.
  EXPECT_EQ(at1.extra.at("slo_jobs"), 2);
  EXPECT_EQ(retrained->strategies[1].extra.at("slo_jobs"), 1);
  EXPECT_EQ(summaryJson(*kept).find("\"min_cluster_retrain\": 1"), std::string::npos);
}

// min-cluster's searches run side by side (--threads): the strategies share
// the trainings per size and GLPK runs on one thread at a time; the summary
// is the same bytes as one search after another.
TEST(SimEngineTest, MinClusterGivesIdenticalResultsOnAnyThreadCount) {
  Workload w = mixed();
  ExperimentOptions o = options(4, 4);
  o.realize = noisy;
  auto specs = parseStrategies({"baseline", "no-dra", "morpheus", "greedy-planner"}, {}, 0.5);
  ASSERT_TRUE(specs.isOk());
  auto one = runMinCluster(w, o, *specs);
  o.threads = 3;
  auto three = runMinCluster(w, o, *specs);
  ASSERT_TRUE(one.isOk()) << one.status().message();
  ASSERT_TRUE(three.isOk()) << three.status().message();
  ASSERT_EQ(three->strategies.size(), 4u);
  for (const auto& r : three->strategies) EXPECT_TRUE(r.min_nodes_at_baseline_rate) << r.name;
  EXPECT_EQ(summaryJson(*one), summaryJson(*three));
}

// Bad inputs: one error naming the field.
TEST(SimEngineTest, BadInputsNameTheField) {
  auto unknown = parseStrategies({"morpheus", "fastest"}, {}, 0.5);
  ASSERT_FALSE(unknown.isOk());
  EXPECT_NE(unknown.status().message().find("strategy"), std::string::npos);
  EXPECT_NE(unknown.status().message().find("fastest"), std::string::npos);
  EXPECT_FALSE(parseStrategies({"baseline", "baseline"}, {}, 0.5).isOk());
  EXPECT_FALSE(parseAlphaList("0.1,x").isOk());
  EXPECT_FALSE(parseStrategies({}, {1.5}, 0.5).isOk());

  Workload w;
  w.periodic.push_back(job("a", Millis(3600'000), Millis(0), Millis(kMin * 30), {stage(1, 1)}, 1));
  auto zero = runExperiment(w, options(0, 4), only("baseline"));
  ASSERT_FALSE(zero.isOk());
  EXPECT_EQ(zero.status().message().rfind("nodes", 0), 0u) << zero.status().message();
  ExperimentOptions big = options(1, 4);
  big.node_size = Resource(512, 1);
  auto too_big = runExperiment(w, big, only("baseline"));
  ASSERT_FALSE(too_big.isOk());
  EXPECT_NE(too_big.status().message().find("workload.periodic[0].stages[0].task_resource"),
            std::string::npos);
}

}  // namespace
}  // namespace morpheus::sim

namespace morpheus::sim {
namespace {

std::atomic<bool> g_stop_at_submit{false};

// `exact`, and the stop flag goes up as the instance is drawn (at its submit).
RealizedInstance exactThenStop(const PeriodicJob& j, size_t i, int64_t k, uint64_t seed) {
  g_stop_at_submit.store(true);
  return exact(j, i, k, seed);
}

// The stop flag is honoured at the next simulated instant, not at the next
// plan step: a job of two 10-second tasks submitted 10 s into the first minute
// and stopped there processes no event after its submission.
TEST(SimEngineTest, StopIsHonouredAtTheNextInstantNotTheNextPlanStep) {
  g_stop_at_submit.store(false);
  Workload w;
  PeriodicJob j = job("quick", Millis(86400'000), Millis(10'000), Millis(5 * kMin), {}, 1);
  SimStage s = stage(1, 1);
  s.task_duration = Millis(10'000);
  j.stages = {s, s};
  j.stages[1].depends_on = {0};
  w.periodic.push_back(j);
  ExperimentOptions o = options(1, 2);
  o.realize = exactThenStop;
  RunSetup setup;
  setup.from = fromEpochMs(0);
  setup.to = fromEpochMs(86400'000);
  setup.provisions.resize(1);
  auto out = simulateRun(w, o, setup, "test", nullptr, &g_stop_at_submit);
  ASSERT_TRUE(out.isOk()) << out.status().message();
  EXPECT_TRUE(out->interrupted);
  // The plan step at 0 and the submission at 10 s; the old polling went on to
  // both task ends (20 s, 30 s) and the plan step at 60 s.
  EXPECT_EQ(out->events, 2);
}

}  // namespace
}  // namespace morpheus::sim
