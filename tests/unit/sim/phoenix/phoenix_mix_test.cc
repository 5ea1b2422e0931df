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
  // Exact counts per pool: round(share x n) of the short partition's n
  // nodes and of the general ones, on every seed.
  for (uint64_t seed : {2, 3}) {
    o.seed = seed;
    const auto nodes = phoenixClusterAttributes(o);
    ASSERT_EQ(nodes.size(), static_cast<size_t>(o.nodes));
    int64_t short_nodes = 0, isa_short = 0, isa_general = 0, min_disks_general = 0;
    for (int32_t i = 0; i < o.nodes; i++) {
      const auto& a = nodes[static_cast<size_t>(i)];
      ASSERT_EQ(a.size(), o.kinds.size());
      if (inShortPartition(i, o.short_partition)) {
        short_nodes++;
        EXPECT_EQ(a.at("min_disks"), "yes") << "node " << i;
        if (a.at("isa") == "yes") isa_short++;
      } else {
        if (a.at("isa") == "yes") isa_general++;
        if (a.at("min_disks") == "yes") min_disks_general++;
      }
    }
    const int64_t general = o.nodes - short_nodes;
    EXPECT_EQ(short_nodes, 106);  // 17% of 625, spread
    EXPECT_EQ(isa_short, std::llround(0.1 * static_cast<double>(short_nodes)));
    EXPECT_EQ(isa_general, std::llround(0.1 * static_cast<double>(general)));
    EXPECT_EQ(min_disks_general, std::llround(0.05 * static_cast<double>(general)));
  }
}

// Runs the calibration search on a model of slowdown against node share;
// returns the steps taken until every kind is within `tol` (or -1).
template <typename Model>
int searchSteps(std::vector<ConstraintKind>& kinds, Model model, double tol, int max_steps) {
  std::vector<NodeShareSearch> search(kinds.size());
  for (int step = 0; step <= max_steps; step++) {
    std::vector<double> measured;
    bool all = true;
    for (const auto& k : kinds) {
      measured.push_back(model(k, kinds));
      all = all && std::abs(measured.back() / k.target_slowdown - 1) <= tol;
    }
    if (all) return step;
    stepNodeShares(kinds, measured, search);
    for (const auto& k : kinds) {
      EXPECT_GE(k.node_share, kMinNodeShare) << k.name;
      EXPECT_LE(k.node_share, 1.0) << k.name;
    }
  }
  return -1;
}

// The calibration search moves each node share the right way: on a smooth
// model where a kind's slowdown falls with its share (or,
// short_partition_first, rises towards 1) every kind lands within 2% of its
// target in a few steps from the command's starting shares.
TEST(PhoenixMixTest, NodeShareSearchConvergesOnASmoothModel) {
  std::vector<ConstraintKind> kinds = tableTwoKinds();
  for (auto& k : kinds) k.node_share = k.short_partition_first ? 0.05 : 0.1;
  auto model = [](const ConstraintKind& k, const std::vector<ConstraintKind>&) {
    return k.short_partition_first ? 0.6 + 0.4 * std::sqrt(k.node_share) : 1 + 0.15 / k.node_share;
  };
  const int steps = searchSteps(kinds, model, 0.02, 10);
  EXPECT_GE(steps, 1);
  EXPECT_LE(steps, 8);
}

