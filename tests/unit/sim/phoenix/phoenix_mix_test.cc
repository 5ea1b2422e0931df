// The trace-shaped job mixes and Table II's constraint kinds of the Phoenix
// experiment: the generated jobs have the published shape (long-job share,
// task-seconds in long jobs, cutoff), the offered load, more than half the
// tasks constrained, node attributes at the kinds' shares; calibration files
// and the calibration search; a small end-to-end run of each mix.
#include "sim/phoenix/phoenix_mixes.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <memory>

#include "scheduler/policies/phoenix_policy.h"
#include "sim/phoenix/eagle_sim.h"
#include "sim/phoenix/phoenix_sim.h"

namespace morpheus::sim {
namespace {

PhoenixSimOptions traceOptions(PhoenixMix mix, int32_t nodes, int64_t minutes, uint64_t seed) {
  PhoenixSimOptions o;
  o.mix = mix;
  o.nodes = nodes;
  o.arrivals = Millis(minutes * 60 * 1000);
  o.load = 0.9;
  o.kinds = tableTwoKinds();
  o.short_partition = traceMixShape(mix).short_partition;
  o.seed = seed;
  return o;
}

// Over a 10,000-vcore, 12 h workload each mix has its trace's share of long
// jobs and of task-seconds in long jobs (Hawk Table 1), short jobs below the
// cutoff and long ones above it, and offers the requested load.
TEST(PhoenixMixTest, TraceMixesHaveThePublishedShape) {
  for (PhoenixMix mix : {PhoenixMix::kGoogle, PhoenixMix::kYahoo, PhoenixMix::kCloudera}) {
    const TraceMixShape& m = traceMixShape(mix);
    PhoenixSimOptions o = traceOptions(mix, 625, 720, 1);
    ASSERT_TRUE(validatePhoenixOptions(o).isOk());
    const auto jobs = makePhoenixJobs(o, fromEpochMs(0));
    ASSERT_GT(jobs.size(), 5000u) << m.name;
    double long_jobs = 0, long_work = 0, work = 0;
    for (size_t j = 0; j < jobs.size(); j++) {
      const PhoenixJob& job = jobs[j];
      double w = 0;
      for (int32_t k = 0; k < job.tasks; k++)
        w += static_cast<double>(phoenixTaskRunTime(o.seed, j, k, job.duration).count()) / 1000;
      work += w;
      const double d = static_cast<double>(job.duration.count()) / 1000;
      if (job.is_short) {
        EXPECT_LE(d, m.cutoff_s) << m.name;
        EXPECT_LE(job.tasks, m.short_tasks_max) << m.name;
      } else {
        EXPECT_GE(d, m.cutoff_s - 0.001) << m.name;
        long_jobs++;
        long_work += w;
      }
    }
    const double n = static_cast<double>(jobs.size());
    EXPECT_NEAR(long_jobs / n, m.long_job_share, 0.15 * m.long_job_share) << m.name;
    EXPECT_NEAR(long_work / work, m.long_task_seconds, 0.03) << m.name;
    const double offered = work / (625.0 * 16 * 720 * 60);
    EXPECT_NEAR(offered, 0.9, 0.09) << m.name;
    EXPECT_GT(m.long_tasks_lo, 0) << m.name;
    EXPECT_GT(m.long_tasks_hi, m.long_tasks_lo) << m.name;
  }
}

// Table II's kinds at their default job shares constrain more than half of
// the tasks (the paper's setting); each kind's jobs and nodes come at its
// shares; a short_partition_first kind is on every short-partition node.
TEST(PhoenixMixTest, KindsConstrainMoreThanHalfTheTasksAtTheirShares) {
  PhoenixSimOptions o = traceOptions(PhoenixMix::kGoogle, 625, 720, 2);
  o.kinds[0].node_share = 0.1;
  o.kinds[8].node_share = 0.05;
  ASSERT_TRUE(o.kinds[8].short_partition_first);
  const auto jobs = makePhoenixJobs(o, fromEpochMs(0));
  double tasks = 0, constrained = 0;
  std::vector<double> per_kind(o.kinds.size(), 0);
  for (const PhoenixJob& j : jobs) {
    tasks += j.tasks;
    if (!j.constraints.empty()) constrained += j.tasks;
    if (j.kind >= 0) {
      per_kind[static_cast<size_t>(j.kind)]++;
      ASSERT_EQ(j.constraints.size(), 1u);
      EXPECT_EQ(j.constraints[0].key, o.kinds[static_cast<size_t>(j.kind)].name);
    } else {
      EXPECT_TRUE(j.constraints.empty());
    }
  }
  EXPECT_GT(constrained / tasks, 0.5);
  for (size_t k = 0; k < o.kinds.size(); k++) {
    EXPECT_NEAR(per_kind[k] / static_cast<double>(jobs.size()), o.kinds[k].job_share, 0.015)
        << o.kinds[k].name;
  }
  double isa = 0, general = 0, min_disks_general = 0;
  for (int32_t i = 0; i < o.nodes; i++) {
    const auto a = phoenixNodeAttributes(o, i);
    ASSERT_EQ(a.size(), o.kinds.size());
    if (a.at("isa") == "yes") isa++;
    if (inShortPartition(i, o.short_partition)) {
      EXPECT_EQ(a.at("min_disks"), "yes") << "node " << i;
    } else {
      general++;
      if (a.at("min_disks") == "yes") min_disks_general++;
    }
  }
  EXPECT_NEAR(isa / o.nodes, 0.1, 0.04);
  EXPECT_NEAR(min_disks_general / general, 0.05, 0.03);
}

// The calibration search moves each node share the right way: on a model
// where a kind's slowdown falls with its share (or, short_partition_first,
// rises towards 1), a dozen steps land within 3% of every target.
TEST(PhoenixMixTest, NodeShareStepsConvergeOnAMonotoneModel) {
  std::vector<ConstraintKind> kinds = tableTwoKinds();
  std::vector<NodeShareBracket> brackets(kinds.size());
  for (size_t k = 0; k < kinds.size(); k++)
    kinds[k].node_share = std::sqrt(brackets[k].lo * brackets[k].hi);
  auto model = [](const ConstraintKind& k) {
    return k.short_partition_first ? 0.8 + 0.2 * k.node_share : 1 + 0.15 / k.node_share;
  };
  for (int step = 0; step < 14; step++) {
    std::vector<double> measured;
    for (const auto& k : kinds) measured.push_back(model(k));
    stepNodeShares(kinds, measured, brackets);
  }
  for (const auto& k : kinds) {
    EXPECT_NEAR(model(k) / k.target_slowdown, 1.0, 0.03) << k.name << " at " << k.node_share;
  }
}

// Calibration files: read back what phoenix-calibrate writes; a file of
// another mix, a missing field or bad shares are INVALID_ARGUMENT naming the
// flag and the file.
TEST(PhoenixMixTest, CalibrationFilesAreReadOrRejectedByName) {
  const std::string path = ::testing::TempDir() + "phoenix_calibration_test.json";
  auto write = [&path](const std::string& text) { std::ofstream(path, std::ios::trunc) << text; };
  write(R"({"mix": "yahoo", "kinds": [
      {"name": "isa", "target_slowdown": 2.03, "job_share": 0.3, "node_share": 0.12},
      {"name": "min_disks", "target_slowdown": 0.91, "job_share": 0.3, "node_share": 0.4,
       "short_partition_first": true}]})");
  auto k = readPhoenixCalibration(path, PhoenixMix::kYahoo, "--calibration");
  ASSERT_TRUE(k.isOk()) << k.status().toString();
  ASSERT_EQ(k->size(), 2u);
  EXPECT_DOUBLE_EQ((*k)[0].node_share, 0.12);
  EXPECT_TRUE((*k)[1].short_partition_first);

