// Unit tests for the Carbyne evaluation's query DAGs (carbyne_dags.h): the
// TPC-DS-like mix matches the figures it is fitted to (OSDI'16 §5.1: at
// least 7 stages at the median, 23 at the 95th percentile, a critical path
// of 5 stages at the median, several disjoint paths and barriers, jobs of
// minutes to tens of minutes), stages come in breadth-first order, every
// task has six resources and fits a server, arrivals, determinism, errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "sim/workloads/carbyne_dags.h"

namespace morpheus {
namespace {

double quantile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  const size_t i = static_cast<size_t>(std::ceil(q * static_cast<double>(v.size()))) - 1;
  return v[std::min(i, v.size() - 1)];
}

std::vector<sim::AdhocJob> jobs(sim::DagMix mix, uint64_t seed, Millis gap = Millis(0)) {
  sim::DagJobsOptions o;
  o.mix = mix;
  o.seed = seed;
  o.mean_interarrival = gap;
  auto r = sim::generateDagJobs(o);
  EXPECT_TRUE(r.isOk()) << r.status().message();
  return r.isOk() ? *r : std::vector<sim::AdhocJob>{};
}

TEST(CarbyneDagsTest, TpcDsMixMatchesThePapersStatistics) {
  for (uint64_t seed : {1, 2, 3, 4, 5}) {
    std::vector<double> stages, cp, sources, barriers, joins, alone;
    for (const auto& j : jobs(sim::DagMix::kTpcDs, seed)) {
      const sim::DagShape s = sim::dagShape(j);
      stages.push_back(static_cast<double>(s.stages));
      cp.push_back(static_cast<double>(s.critical_path));
      sources.push_back(static_cast<double>(s.sources));
      barriers.push_back(static_cast<double>(s.barriers));
      joins.push_back(static_cast<double>(s.joins));
      alone.push_back(s.alone_s);
    }
    ASSERT_EQ(stages.size(), 250u);
    SCOPED_TRACE("seed " + std::to_string(seed));
    EXPECT_GE(quantile(stages, 0.5), 7);
    EXPECT_LE(quantile(stages, 0.5), 8);
    EXPECT_GE(quantile(stages, 0.95), 19);
    EXPECT_LE(quantile(stages, 0.95), 27);
    EXPECT_EQ(quantile(cp, 0.5), 5);
    EXPECT_GE(quantile(sources, 0.5), 2);   // several disjoint paths
    EXPECT_GE(quantile(barriers, 0.5), 4);  // multiple barriers
    EXPECT_GE(quantile(joins, 0.5), 1);
    // Minutes to tens of minutes alone on the cluster.
    EXPECT_GE(quantile(alone, 0.05), 120);
    EXPECT_LE(quantile(alone, 0.95), 3600);
  }
}

TEST(CarbyneDagsTest, MixesDifferInSize) {
  auto median = [](sim::DagMix m) {
    std::vector<double> v;
    for (const auto& j : jobs(m, 7)) v.push_back(static_cast<double>(sim::dagShape(j).stages));
    return quantile(v, 0.5);
  };
  EXPECT_LT(median(sim::DagMix::kTpcH), median(sim::DagMix::kTpcDs));
  EXPECT_GE(median(sim::DagMix::kBigBench), median(sim::DagMix::kTpcDs));
}

TEST(CarbyneDagsTest, StagesAreBreadthFirstAndTasksHaveSixResourcesThatFitAServer) {
  const Resource server = sim::carbyneServer();
  for (auto mix : {sim::DagMix::kTpcDs, sim::DagMix::kTpcH, sim::DagMix::kBigBench}) {
    for (const auto& j : jobs(mix, 3)) {
      std::vector<int64_t> depth;
      for (size_t i = 0; i < j.stages.size(); i++) {
        const sim::SimStage& s = j.stages[i];
        int64_t d = 0;
        for (int p : s.depends_on) {
          ASSERT_GE(p, 0);
          ASSERT_LT(static_cast<size_t>(p), i) << j.name;  // parents first
          d = std::max(d, depth[static_cast<size_t>(p)] + 1);
        }
        if (i > 0) {
          EXPECT_GE(d, depth.back()) << j.name << " stage " << i;
        }
        depth.push_back(d);
        EXPECT_GE(s.tasks, 1);
        EXPECT_GT(s.task_duration, Millis(0));
        EXPECT_TRUE(s.task_resource.fitsIn(server)) << s.task_resource.toString();
        EXPECT_GT(s.task_resource.memoryMib(), 0);
        EXPECT_GT(s.task_resource.vcores(), 0);
        for (const char* x : {sim::kDiskIn, sim::kDiskOut, sim::kNetIn, sim::kNetOut}) {
          EXPECT_GT(s.task_resource.extendedValue(x), 0) << x;
        }
      }
      // One sink: the final aggregation every path leads to.
      std::vector<bool> has_child(j.stages.size(), false);
      for (const auto& s : j.stages) {
        for (int p : s.depends_on) has_child[static_cast<size_t>(p)] = true;
      }
      EXPECT_EQ(std::count(has_child.begin(), has_child.end(), false), 1) << j.name;
    }
  }
}

TEST(CarbyneDagsTest, OfflineAllAtZeroOnlinePoissonAtTheMeanGap) {
  for (const auto& j : jobs(sim::DagMix::kTpcDs, 1)) EXPECT_EQ(j.submit, Millis(0));
  const auto on = jobs(sim::DagMix::kTpcDs, 1, Millis(20000));
  EXPECT_EQ(on.front().submit, Millis(0));
  for (size_t i = 1; i < on.size(); i++) EXPECT_LE(on[i - 1].submit, on[i].submit);
  const double mean_gap =
      static_cast<double>(on.back().submit.count()) / static_cast<double>(on.size() - 1);
  EXPECT_GT(mean_gap, 16000);  // 249 exponential gaps: within ~3 standard errors
  EXPECT_LT(mean_gap, 24000);
}

TEST(CarbyneDagsTest, DeterministicInTheSeed) {
  const auto a = jobs(sim::DagMix::kBigBench, 9), b = jobs(sim::DagMix::kBigBench, 9);
  const auto c = jobs(sim::DagMix::kBigBench, 10);
  ASSERT_EQ(a.size(), b.size());
  bool differs = false;
  for (size_t i = 0; i < a.size(); i++) {
    ASSERT_EQ(a[i].stages.size(), b[i].stages.size());
    for (size_t k = 0; k < a[i].stages.size(); k++) {
      EXPECT_EQ(a[i].stages[k].tasks, b[i].stages[k].tasks);
      EXPECT_EQ(a[i].stages[k].task_resource, b[i].stages[k].task_resource);
    }
    differs = differs || a[i].stages.size() != c[i].stages.size();
  }
  EXPECT_TRUE(differs);
}

// The size factor (DagJobsOptions::size_sigma, size_scale) scales each
// job's scans and leaves the plan and its durations as drawn; its spread
// widens the work per job around the mean size_scale.
TEST(CarbyneDagsTest, SizeSpreadScalesScansAndKeepsPlansAndDurations) {
  sim::DagJobsOptions base;
  base.seed = 4;
  base.jobs = 2000;
  sim::DagJobsOptions wide = base;
  wide.size_sigma = 1.6;
  wide.size_scale = 0.7;
  auto a = sim::generateDagJobs(base);
  auto b = sim::generateDagJobs(wide);
  ASSERT_TRUE(a.isOk() && b.isOk());
  std::vector<double> ratio;
  double scan_a = 0, scan_b = 0;
  for (size_t i = 0; i < a->size(); i++) {
    const auto& ja = (*a)[i];
    const auto& jb = (*b)[i];
    ASSERT_EQ(ja.stages.size(), jb.stages.size()) << ja.name;
    EXPECT_EQ(ja.submit, jb.submit);
    double sa = 0, sb = 0;
    for (size_t k = 0; k < ja.stages.size(); k++) {
      EXPECT_EQ(ja.stages[k].depends_on, jb.stages[k].depends_on);
      EXPECT_EQ(ja.stages[k].task_duration, jb.stages[k].task_duration);
      EXPECT_EQ(ja.stages[k].task_resource, jb.stages[k].task_resource);
      EXPECT_GE(jb.stages[k].tasks, 1);
      if (ja.stages[k].depends_on.empty()) {
        sa += static_cast<double>(ja.stages[k].tasks);
        sb += static_cast<double>(jb.stages[k].tasks);
      }
    }
    ratio.push_back(sb / sa);
    scan_a += sa;
    scan_b += sb;
  }
  // Mean 0.7 (rounding to whole tasks, at least one, moves it a little).
  EXPECT_NEAR(scan_b / scan_a, 0.7, 0.1);
  // Log-normal with sigma 1.6: the median factor is 0.7 exp(-1.28) = 0.19,
  // the 95th percentile 0.7 exp(-1.28 + 1.645 x 1.6) = 2.7.
  EXPECT_NEAR(quantile(ratio, 0.5), 0.19, 0.05);
  EXPECT_NEAR(quantile(ratio, 0.95), 2.7, 0.6);
  // The defaults keep every job as drawn.
  sim::DagJobsOptions same = base;
  same.size_sigma = 0;
  same.size_scale = 1;
  auto c = sim::generateDagJobs(same);
  ASSERT_TRUE(c.isOk());
  for (size_t i = 0; i < a->size(); i++) {
    for (size_t k = 0; k < (*a)[i].stages.size(); k++) {
      EXPECT_EQ((*a)[i].stages[k].tasks, (*c)[i].stages[k].tasks);
    }
  }
}

TEST(CarbyneDagsTest, BadOptionsNameTheOption) {
  sim::DagJobsOptions o;
  o.jobs = 0;
  auto r = sim::generateDagJobs(o);
  ASSERT_FALSE(r.isOk());
  EXPECT_NE(r.status().message().find("jobs"), std::string::npos);
  o.jobs = 5;
  o.mean_interarrival = Millis(-1);
  r = sim::generateDagJobs(o);
  ASSERT_FALSE(r.isOk());
  EXPECT_NE(r.status().message().find("mean_interarrival"), std::string::npos);
  o.mean_interarrival = Millis(0);
  o.size_sigma = -0.5;
  r = sim::generateDagJobs(o);
  ASSERT_FALSE(r.isOk());
  EXPECT_NE(r.status().message().find("size_sigma"), std::string::npos);
  o.size_sigma = 1;
  o.size_scale = 0;
  r = sim::generateDagJobs(o);
  ASSERT_FALSE(r.isOk());
  EXPECT_NE(r.status().message().find("size_scale"), std::string::npos);
  auto m = sim::parseDagMix("tpc-ds", "--mix");
  ASSERT_FALSE(m.isOk());
  EXPECT_NE(m.status().message().find("--mix"), std::string::npos);
}

}  // namespace
}  // namespace morpheus