// Eagle-C's shape: a kind's own long jobs need a share s0 of the nodes, the
// slowdown explodes as the share nears it (50 at or below it), and the
// other kinds' shares shift every kind's curve (kinds share nodes). The
// secant steps still bring every kind within 2% in at most 12 steps, and
// never leave [kMinNodeShare, 1].
TEST(PhoenixMixTest, NodeShareSearchConvergesOnASteepCoupledModel) {
  std::vector<ConstraintKind> kinds = tableTwoKinds();
  for (auto& k : kinds) k.node_share = k.short_partition_first ? 0.05 : 0.1;
  auto model = [](const ConstraintKind& k, const std::vector<ConstraintKind>& all) {
    double mean = 0;
    for (const auto& o : all) mean += o.node_share / static_cast<double>(all.size());
    if (k.short_partition_first) return 0.85 + 0.15 * std::sqrt(k.node_share) + 0.05 * mean;
    const double s0 = 0.05 + 0.05 * mean;
    if (k.node_share <= s0) return 50.0;
    return std::min(50.0, 1 + 0.01 / (k.node_share - s0));
  };
  const int steps = searchSteps(kinds, model, 0.02, 12);
  EXPECT_GE(steps, 1);
  for (const auto& k : kinds) {
    EXPECT_NEAR(model(k, kinds) / k.target_slowdown, 1.0, 0.02) << k.name << " at " << k.node_share;
  }
}

// A short_partition_first kind's first direction is towards 1 (its
// slowdown on every node): from above 1 it falls with its share and needs no
// flip; from below 1 it is first assumed to rise, and when its slowdown falls
// instead (its own long jobs fill the few general nodes it has) the search
// flips it. Both land within 2%; the other kinds never flip.
TEST(PhoenixMixTest, NodeShareSearchFlipsAShortPartitionKindThatFallsWithItsShare) {
  struct Case {
    double (*curve)(double share);
    int flips;
    double lands_at;
  };
  const Case cases[] = {
      {[](double g) { return 1.3 - 0.5 * g; }, 0, 0.78},                // from 1.25, above 1
      {[](double g) { return 0.98 - 0.6 * std::sqrt(g); }, 1, 0.0136},  // from 0.79, below 1
  };
  for (const Case& c : cases) {
    std::vector<ConstraintKind> kinds = tableTwoKinds();
    for (auto& k : kinds) k.node_share = 0.1;
    auto model = [&c](const ConstraintKind& k) {
      return k.short_partition_first ? c.curve(k.node_share) : 1 + 0.15 / k.node_share;
    };
    std::vector<NodeShareSearch> search(kinds.size());
    int steps = 0;
    for (; steps < 16; steps++) {
      std::vector<double> measured;
      for (const auto& k : kinds) measured.push_back(model(k));
      bool all = true;
      for (size_t k = 0; k < kinds.size(); k++)
        all = all && std::abs(measured[k] / kinds[k].target_slowdown - 1) <= 0.02;
      if (all) break;
      stepNodeShares(kinds, measured, search);
    }
    EXPECT_LT(steps, 16) << c.lands_at;
    ASSERT_TRUE(kinds[8].short_partition_first);
    EXPECT_NEAR(kinds[8].node_share / c.lands_at, 1.0, 0.4) << kinds[8].node_share;
    EXPECT_EQ(search[8].flips, c.flips) << c.lands_at;
    EXPECT_FALSE(search[8].rises) << c.lands_at;
    for (size_t k = 0; k < 8; k++) EXPECT_EQ(search[k].flips, 0) << kinds[k].name;
  }
}

// Once a kind's share is bracketed (one measurement on each side of its
// target), every further step stays strictly inside the bracket; a step
// without a bracket moves the share by at most a factor of 1.5.
TEST(PhoenixMixTest, NodeShareSearchStaysInsideItsBracket) {
  std::vector<ConstraintKind> kinds = {tableTwoKinds()[0]};  // isa, 2.03
  std::vector<NodeShareSearch> search(1);
  kinds[0].node_share = 0.1;
  stepNodeShares(kinds, {1.2}, search);  // too low a slowdown: fewer nodes
  EXPECT_LT(kinds[0].node_share, 0.1);
  EXPECT_GE(kinds[0].node_share, 0.1 / 1.5 - 1e-12);
  const double lo = kinds[0].node_share;
  stepNodeShares(kinds, {9.0}, search);  // too high: between the two
  EXPECT_GT(kinds[0].node_share, lo);
  EXPECT_LT(kinds[0].node_share, 0.1);
  for (double m : {1.5, 3.0, 1.9, 2.2, 2.1}) {
    const double old_lo = search[0].lo_x, old_hi = search[0].hi_x;
    stepNodeShares(kinds, {m}, search);
    ASSERT_TRUE(search[0].has_lo && search[0].has_hi) << "after " << m;
    EXPECT_GE(search[0].lo_x, old_lo) << "after " << m;  // the bracket only shrinks
    EXPECT_LE(search[0].hi_x, old_hi) << "after " << m;
    EXPECT_GT(std::log(kinds[0].node_share), search[0].lo_x) << "after " << m;
    EXPECT_LT(std::log(kinds[0].node_share), search[0].hi_x) << "after " << m;
  }
}

