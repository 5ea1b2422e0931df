// Unit tests for the periodic-job generator and instance realisation of
// morpheus-sim (Morpheus OSDI'16 §2 Fig. 2a, 3, 9a).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <queue>
#include <sstream>

#include "sim/workloads/workload.h"

namespace morpheus {
namespace {

sim::GeneratorOptions options(int64_t jobs, int64_t nodes, int64_t days, uint64_t seed) {
  sim::GeneratorOptions o;
  o.periodic_jobs = jobs;
  o.nodes = nodes;
  o.days = days;
  o.seed = seed;
  o.node_size = Resource(32768, 8);
  o.periodic_load = 0.4;
  return o;
}

// Every field of a job as text, to compare workloads exactly.
std::string describe(const sim::PeriodicJob& j) {
  std::ostringstream s;
  s << j.key << ' ' << j.owner << ' ' << j.queue << ' ' << j.period.count() << ' '
    << j.submit_offset.count() << ' ' << j.duration_noise_cv << ' ' << j.straggler_probability
    << ' ' << j.straggler_factor << ' ' << j.failure_probability << ' ' << j.input_growth_per_day
    << ' ' << j.code_change_day << ' ' << j.code_change_factor << ' ' << j.input_available.count()
    << ' ' << j.deadline.count() << ' ' << j.input_path << ' ' << j.output_path << ' '
    << j.user_containers << ' ' << j.user_container_resource.toString();
  for (const auto& st : j.stages) {
    s << " [" << st.name << ' ' << st.tasks << ' ' << st.task_duration.count() << ' '
      << st.task_resource.toString();
    for (int d : st.depends_on) s << ' ' << d;
    s << ']';
  }
  return s.str();
}

std::string describe(const sim::RealizedInstance& r) {
  std::ostringstream s;
  s << r.index << ' ' << toEpochMs(r.submit) << ' ' << toEpochMs(r.input_available) << ' '
    << toEpochMs(r.deadline) << ' ' << r.fails;
  for (const auto& st : r.stages) {
    s << " |";
    for (auto d : st.task_durations) s << ' ' << d.count();
  }
  return s.str();
}

sim::PeriodicJob simpleJob() {
  sim::PeriodicJob j;
  j.key = JobKey("j");
  j.period = Millis(3600000);
  j.duration_noise_cv = 0;
  j.straggler_probability = 0;
  sim::SimStage st;
  st.name = "map";
  st.tasks = 10;
  st.task_duration = Millis(60000);
  st.task_resource = Resource(1024, 1);
  j.stages = {st};
  return j;
}

// The consumer is a scheduled job: it starts at the deadline whether the
// output is early or late, reads at its start or when a late output appears,
// and its read is an event of its own run; no output path, no consumer.
TEST(ConsumerRunTest, StartsAtTheDeadlineReadsWhenTheOutputExists) {
  sim::PeriodicJob job;
  job.key = JobKey("j");
  job.owner = UserId("u");
  job.output_path = "/out/j";
  sim::RealizedInstance inst;
  inst.index = 3;
  inst.deadline = fromEpochMs(5000);
  auto early = sim::consumerRun(job, inst, fromEpochMs(4000));
  ASSERT_TRUE(early.has_value());
  EXPECT_EQ(early->run.job, JobKey("consumer:/out/j"));
  EXPECT_EQ(early->run.run, RunId("consumer:/out/j#3"));
  EXPECT_EQ(early->run.submit, fromEpochMs(5000));
  EXPECT_EQ(early->run.start, fromEpochMs(5000));
  EXPECT_EQ(early->read.time, fromEpochMs(5000));
  EXPECT_EQ(early->read.run, early->run.run);
  EXPECT_EQ(early->read.kind, store::FileAccess::kRead);
  EXPECT_EQ(early->read.path, "/out/j");
  auto late = sim::consumerRun(job, inst, fromEpochMs(9000));
  ASSERT_TRUE(late.has_value());
  EXPECT_EQ(late->run.start, fromEpochMs(5000));
  EXPECT_EQ(late->read.time, fromEpochMs(9000));
  job.output_path.clear();
  EXPECT_FALSE(sim::consumerRun(job, inst, fromEpochMs(4000)).has_value());
}

// The same job, index, instance and seed always give the same draw, in any order; others differ.
TEST(DrawInstanceTest, DeterministicPerKeyAndOrderIndependent) {
  auto w = sim::generatePeriodic(options(20, 50, 2, 7));
  ASSERT_TRUE(w.isOk()) << w.status().toString();
  const auto& job = w->periodic[3];
  std::string k5 = describe(sim::drawInstance(job, 3, 5, 7));
  std::string k3 = describe(sim::drawInstance(job, 3, 3, 7));
  EXPECT_EQ(describe(sim::drawInstance(job, 3, 5, 7)), k5);
  EXPECT_EQ(describe(sim::drawInstance(job, 3, 3, 7)), k3);
  EXPECT_NE(k5, k3);
  EXPECT_NE(describe(sim::drawInstance(job, 3, 5, 8)), k5);
  EXPECT_NE(describe(sim::drawInstance(job, 4, 5, 7)), k5);
}

// Growth compounds per day, code changes scale durations from their day, p=1 stragglers and
// failures apply.
TEST(DrawInstanceTest, AppliesGrowthCodeChangeStragglersAndFailures) {
  sim::PeriodicJob j = simpleJob();
  j.period = Millis(86400000);
  j.input_growth_per_day = 0.1;
  j.code_change_day = 2;
  j.code_change_factor = 2.0;
  auto day1 = sim::drawInstance(j, 0, 1, 1);
  ASSERT_EQ(day1.stages[0].task_durations.size(), 11u);
  EXPECT_EQ(day1.stages[0].task_durations[0], Millis(60000));
  EXPECT_FALSE(day1.fails);
  auto day2 = sim::drawInstance(j, 0, 2, 1);
  ASSERT_EQ(day2.stages[0].task_durations.size(), 12u);  // round(10 * 1.1^2)
  EXPECT_EQ(day2.stages[0].task_durations[5], Millis(120000));
  EXPECT_EQ(toEpochMs(day2.submit), 2 * 86400000);
  j.input_growth_per_day = 0.1;
  j.code_change_day = -1;
  EXPECT_EQ(sim::drawInstance(j, 0, 3000, 1).stages[0].task_durations.size(), 10000u);  // 1000x cap
  j.straggler_probability = 1.0;
  j.failure_probability = 1.0;
  auto s = sim::drawInstance(j, 0, 0, 1);
  EXPECT_TRUE(s.fails);
  for (auto d : s.stages[0].task_durations) EXPECT_EQ(d, Millis(180000));
}

// Duration noise is lognormal with mean 1 and the job's coefficient of variation.
TEST(DrawInstanceTest, NoiseHasMeanOneAndGivenCv) {
  sim::PeriodicJob j = simpleJob();
  j.stages[0].tasks = 20000;
  j.duration_noise_cv = 0.2;
  auto r = sim::drawInstance(j, 0, 0, 3);
  double sum = 0, sq = 0;
  for (auto d : r.stages[0].task_durations) {
    double x = static_cast<double>(d.count()) / 60000.0;
    sum += x;
    sq += x * x;
  }
  double n = static_cast<double>(r.stages[0].task_durations.size());
  double mean = sum / n;
  double cv = std::sqrt(sq / n - mean * mean) / mean;
  EXPECT_NEAR(mean, 1.0, 0.01);
  EXPECT_NEAR(cv, 0.2, 0.01);
}

// Same options give an identical workload; another seed gives another one.
TEST(WorkloadGeneratorTest, SameSeedSameWorkload) {
  auto a = sim::generatePeriodic(options(200, 100, 5, 11));
  auto b = sim::generatePeriodic(options(200, 100, 5, 11));
  auto c = sim::generatePeriodic(options(200, 100, 5, 12));
  ASSERT_TRUE(a.isOk() && b.isOk() && c.isOk());
  ASSERT_EQ(a->periodic.size(), 200u);
  for (size_t i = 0; i < a->periodic.size(); i++) {
    ASSERT_EQ(describe(a->periodic[i]), describe(b->periodic[i])) << i;
  }
  EXPECT_NE(describe(a->periodic[0]), describe(c->periodic[0]));
}

double criticalPathMs(const sim::PeriodicJob& job, const sim::RealizedInstance& r) {
  std::vector<double> finish(job.stages.size(), 0);
  double end = 0;
  for (size_t s = 0; s < job.stages.size(); s++) {
    double start = 0;
    for (int d : job.stages[s].depends_on) start = std::max(start, finish[d]);
    const auto& t = r.stages[s].task_durations;
    finish[s] = start + static_cast<double>(std::max_element(t.begin(), t.end())->count());
    end = std::max(end, finish[s]);
  }
  return end;
}

// Runtime on the user's provisioning (Fig. 9a's "observed" runtime,
// workload_generator.cc): stages in order, each task on the earliest free of
// `slots` containers, not before its stage's dependencies finished.
double provisionedMs(const sim::PeriodicJob& job, const sim::RealizedInstance& r, int64_t slots) {
  std::priority_queue<int64_t, std::vector<int64_t>, std::greater<>> free_at;
  for (int64_t i = 0; i < slots; i++) free_at.push(0);
  std::vector<int64_t> finish(job.stages.size(), 0);
  int64_t end = 0;
  for (size_t s = 0; s < job.stages.size(); s++) {
    int64_t ready = 0;
    for (int d : job.stages[s].depends_on) ready = std::max(ready, finish[d]);
    for (Millis t : r.stages[s].task_durations) {
      const int64_t start = std::max(ready, free_at.top());
      free_at.pop();
      free_at.push(start + t.count());
      finish[s] = std::max(finish[s], start + t.count());
    }
    end = std::max(end, finish[s]);
  }
  return static_cast<double>(end);
}

// Average need: nominal container-ms / nominal critical path (workload_generator.cc).
double averageNeed(const sim::PeriodicJob& job) {
  double work = 0;
  std::vector<double> finish(job.stages.size(), 0);
  double end = 0;
  for (size_t s = 0; s < job.stages.size(); s++) {
    const auto& st = job.stages[s];
    work += static_cast<double>(st.tasks * st.task_duration.count());
    double start = 0;
    for (int d : st.depends_on) start = std::max(start, finish[d]);
    finish[s] = start + static_cast<double>(st.task_duration.count());
    end = std::max(end, finish[s]);
  }
  return work / end;
}

// Periods, submission clustering, provisioning (Fig. 2a) and slack (Fig. 9a) shares match the
// stated distributions.
TEST(WorkloadGeneratorTest, StatisticsMatchTraceFindings) {
  auto w = sim::generatePeriodic(options(2000, 2000, 7, 5));
  ASSERT_TRUE(w.isOk()) << w.status().toString();
  double n = static_cast<double>(w->periodic.size());
  int hourly = 0, daily = 0, early = 0, over = 0, over10 = 0, under = 0, loose = 0;
  int growing = 0, code_change = 0;
  double failure = 0;
  for (size_t i = 0; i < w->periodic.size(); i++) {
    const auto& j = w->periodic[i];
    hourly += j.period == Millis(3600000);
    daily += j.period == Millis(86400000);
    EXPECT_EQ(86400000 % j.period.count(), 0) << j.key;
    early += j.submit_offset.count() % 3600000 < 300000;
    EXPECT_GE(j.stages.size(), 2u);
    EXPECT_LE(j.stages.size(), 5u);
    for (const auto& st : j.stages) {
      for (int d : st.depends_on) EXPECT_LE(st.tasks, j.stages[d].tasks) << j.key;  // narrower
    }
    growing += j.input_growth_per_day > 0;
    code_change += j.code_change_day >= 0;
    failure += j.failure_probability;
    EXPECT_LE(j.input_available, j.submit_offset);
    EXPECT_LE(j.deadline - j.input_available, j.period);
    double ratio = static_cast<double>(j.user_containers) / averageNeed(j);
    over += ratio > 1.1;
    over10 += ratio > 10.0;
    under += ratio < 0.9;
    std::vector<double> runs;
    for (int64_t k = 0; k < 5; k++)
      runs.push_back(provisionedMs(j, sim::drawInstance(j, i, k, 5), j.user_containers));
    std::sort(runs.begin(), runs.end());
    loose += static_cast<double>((j.deadline - j.input_available).count()) >= 2 * runs[2];
  }
  EXPECT_NEAR(hourly / n, 0.6, 0.04);
  EXPECT_NEAR(daily / n, 0.3, 0.04);
  EXPECT_GE(early / n, 0.82);
  EXPECT_NEAR(over / n, 0.75, 0.05);
  EXPECT_NEAR(over10 / n, 0.20, 0.04);
  EXPECT_NEAR(under / n, 0.15, 0.04);
  EXPECT_NEAR(loose / n, 0.70, 0.05);
  EXPECT_NEAR(growing / n, 0.5, 0.05);
  EXPECT_NEAR(code_change / n, 0.1, 0.03);
  EXPECT_NEAR(failure / n, 0.015, 0.002);
}

// With unlimited capacity almost every instance can meet its deadline from its submission (the
// slack is measured from there), so no strategy starts from a floor of unmeetable deadlines.
TEST(WorkloadGeneratorTest, InstancesAreFeasibleWithUnlimitedCapacity) {
  auto o = options(300, 300, 3, 13);
  auto w = sim::generatePeriodic(o);
  ASSERT_TRUE(w.isOk());
  int64_t runs = 0, infeasible = 0;
  for (size_t i = 0; i < w->periodic.size(); i++) {
    const auto& j = w->periodic[i];
    for (int64_t k = 0; k * j.period.count() < o.days * 86400000; k++) {
      auto r = sim::drawInstance(j, i, k, o.seed);
      if (r.fails) continue;
      runs++;
      infeasible += toEpochMs(r.submit) + criticalPathMs(j, r) > toEpochMs(r.deadline);
    }
  }
  EXPECT_LT(static_cast<double>(infeasible) / static_cast<double>(runs), 0.01)
      << infeasible << " of " << runs;
}

// The realised periodic demand over the simulated days is periodic_load of the cluster.
TEST(WorkloadGeneratorTest, ScalesDemandToPeriodicLoad) {
  auto o = options(100, 100, 2, 9);
  auto w = sim::generatePeriodic(o);
  ASSERT_TRUE(w.isOk());
  const Resource capacity = o.node_size * o.nodes;
  const int64_t horizon = o.days * 86400000;
  double used = 0;  // cluster-share x ms
  for (size_t i = 0; i < w->periodic.size(); i++) {
    const auto& j = w->periodic[i];
    double share = j.stages[0].task_resource.dominantShare(capacity);
    for (int64_t k = 0; k * j.period.count() < horizon; k++) {
      auto r = sim::drawInstance(j, i, k, o.seed);
      for (const auto& st : r.stages) {
        for (auto d : st.task_durations) used += share * static_cast<double>(d.count());
      }
    }
  }
  EXPECT_NEAR(used / static_cast<double>(horizon), o.periodic_load, 0.04);
}

// Bad options are refused with the field named.
TEST(WorkloadGeneratorTest, RejectsBadOptionsNamingTheField) {
  auto expectField = [](sim::GeneratorOptions o, const std::string& field) {
    auto r = sim::generatePeriodic(o);
    ASSERT_FALSE(r.isOk()) << field;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(r.status().message().rfind(field + ":", 0), 0u) << r.status().message();
  };
  auto o = options(20, 5, 1, 1);
  auto bad = o;
  bad.periodic_jobs = -1;
  expectField(bad, "periodic_jobs");
  bad = o;
  bad.days = 0;
  expectField(bad, "days");
  bad = o;
  bad.nodes = 0;
  expectField(bad, "nodes");
  bad = o;
  bad.periodic_load = 1.5;
  expectField(bad, "periodic_load");
  bad = o;
  bad.node_size = Resource(0, 8);
  expectField(bad, "node_size");
  bad = options(3000, 2, 1, 1);  // one task per stage is already too much
  expectField(bad, "periodic_jobs");
  bad = options(5, 50, 1, 1);  // 5 jobs of at most a quarter of the cluster cannot average 40%
  expectField(bad, "periodic_load");
  EXPECT_TRUE(sim::generatePeriodic(o).isOk());
}

}  // namespace
}  // namespace morpheus