  auto other = readPhoenixCalibration(path, PhoenixMix::kGoogle, "--calibration");
  ASSERT_FALSE(other.isOk());
  EXPECT_NE(other.status().message().find("--calibration"), std::string::npos);
  EXPECT_NE(other.status().message().find("google"), std::string::npos);

  write(R"({"mix": "yahoo", "kinds": [{"name": "isa", "job_share": 0.3, "node_share": 0.1}]})");
  auto missing = readPhoenixCalibration(path, PhoenixMix::kYahoo, "--calibration");
  ASSERT_FALSE(missing.isOk());
  EXPECT_NE(missing.status().message().find("target_slowdown"), std::string::npos);

  write(R"({"mix": "yahoo", "kinds": [
      {"name": "isa", "target_slowdown": 2, "job_share": 0.7, "node_share": 0.1},
      {"name": "kernel", "target_slowdown": 2, "job_share": 0.7, "node_share": 0.1}]})");
  auto over = readPhoenixCalibration(path, PhoenixMix::kYahoo, "--calibration");
  ASSERT_FALSE(over.isOk());
  EXPECT_NE(over.status().message().find("sum to more than 1"), std::string::npos);

  write(R"({"mix": "yahoo", "kinds": [
      {"name": "isa", "target_slowdown": 2, "job_share": 0.1, "node_share": 0}]})");
  auto zero = readPhoenixCalibration(path, PhoenixMix::kYahoo, "--calibration");
  ASSERT_FALSE(zero.isOk());
  EXPECT_NE(zero.status().message().find("kinds[0].node_share"), std::string::npos);

  write("not json");
  EXPECT_FALSE(readPhoenixCalibration(path, PhoenixMix::kYahoo, "--calibration").isOk());
  std::remove(path.c_str());
  EXPECT_FALSE(readPhoenixCalibration(path, PhoenixMix::kYahoo, "--calibration").isOk());

  PhoenixSimOptions o = traceOptions(PhoenixMix::kGoogle, 10, 10, 1);
  o.kinds.clear();
  auto r = validatePhoenixOptions(o);
  ASSERT_FALSE(r.isOk());
  EXPECT_NE(r.message().find("kinds"), std::string::npos);
}