// Yahoo's kernel: a short partition of 12 nodes gives the kind
// round(share x 12) of them, and the slowdown steps by 0.5 between one and
// two nodes; the target lies inside the step. Searched with one share for
// both pools, the search never gets within 2%; with the pools apart
// (short_pool 12) the count stays at its first value and the general share
// alone brings the kind within 2%.
TEST(PhoenixMixTest, NodeShareSearchSetsTheShortPartitionApartFromTheGeneralShare) {
  auto model = [](const ConstraintKind& k) {
    const double n = k.short_nodes >= 0 ? k.short_nodes : std::llround(12 * k.node_share);
    return 1.5 + 0.12 / k.node_share - 0.5 * n;
  };
  auto run = [&model](int32_t short_pool, std::vector<ConstraintKind>& kinds) {
    std::vector<NodeShareSearch> search(1);
    for (int step = 0; step < 12; step++) {
      const double m = model(kinds[0]);
      if (std::abs(m / kinds[0].target_slowdown - 1) <= 0.02) return step;
      stepNodeShares(kinds, {m}, search, short_pool);
    }
    return -1;
  };
  std::vector<ConstraintKind> one = {tableTwoKinds()[5]};  // kernel, 1.77
  ASSERT_EQ(one[0].name, "kernel");
  one[0].node_share = 0.1;
  std::vector<ConstraintKind> apart = one;
  EXPECT_EQ(run(0, one), -1) << "one share for both pools: " << one[0].node_share;
  EXPECT_EQ(one[0].short_nodes, -1);
  const int steps = run(12, apart);
  EXPECT_GE(steps, 1);
  EXPECT_EQ(apart[0].short_nodes, 1);  // round(0.1 x 12), fixed
  EXPECT_NEAR(model(apart[0]) / 1.77, 1.0, 0.02) << apart[0].node_share;
}

// A kind whose general share is pinned at 1 and is still too slow gets one
// more short-partition node per step until the general share can reach the
// target again; a short_partition_first kind keeps every short node.
TEST(PhoenixMixTest, NodeShareSearchStepsTheShortCountWhenTheGeneralShareIsPinned) {
  std::vector<ConstraintKind> kinds = {tableTwoKinds()[0], tableTwoKinds()[8]};  // isa, min disks
  kinds[0].node_share = 0.5;
  kinds[0].short_nodes = 0;
  kinds[1].node_share = 0.1;
  auto model = [](const ConstraintKind& k) {
    if (k.short_partition_first) return 1.3 - 0.5 * k.node_share;
    return 1 + 2.4 / (1 + k.short_nodes) + 0.5 * (1 - k.node_share);
  };
  std::vector<NodeShareSearch> search(2);
  int steps = 0;
  for (; steps < 20; steps++) {
    const std::vector<double> m = {model(kinds[0]), model(kinds[1])};
    if (std::abs(m[0] / kinds[0].target_slowdown - 1) <= 0.02 &&
        std::abs(m[1] / kinds[1].target_slowdown - 1) <= 0.02) {
      break;
    }
    stepNodeShares(kinds, m, search, 12);
    EXPECT_GE(kinds[0].short_nodes, 0);
    EXPECT_LE(kinds[0].short_nodes, 12);
  }
  EXPECT_LT(steps, 20);
  EXPECT_EQ(kinds[0].short_nodes, 2);  // 0 and 1 node: too slow even on every general node
  EXPECT_EQ(search[0].count_steps, 2);
  EXPECT_NEAR(kinds[0].node_share, 0.54, 0.03);
  EXPECT_EQ(kinds[1].short_nodes, 12);
  EXPECT_EQ(search[1].count_steps, 0);
}

