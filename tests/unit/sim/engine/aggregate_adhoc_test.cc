// The aggregate ad-hoc model: its capacity split (reservations first, max-min
// shares, no preemption of periodic containers) and, through the engine, a
// reserved job that meets its deadline under an ad-hoc flood, determinism
// and the refusals.
#include <gtest/gtest.h>

#include <algorithm>
#include <optional>

#include "sim/engine/aggregate_adhoc.h"
#include "sim/engine/engine.h"
#include "sim/engine/report.h"
#include "sim/engine/strategy.h"

namespace morpheus::sim {
namespace {

const Resource kCluster(8 * 8192, 64);  // 8 nodes of 8 GiB / 8 vcores
const Resource kTask(1024, 1);

AggregateInput oneTaskPool(int64_t demand) {
  AggregateInput in;
  in.capacity = kCluster;
  in.pools.push_back({"root.default", kTask, demand});
  return in;
}

TEST(AggregateAdhocTest, MaxMinSharesFillTheSmallestFirst) {
  EXPECT_EQ(maxMinShares({1, 10, 10}, 9), (std::vector<double>{1, 4, 4}));
  EXPECT_EQ(maxMinShares({1, 2}, 9), (std::vector<double>{1, 2}));
  EXPECT_EQ(maxMinShares({5, 5}, 0), (std::vector<double>{0, 0}));
  EXPECT_TRUE(maxMinShares({}, 3).empty());
}

// Alone, the ad-hoc load gets its demand, up to the cluster.
TEST(AggregateAdhocTest, AloneTheLoadGetsItsDemand) {
  EXPECT_EQ(aggregateAdhocShares(oneTaskPool(10)), (std::vector<int64_t>{10}));
  EXPECT_EQ(aggregateAdhocShares(oneTaskPool(100)), (std::vector<int64_t>{64}));
  EXPECT_EQ(aggregateAdhocShares(oneTaskPool(0)), (std::vector<int64_t>{0}));
}

// A reservation with demand takes its guarantee first (the preemption of
// ad-hoc work, as capacity); one without demand lends all of it.
TEST(AggregateAdhocTest, GuaranteesWithDemandComeFirstIdleOnesAreLent) {
  AggregateInput in = oneTaskPool(100);
  in.reservations.push_back({kTask * 40, Resource(), kTask * 40});
  EXPECT_EQ(aggregateAdhocShares(in), (std::vector<int64_t>{24}));
  in.reservations[0].pending = kTask * 10;  // needs only 10 of its 40
  EXPECT_EQ(aggregateAdhocShares(in), (std::vector<int64_t>{54}));
  in.reservations[0].pending = Resource();
  EXPECT_EQ(aggregateAdhocShares(in), (std::vector<int64_t>{64}));
}

// Unreserved periodic apps in another queue and a reservation borrowing
// beyond its guarantee share the rest with the ad-hoc queue, max-min.
TEST(AggregateAdhocTest, QueuesAndBorrowersShareTheRestMaxMin) {
  AggregateInput in = oneTaskPool(64);
  in.periodic.push_back({"root.prod", Resource(), kTask * 64});
  EXPECT_EQ(aggregateAdhocShares(in), (std::vector<int64_t>{32}));
  in.periodic.clear();
  in.reservations.push_back({kTask * 10, kTask * 10, kTask * 54});
  EXPECT_EQ(aggregateAdhocShares(in), (std::vector<int64_t>{27}));
  // Periodic apps in the ad-hoc queue itself split the queue's part with it.
  in.reservations.clear();
  in.periodic.push_back({"root.default", Resource(), kTask * 64});
  EXPECT_EQ(aggregateAdhocShares(in), (std::vector<int64_t>{32}));
}

// The ad-hoc load never takes what periodic containers hold (the scheduler
// preempts only for guarantees), nor what a guarantee still needs.
TEST(AggregateAdhocTest, NeverOverPeriodicContainersOrUnmetGuarantees) {
  AggregateInput in = oneTaskPool(64);
  in.periodic.push_back({"root.prod", kTask * 50, Resource()});
  EXPECT_EQ(aggregateAdhocShares(in), (std::vector<int64_t>{14}));
  in.periodic.clear();
  in.reservations.push_back({kTask * 30, kTask * 20, kTask * 5});  // 5 unmet within 30
  EXPECT_EQ(aggregateAdhocShares(in), (std::vector<int64_t>{39}));
}

// What a pool is owed (fair) is its max-min share, also when periodic
// containers hold that capacity now and it gets less (held).
TEST(AggregateAdhocTest, FairShareIsKeptWhenPeriodicContainersHoldIt) {
  AggregateInput in = oneTaskPool(64);
  in.periodic.push_back({"root.prod", kTask * 60, kTask * 40});
  const AggregateSplit split = aggregateAdhocSplit(in);
  EXPECT_EQ(split.held, (std::vector<int64_t>{4}));
  EXPECT_EQ(split.fair, (std::vector<int64_t>{32}));
  EXPECT_EQ(split.unmet, Resource());
  in.periodic.clear();
  in.reservations.push_back({kTask * 30, kTask * 20, kTask * 5});
  EXPECT_EQ(aggregateAdhocSplit(in).unmet, kTask * 5);
}

// Freed capacity serves the reservations' unmet need first, then the pools
// below their fair share up to it, in whole containers; the rest is left.
TEST(AggregateAdhocTest, RefillServesUnmetNeedThenPoolsBelowTheirShare) {
  const Resource big(2048, 2);
  const std::vector<Resource> shapes = {kTask, big};
  const std::vector<int64_t> fair = {4, 10};
  std::vector<int64_t> held = {1, 10};
  Resource unmet = kTask * 2;
  // 8 vcores freed: 2 for the unmet need, 3 to the first pool (to its
  // share), none to the second (at its share), 3 left to periodic apps.
  EXPECT_EQ(refillAggregate(kTask * 8, shapes, fair, held, unmet), kTask * 3);
  EXPECT_EQ(held, (std::vector<int64_t>{4, 10}));
  EXPECT_EQ(unmet, Resource());
  held = {4, 7};
  // 3 vcores: one container of the second pool's shape fits, not two.
  EXPECT_EQ(refillAggregate(kTask * 3, shapes, fair, held, unmet), big);
  EXPECT_EQ(held, (std::vector<int64_t>{4, 8}));
  // Nothing freed, nothing taken; negative room counts as none.
  EXPECT_EQ(refillAggregate(Resource(), shapes, fair, held, unmet), Resource());
  EXPECT_EQ(refillAggregate(Resource() - kTask, shapes, fair, held, unmet), Resource());
  EXPECT_EQ(held, (std::vector<int64_t>{4, 8}));
}

// ---- through the engine ----

constexpr int64_t kMin = 60'000;

SimStage stage(int64_t tasks, int64_t minutes) {
  SimStage s;
  s.name = "s";
  s.tasks = tasks;
  s.task_duration = Millis(minutes * kMin);
  s.task_resource = kTask;
  return s;
}

// An hourly job `key` of `stages`, submitted at minute 5 with its input
// ready, due `deadline_min` minutes into its hour, its owner asking for
// `user_containers` containers of kTask.
PeriodicJob hourlyJob(const std::string& key, std::vector<SimStage> stages, int64_t deadline_min,
                      int64_t user_containers) {
  PeriodicJob j;
  j.key = JobKey(key);
  j.owner = UserId("owner");
  j.period = Millis(3600'000);
  j.submit_offset = Millis(5 * kMin);
  j.input_available = j.submit_offset;
  j.deadline = Millis(deadline_min * kMin);
  j.stages = std::move(stages);
  j.input_path = "/in/" + key;
  j.output_path = "/out/" + key;
  j.user_containers = user_containers;
  j.user_container_resource = kTask;
  return j;
}

RealizedInstance exact(const PeriodicJob& j, size_t, int64_t k, uint64_t) {
  RealizedInstance r;
  r.index = k;
  r.submit = fromEpochMs(k * j.period.count() + j.submit_offset.count());
  r.input_available = r.submit;
  r.deadline = fromEpochMs(k * j.period.count() + j.deadline.count());
  for (const auto& s : j.stages) {
    r.stages.push_back(
        RealizedStage{std::vector<Millis>(static_cast<size_t>(s.tasks), s.task_duration)});
  }
  return r;
}

// Ad-hoc jobs of 16 six-minute tasks every 5 minutes for 4 days.
void addFlood(Workload& w) {
  for (int i = 0; i < 4 * 24 * 12; i++) {
    AdhocJob a;
    a.name = "flood" + std::to_string(i);
    a.user = UserId("adhoc");
    a.submit = Millis(static_cast<int64_t>(i) * 5 * kMin);
    a.stages = {stage(16, 6)};
    w.adhoc.push_back(a);
  }
}

// One hourly job needing 24 of the 32 vcores for 20 of its 30 minutes, and
// ad-hoc jobs of 16 six-minute tasks every 5 minutes: 19 vcores on average,
// more than the job leaves while it runs.
Workload flooded() {
  Workload w;
  w.periodic.push_back(hourlyJob("hourly", {stage(24, 20)}, 35, 24));
  addFlood(w);
  return w;
}

ExperimentOptions aggregateOptions() {
  ExperimentOptions o;
  o.nodes = 4;
  o.node_size = Resource(8192, 8);
  o.days = 4;
  o.train_fraction = 0.5;
  o.realize = exact;
  o.aggregate_adhoc_step = Millis(10'000);
  return o;
}

// Its reservation holds against the flood: every instance meets its deadline
// under morpheus and under the baseline (the user's request is admitted),
// the ad-hoc jobs run in what is left (the cluster is busy and they finish),
// and the same seed gives the same bytes on any thread count.
TEST(AggregateAdhocTest, ReservedJobMeetsItsDeadlinesUnderAnAdhocFlood) {
  const Workload w = flooded();
  ExperimentOptions o = aggregateOptions();
  auto specs = parseStrategies({"baseline", "morpheus"}, {}, 0.01);
  ASSERT_TRUE(specs.isOk());
  auto one = runExperiment(w, o, *specs);
  ASSERT_TRUE(one.isOk()) << one.status().message();
  for (const auto& r : one->strategies) {
    EXPECT_EQ(r.periodic_instances, 48) << r.name;
    EXPECT_EQ(r.deadline_violations, 0) << r.name;
    EXPECT_EQ(r.worst_case_violations, 0) << r.name;
    EXPECT_GT(r.utilisation, 0.7) << r.name;
    EXPECT_LT(r.extra.at("adhoc_unfinished"), 10) << r.name;
    EXPECT_GT(r.adhoc_jct_p95_s, 6 * 60.0) << r.name << ": the flood queues behind the job";
  }
  o.threads = 2;
  auto two = runExperiment(w, o, *specs);
  ASSERT_TRUE(two.isOk());
  EXPECT_EQ(summaryJson(*one), summaryJson(*two));
}

// An hourly job of 128 tasks of 61 s asking 64 containers (a request the
// plan cannot hold, so it runs unreserved under the baseline), and every
// hour, 5.5 minutes in, an ad-hoc job of 32 twenty-minute tasks.
Workload wavesBesideLongAdhocJobs() {
  Workload w;
  SimStage wave = stage(128, 1);
  wave.task_duration = Millis(61'000);
  // 64 containers: a request the plan cannot hold, so it runs unreserved.
  w.periodic.push_back(hourlyJob("hourly", {wave}, 45, 64));
  for (int h = 0; h < 4 * 24; h++) {
    AdhocJob a;
    a.name = "late" + std::to_string(h);
    a.user = UserId("adhoc");
    a.submit = Millis(static_cast<int64_t>(h) * 3600'000 + 5 * kMin + 30'000);
    a.stages = {stage(32, 20)};
    w.adhoc.push_back(a);
  }
  return w;
}

// The training's ad-hoc model is its own option. The job below runs
// unreserved in training beside long ad-hoc jobs; under the aggregate model
// the refill decides whether it gets 4 or 7 waves there (see
// CapacityFreedBetweenStepsGoesToTheLoadBelowItsShare), so what morpheus
// learns depends on the refill only when the training runs under that
// model. Naming the evaluation's model changes no byte; a step the model
// refuses is refused by the option's name.
TEST(AggregateAdhocTest, TheTrainingsAdhocModelIsItsOwnOption) {
  const Workload w = wavesBesideLongAdhocJobs();
  auto specs = parseStrategies({"morpheus"}, {}, 0.01);
  ASSERT_TRUE(specs.isOk());
  auto run = [&](std::optional<Millis> training_step, Millis step, bool refill) {
    ExperimentOptions o = aggregateOptions();
    o.aggregate_adhoc_step = step;
    o.aggregate_adhoc_refill = refill;
    o.training_aggregate_adhoc_step = training_step;
    auto r = runExperiment(w, o, *specs);
    EXPECT_TRUE(r.isOk()) << r.status().message();
    return r.isOk() ? summaryJson(*r) : std::string();
  };
  const Millis aggregate(10'000), task(0);
  // Evaluated under the task model: the refill can only act through a
  // training run under the aggregate model.
  EXPECT_EQ(run(std::nullopt, task, true), run(std::nullopt, task, false));
  EXPECT_NE(run(aggregate, task, true), run(aggregate, task, false));
  EXPECT_EQ(run(aggregate, aggregate, true), run(std::nullopt, aggregate, true));

  ExperimentOptions bad = aggregateOptions();
  bad.training_aggregate_adhoc_step = Millis(500);
  auto refused = runExperiment(w, bad, *specs);
  ASSERT_FALSE(refused.isOk());
  EXPECT_NE(refused.status().message().find("training_adhoc_model"), std::string::npos)
      << refused.status().message();
}

// An hourly job left unreserved whose tasks take 5 of a node's 8 vcores
// (one a node), beside ad-hoc jobs of 1-vcore tasks: the job's asks never
// fit the 3 vcores its tasks leave on a node, so that room is a hole only
// ad-hoc tasks fit. With the fill the pools take it between steps (the task
// model's scheduler gives such a hole to the ad-hoc queue): the ad-hoc jobs
// finish sooner, and the job, which could not use the holes, misses no more.
TEST(AggregateAdhocTest, HolesNoPeriodicAskFitsGoToTheAdhocLoad) {
  Workload w;
  SimStage wide = stage(8, 20);
  wide.task_resource = Resource(1024, 5);
  w.periodic.push_back(hourlyJob("wide", {wide}, 60, 64));
  for (int i = 0; i < 4 * 24 * 6; i++) {
    AdhocJob a;
    a.name = "narrow" + std::to_string(i);
    a.user = UserId("adhoc");
    a.submit = Millis(static_cast<int64_t>(i) * 10 * kMin);
    a.stages = {stage(40, 4)};
    w.adhoc.push_back(a);
  }
  auto specs = parseStrategies({"baseline"}, {}, 0.01);
  ASSERT_TRUE(specs.isOk());
  auto run = [&](bool fill, int threads) {
    ExperimentOptions o = aggregateOptions();
    o.aggregate_adhoc_fill = fill;
    o.threads = threads;
    auto r = runExperiment(w, o, *specs);
    EXPECT_TRUE(r.isOk()) << r.status().message();
    return r;
  };
  auto meanJct = [](const StrategyResult& r) {
    double sum = 0;
    for (const AdhocOutcome& a : r.adhoc) sum += static_cast<double>(a.completion.count());
    return r.adhoc.empty() ? 0.0 : sum / static_cast<double>(r.adhoc.size()) / 1000.0;
  };
  auto off = run(false, 1);
  auto on = run(true, 1);
  ASSERT_TRUE(off.isOk() && on.isOk());
  const StrategyResult& a = off->strategies[0];
  const StrategyResult& b = on->strategies[0];
  EXPECT_EQ(a.extra.at("unreserved_jobs"), 1);
  EXPECT_EQ(a.adhoc.size(), b.adhoc.size());
  EXPECT_LT(meanJct(b), 0.9 * meanJct(a)) << "fill off " << meanJct(a) << " s, on " << meanJct(b);
  EXPECT_LE(b.deadline_violations, a.deadline_violations);
  auto two = run(true, 2);
  ASSERT_TRUE(two.isOk());
  EXPECT_EQ(summaryJson(*on), summaryJson(*two));
}

// Without the reservation (a job left unreserved competes for its fair
// share), the flood makes it miss: the load is really there.
TEST(AggregateAdhocTest, UnreservedJobMissesUnderTheFlood) {
  Workload w = flooded();
  w.periodic[0].user_containers = 64;  // a request the plan cannot hold
  auto specs = parseStrategies({"baseline"}, {}, 0.01);
  auto r = runExperiment(w, aggregateOptions(), *specs);
  ASSERT_TRUE(r.isOk()) << r.status().message();
  EXPECT_EQ(r->strategies[0].extra.at("unreserved_jobs"), 1);
  EXPECT_EQ(r->strategies[0].worst_case_violations, 48);
  EXPECT_GT(r->strategies[0].deadline_violations, 24);
}

// An hourly job left unreserved takes the whole cluster (32 vcores) for
// its 128 tasks of 61 s before an ad-hoc job of 32 long tasks arrives. The
// ad-hoc queue's fair share is then half, held by the job's containers: as
// its tasks end between steps, the freed capacity goes to the ad-hoc load
// up to its share (the task model's DRF ordering serves the queue below its
// share first), so the job runs its other 96 tasks on 16 vcores (about
// 7 waves). Left to the periodic app (refill off), it keeps all 32 (4 waves).
TEST(AggregateAdhocTest, CapacityFreedBetweenStepsGoesToTheLoadBelowItsShare) {
  const Workload w = wavesBesideLongAdhocJobs();
  auto specs = parseStrategies({"baseline"}, {}, 0.01);
  ASSERT_TRUE(specs.isOk());
  auto runtimes = [&](bool refill) {
    ExperimentOptions o = aggregateOptions();
    o.aggregate_adhoc_refill = refill;
    auto r = runExperiment(w, o, *specs);
    EXPECT_TRUE(r.isOk()) << r.status().message();
    std::vector<int64_t> out;
    if (!r.isOk()) return out;
    EXPECT_EQ(r->strategies[0].extra.at("unreserved_jobs"), 1);
    for (const auto& i : r->strategies[0].instances) out.push_back(i.runtime.count() / 1000);
    std::sort(out.begin(), out.end());
    return out;
  };
  const std::vector<int64_t> shared = runtimes(true);
  ASSERT_EQ(shared.size(), 48u);
  EXPECT_GE(shared.front(), 7 * 61) << "refill on: 1 wave on 32 vcores, 6 on 16";
  EXPECT_LE(shared.back(), 8 * 61);
  const std::vector<int64_t> kept = runtimes(false);
  ASSERT_EQ(kept.size(), 48u);
  EXPECT_LE(kept.back(), 5 * 61) << "refill off: 4 waves on 32 vcores";
}

// A reserved job's second stage asks in the instant its first stage's
// tasks end, while an unreserved job holds the ad-hoc queue's share (so the
// freed capacity would refill the ad-hoc load): the guarantee is served
// first, and the second stage starts at once (2 x 61 s), not at the next
// step.
TEST(AggregateAdhocTest, RefillNeverDelaysAGuaranteeAskingInTheSameInstant) {
  Workload w;
  SimStage first = stage(16, 1);
  first.task_duration = Millis(61'000);
  SimStage second = first;
  second.depends_on = {0};
  w.periodic.push_back(hourlyJob("reserved", {first, second}, 35, 16));
  PeriodicJob greedy = hourlyJob("greedy", {stage(64, 50)}, 55, 64);  // refused: runs unreserved
  greedy.submit_offset = Millis(0);
  greedy.input_available = greedy.submit_offset;
  w.periodic.push_back(greedy);
  addFlood(w);
  auto specs = parseStrategies({"baseline"}, {}, 0.01);
  ASSERT_TRUE(specs.isOk());
  auto r = runExperiment(w, aggregateOptions(), *specs);
  ASSERT_TRUE(r.isOk()) << r.status().message();
  EXPECT_EQ(r->strategies[0].extra.at("unreserved_jobs"), 1);
  int reserved = 0;
  for (const auto& i : r->strategies[0].instances) {
    if (i.job != "reserved") continue;
    reserved++;
    EXPECT_EQ(i.runtime.count(), 2 * 61'000) << "instance " << i.index;
  }
  EXPECT_EQ(reserved, 48);
}

TEST(AggregateAdhocTest, RefusalsNameTheField) {
  ExperimentOptions o = aggregateOptions();
  o.fluid_adhoc_step = Millis(10'000);
  auto specs = parseStrategies({"baseline"}, {}, 0.01);
  auto r = runExperiment(flooded(), o, *specs);
  ASSERT_FALSE(r.isOk());
  EXPECT_NE(r.status().message().find("adhoc_model"), std::string::npos);
  o = aggregateOptions();
  o.aggregate_adhoc_step = Millis(500);
  r = runExperiment(flooded(), o, *specs);
  ASSERT_FALSE(r.isOk());
  EXPECT_NE(r.status().message().find("adhoc_step"), std::string::npos);
  o = aggregateOptions();
  o.adhoc_policy = "fifo";
  r = runExperiment(flooded(), o, *specs);
  ASSERT_FALSE(r.isOk());
  EXPECT_NE(r.status().message().find("adhoc_policy"), std::string::npos);
}

}  // namespace
}  // namespace morpheus::sim