// A small run of each mix through Eagle-C, Phoenix and the floor: every job
// finished or was turned away, the floor is under both, constrained short
// jobs of every kind are measured, and event skipping changed nothing that
// the floor's exact equality on an idle cluster would catch.
TEST(PhoenixMixTest, SmallRunsOfEachMixAccountForEveryJob) {
  for (PhoenixMix mix : {PhoenixMix::kGoogle, PhoenixMix::kYahoo, PhoenixMix::kCloudera}) {
    PhoenixSimOptions o = traceOptions(mix, 40, 240, 3);
    EagleOptions eo;
    eo.short_partition = o.short_partition;
    auto e = runEagleSim(o, eo);
    auto p = runPhoenixSim(o, std::make_shared<sched::PhoenixOrderingPolicy>());
    auto f = runPhoenixFloor(o);
    ASSERT_TRUE(e.isOk()) << e.status().toString();
    ASSERT_TRUE(p.isOk()) << p.status().toString();
    ASSERT_TRUE(f.isOk());
    for (const PhoenixSimResult* r : {&*e, &*p}) {
      EXPECT_EQ(r->short_jobs.count + r->long_unconstrained.count + r->rejected, r->jobs)
          << r->policy;
      EXPECT_LE(f->short_jobs.p99, r->short_jobs.p99) << r->policy;
      EXPECT_LE(f->short_jobs.mean, r->short_jobs.mean) << r->policy;
      EXPECT_GT(r->constrained_task_share, 0.4) << r->policy;
      EXPECT_GT(r->unconstrained_short_mean_s, 0) << r->policy;
      for (size_t k = 0; k < o.kinds.size(); k++)
        EXPECT_GT(r->kind_short_count[k], 0) << r->policy << " " << o.kinds[k].name;
    }
  }
  // Idle: the scheduler core's event-skipping run equals the floor exactly.
  PhoenixSimOptions idle = traceOptions(PhoenixMix::kYahoo, 400, 600, 4);
  idle.load = 0.02;
  auto fi = runPhoenixFloor(idle);
  auto pi = runPhoenixSim(idle, std::make_shared<sched::PhoenixOrderingPolicy>());
  ASSERT_TRUE(fi.isOk() && pi.isOk());
  EXPECT_GT(fi->jobs, 50);
  EXPECT_EQ(fi->short_jobs.mean, pi->short_jobs.mean);
  EXPECT_EQ(fi->long_unconstrained.mean, pi->long_unconstrained.mean);
}

}  // namespace
}  // namespace morpheus::sim