// short_nodes puts a kind on exactly that many short-partition nodes,
// whatever its share (and for a short_partition_first kind too), and leaves
// its general nodes at round(share x n).
TEST(PhoenixMixTest, ShortNodesSetTheShortPartitionCountApartFromTheShare) {
  PhoenixSimOptions o = traceOptions(PhoenixMix::kYahoo, 625, 60, 4);
  ASSERT_EQ(shortPartitionNodes(625, o.short_partition), 12);
  o.kinds[5].node_share = 0.2;  // kernel
  o.kinds[5].short_nodes = 1;
  o.kinds[8].node_share = 0.1;  // min disks
  o.kinds[8].short_nodes = 5;
  o.kinds[0].node_share = 0.3;  // isa: round(0.3 x 12) short nodes
  const auto nodes = phoenixClusterAttributes(o);
  int64_t short_nodes = 0, kernel_s = 0, kernel_g = 0, min_s = 0, min_g = 0, isa_s = 0;
  for (int32_t i = 0; i < o.nodes; i++) {
    const auto& a = nodes[static_cast<size_t>(i)];
    const bool s = inShortPartition(i, o.short_partition);
    short_nodes += s;
    (s ? kernel_s : kernel_g) += a.at("kernel") == "yes";
    (s ? min_s : min_g) += a.at("min_disks") == "yes";
    if (s) isa_s += a.at("isa") == "yes";
  }
  EXPECT_EQ(short_nodes, 12);
  EXPECT_EQ(kernel_s, 1);
  EXPECT_EQ(kernel_g, std::llround(0.2 * 613));
  EXPECT_EQ(min_s, 5);
  EXPECT_EQ(min_g, std::llround(0.1 * 613));
  EXPECT_EQ(isa_s, std::llround(0.3 * 12));
}

// Calibration files: read back what phoenix-calibrate writes; a file of
// another mix, a missing field or bad shares are INVALID_ARGUMENT naming the
// flag and the file.
TEST(PhoenixMixTest, CalibrationFilesAreReadOrRejectedByName) {
  const std::string path = ::testing::TempDir() + "phoenix_calibration_test.json";
  auto write = [&path](const std::string& text) { std::ofstream(path, std::ios::trunc) << text; };
  write(R"({"mix": "yahoo", "kinds": [
      {"name": "isa", "target_slowdown": 2.03, "job_share": 0.3, "node_share": 0.12,
       "short_nodes": 2},
      {"name": "min_disks", "target_slowdown": 0.91, "job_share": 0.3, "node_share": 0.4,
       "short_partition_first": true}]})");
  auto k = readPhoenixCalibration(path, PhoenixMix::kYahoo, "--calibration");
  ASSERT_TRUE(k.isOk()) << k.status().toString();
  ASSERT_EQ(k->size(), 2u);
  EXPECT_DOUBLE_EQ((*k)[0].node_share, 0.12);
  EXPECT_TRUE((*k)[1].short_partition_first);
  EXPECT_EQ((*k)[0].short_nodes, 2);
  EXPECT_EQ((*k)[1].short_nodes, -1);  // absent: from the share

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

  write(R"({"mix": "yahoo", "kinds": [
      {"name": "isa", "target_slowdown": 2, "job_share": 0.1, "node_share": 0.1,
       "short_nodes": 1.5}]})");
  auto frac = readPhoenixCalibration(path, PhoenixMix::kYahoo, "--calibration");
  ASSERT_FALSE(frac.isOk());
  EXPECT_NE(frac.status().message().find("kinds[0].short_nodes"), std::string::npos);

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
