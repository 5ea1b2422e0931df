// The fluid ad-hoc model (sim/engine/fluid_adhoc.h, --task-model fluid):
// hand-computed completion steps of FluidPool, and a simulated run
// in which the pool's app takes its containers through the real scheduler.
#include "sim/engine/fluid_adhoc.h"

#include <gtest/gtest.h>

#include "sim/engine/cluster_sim.h"
#include "sim/engine/engine.h"

namespace morpheus::sim {
namespace {

constexpr Millis kStep{10'000};

SimStage stage(int64_t tasks, int64_t seconds, std::vector<int> deps = {}) {
  SimStage s;
  s.name = "s";
  s.tasks = tasks;
  s.task_duration = Millis(seconds * 1000);
  s.task_resource = Resource(1024, 1);
  s.depends_on = std::move(deps);
  return s;
}

// Steps run with `held` containers each until job `index` finishes; the
// step count, or -1 after 1000 steps.
int stepsUntilDone(FluidPool& pool, int64_t index, int64_t held) {
  for (int k = 1; k <= 1000; k++) {
    for (const FluidFinished& f : pool.advance(fromEpochMs(k * kStep.count()), kStep, held)) {
      if (f.job == index) return k;
    }
  }
  return -1;
}

// A stage of n tasks of duration d takes d with n containers (never less:
// it demands no more than n) and n*d/c with c < n containers.
TEST(FluidPoolTest, StageTakesItsDurationOrItsWorkOverTheContainers) {
  FluidPool wide;
  wide.add(0, {stage(4, 30)});
  EXPECT_EQ(wide.demand(), 4);
  EXPECT_EQ(stepsUntilDone(wide, 0, 100), 3);  // 30 s although 100 containers are held
  FluidPool turnover;
  turnover.add(0, {stage(4, 30)});
  turnover.advance(fromEpochMs(10'000), kStep, 4);
  EXPECT_DOUBLE_EQ(turnover.lastCompletions(), 4.0 / 3.0);  // 40 task-s of 30 s tasks
  FluidPool narrow;
  narrow.add(0, {stage(4, 30)});
  EXPECT_EQ(stepsUntilDone(narrow, 0, 2), 6);  // 120 task-s on 2 containers
}

// A step on a time-weighted mean of 2.5 containers (the aggregate model's
// pools when their capacity changed inside the step) does 2.5 containers'
// work: 25 task-s of 10 s tasks.
TEST(FluidPoolTest, MeanCapacityDoesItsFractionalWork) {
  FluidPool pool;
  pool.add(0, {stage(10, 10)});
  EXPECT_TRUE(pool.advanceMean(fromEpochMs(10'000), kStep, 2.5).empty());
  EXPECT_DOUBLE_EQ(pool.lastCompletions(), 2.5);
  pool.advanceMean(fromEpochMs(20'000), kStep, -1.0);  // counts as none
  EXPECT_DOUBLE_EQ(pool.lastCompletions(), 0.0);
}

// Held containers go max-min fairly to the jobs: a job wanting 1 gets 1, the
// other the remaining 4 (100 task-s done in 3 steps: 40 + 40 + 20).
TEST(FluidPoolTest, HeldContainersAreSharedMaxMinFairly) {
  FluidPool pool;
  pool.add(0, {stage(1, 100)});
  pool.add(1, {stage(10, 10)});
  EXPECT_EQ(pool.demand(), 11);
  std::vector<int64_t> finished_at(2, -1);
  for (int k = 1; k <= 20; k++) {
    for (const FluidFinished& f : pool.advance(fromEpochMs(k * kStep.count()), kStep, 5)) {
      finished_at[static_cast<size_t>(f.job)] = k;
      EXPECT_EQ(f.end, fromEpochMs(k * kStep.count()));
    }
  }
  EXPECT_EQ(finished_at[1], 3);
  EXPECT_EQ(finished_at[0], 10);
  EXPECT_EQ(pool.live(), 0u);
}

// A dependent stage becomes ready only after its dependency's step, and the
// job ends at the step its last stage finished in.
TEST(FluidPoolTest, DependentStageStartsTheStepAfterItsDependency) {
  FluidPool pool;
  pool.add(7, {stage(2, 10), stage(1, 10, {0})});
  EXPECT_EQ(pool.demand(), 2);
  EXPECT_TRUE(pool.advance(fromEpochMs(10'000), kStep, 2).empty());
  EXPECT_EQ(pool.demand(), 1);  // the map stage is done, the reduce is ready
  auto done = pool.advance(fromEpochMs(20'000), kStep, 2);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].job, 7);
  EXPECT_TRUE(pool.unfinished().empty());
}

// With no containers nothing progresses; a job without work ends at once.
TEST(FluidPoolTest, NoContainersNoProgressAndEmptyJobEndsAtOnce) {
  FluidPool pool;
  pool.add(0, {stage(3, 10)});
  pool.add(1, {});
  auto done = pool.advance(fromEpochMs(10'000), kStep, 0);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].job, 1);
  EXPECT_EQ(pool.demand(), 3);
  EXPECT_EQ(pool.unfinished(), std::vector<int64_t>{0});
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

Workload adhocOnly(int jobs, int64_t tasks, int64_t seconds) {
  Workload w;
  for (int i = 0; i < jobs; i++) {
    AdhocJob a;
    a.name = "q" + std::to_string(i);
    a.user = UserId("u");
    a.submit = Millis(0);
    a.stages.push_back(stage(tasks, seconds));
    w.adhoc.push_back(a);
  }
  return w;
}

ExperimentOptions fluidOptions(int64_t nodes) {
  ExperimentOptions o;
  o.nodes = nodes;
  o.node_size = Resource(8192, 8);
  o.days = 2;
  o.realize = exact;
  o.fluid_adhoc_step = kStep;
  return o;
}

// Through the real scheduler: 2 nodes of 8 vcores hold 16 of the 4 jobs x 8
// tasks x 60 s the pool asks for, so the 1,920 task-s take 120 s: every job
// ends at the step at 120 s (the first step, at 10 s, asks; containers are
// granted in that instant and work from then on).
TEST(FluidSimTest, PoolAppGetsItsContainersFromTheScheduler) {
  const Workload w = adhocOnly(4, 8, 60);
  const ExperimentOptions o = fluidOptions(2);
  RunSetup setup;
  setup.from = fromEpochMs(0);
  setup.to = fromEpochMs(3600'000);
  auto out = simulateRun(w, o, setup, "test", nullptr, nullptr);
  ASSERT_TRUE(out.isOk()) << out.status().message();
  ASSERT_EQ(out->result.adhoc.size(), 4u);
  for (const AdhocOutcome& a : out->result.adhoc) EXPECT_EQ(a.completion, Millis(130'000)) << a.job;
}

// The fluid model refuses an ad-hoc policy it cannot follow and an ad-hoc
// job with two task resources, naming the field.
TEST(FluidSimTest, BadInputsNameTheField) {
  Workload w = adhocOnly(1, 2, 10);
  ExperimentOptions o = fluidOptions(1);
  o.adhoc_policy = "fifo";
  RunSetup setup;
  setup.from = fromEpochMs(0);
  setup.to = fromEpochMs(3600'000);
  auto bad_policy = simulateRun(w, o, setup, "test", nullptr, nullptr);
  ASSERT_FALSE(bad_policy.isOk());
  EXPECT_NE(bad_policy.status().message().find("adhoc_policy"), std::string::npos);
  o.adhoc_policy = "drf";
  w.adhoc[0].stages.push_back(stage(1, 10, {0}));
  w.adhoc[0].stages[1].task_resource = Resource(2048, 1);
  auto bad_shape = simulateRun(w, o, setup, "test", nullptr, nullptr);
  ASSERT_FALSE(bad_shape.isOk());
  EXPECT_NE(bad_shape.status().message().find("workload.adhoc[0].stages[1].task_resource"),
            std::string::npos);
}

}  // namespace
}  // namespace morpheus::sim

namespace morpheus::sim {
namespace {

// An unreserved periodic job (4 tasks x 60 s, due 5 min after its submit at
// 50 s) on one 8-vcore node that a fluid ad-hoc job (64 tasks x 100 s)
// holds: the pool hands back the containers of its ended tasks while the
// job waits, so the job gets its queue's share and meets its deadline, as in
// the task model where the ad-hoc tasks end at 100 s. Without the turnover
// the pool kept all 8 containers until its last wave (about 800 s).
TEST(FluidSimTest, WaitingJobGetsTheContainersOfEndedAdhocTasks) {
  Workload w = adhocOnly(1, 64, 100);
  PeriodicJob p;
  p.key = JobKey("p");
  p.owner = UserId("owner-p");
  p.period = Millis(86400'000);
  p.submit_offset = Millis(50'000);
  p.input_available = p.submit_offset;
  p.deadline = Millis(350'000);
  p.stages = {stage(4, 60)};
  p.user_containers = 4;
  p.user_container_resource = Resource(1024, 1);
  w.periodic.push_back(p);
  const ExperimentOptions o = fluidOptions(1);
  RunSetup setup;
  setup.from = fromEpochMs(0);
  setup.to = fromEpochMs(3600'000);
  setup.provisions.resize(1);  // kNone: the job runs in its ad-hoc queue
  auto out = simulateRun(w, o, setup, "test", nullptr, nullptr);
  ASSERT_TRUE(out.isOk()) << out.status().message();
  ASSERT_EQ(out->result.instances.size(), 1u);
  EXPECT_TRUE(out->result.instances[0].met)
      << "runtime " << out->result.instances[0].runtime.count() << " ms";
  ASSERT_EQ(out->result.adhoc.size(), 1u);
  EXPECT_GT(out->result.adhoc[0].completion, Millis(800'000));  // it shared the node
}

}  // namespace
}  // namespace morpheus::sim
