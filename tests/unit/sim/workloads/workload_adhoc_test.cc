// Unit tests for the SWIM ad-hoc load of morpheus-sim: daily
// repetition, scaling to a target load, determinism, bad inputs.
#include <gtest/gtest.h>

#include <unistd.h>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "sim/workloads/swim_trace.h"
#include "sim/workloads/workload.h"

namespace morpheus {
namespace {

// A heavy-tailed synthetic SWIM trace over one day (job i has ~i^2 bytes).
std::string writeTrace(const std::string& name, int jobs) {
  auto path =
      std::filesystem::temp_directory_path() / (name + "-" + std::to_string(::getpid()) + ".tsv");
  std::ofstream out(path);
  for (int i = 0; i < jobs; i++) {
    int64_t input = 4'000'000LL * (1 + (i * 37 % jobs) * (i * 37 % jobs) / 10);
    int64_t shuffle = i % 3 == 0 ? 0 : input / 2;
    out << "job" << i << '\t' << (i * 86000LL / jobs) << '\t' << 10 << '\t' << input << '\t'
        << shuffle << '\t' << shuffle / 4 << '\n';
  }
  return path.string();
}

sim::AdhocOptions options(const std::string& trace, int64_t nodes, double load) {
  sim::AdhocOptions o;
  o.trace_path = trace;
  o.nodes = nodes;
  o.days = 3;
  o.load = load;
  o.seed = 4;
  o.node_size = Resource(32768, 8);
  return o;
}

double realisedLoad(const std::vector<sim::AdhocJob>& jobs, const sim::AdhocOptions& o) {
  const Resource capacity = o.node_size * o.nodes;
  double work = 0;
  for (const auto& j : jobs) {
    for (const auto& st : j.stages) {
      work += static_cast<double>(st.tasks) * static_cast<double>(st.task_duration.count()) *
              st.task_resource.dominantShare(capacity);
    }
  }
  return work / static_cast<double>(o.days * 86400000LL);
}

// Sampling (q < 1), replication (1 < q <= 2) and widening (q > 2) all hit the target load within
// 3%.
TEST(AdhocLoadTest, ScalesToTargetLoad) {
  auto trace = writeTrace("adhoc-scale", 400);
  for (int64_t nodes : {2, 10, 40, 5000}) {
    auto o = options(trace, nodes, 0.3);
    auto jobs = sim::loadAdhoc(o);
    ASSERT_TRUE(jobs.isOk()) << jobs.status().toString();
    EXPECT_NEAR(realisedLoad(*jobs, o), 0.3, 0.3 * 0.03) << nodes << " nodes";
  }
  std::filesystem::remove(trace);
}

// Jobs are 2-stage DAGs (maps then reduces) of 1-vcore containers, sorted by submit, repeated
// daily.
TEST(AdhocLoadTest, JobsAreSortedTwoStageDagsRepeatedDaily) {
  auto trace = writeTrace("adhoc-shape", 60);
  auto o = options(trace, 10, 0.3);
  auto jobs = sim::loadAdhoc(o);
  ASSERT_TRUE(jobs.isOk());
  ASSERT_FALSE(jobs->empty());
  bool day2 = false;
  for (size_t i = 0; i < jobs->size(); i++) {
    const auto& j = (*jobs)[i];
    if (i > 0) {
      EXPECT_LE((*jobs)[i - 1].submit, j.submit);
    }
    EXPECT_LT(j.submit, Millis(3 * 86400000LL));
    day2 |= j.submit >= Millis(2 * 86400000LL);
    ASSERT_GE(j.stages.size(), 1u);
    EXPECT_EQ(j.stages[0].task_resource, Resource(4096, 1));
    if (j.stages.size() == 2) {
      EXPECT_EQ(j.stages[1].depends_on, std::vector<int>{0});
    }
  }
  EXPECT_TRUE(day2);
  auto again = sim::loadAdhoc(o);
  ASSERT_EQ(again->size(), jobs->size());
  for (size_t i = 0; i < jobs->size(); i++) {
    EXPECT_EQ((*again)[i].name, (*jobs)[i].name);
    EXPECT_EQ((*again)[i].user, (*jobs)[i].user);
  }
  std::filesystem::remove(trace);
}

// Diverse shapes: stages draw vcores in {1, 2, 4} and memory in
// [1/4, 2] x 4 GiB per vcore, map and reduce independently; the offered load
// still hits the target within 3% (tasks counted by their dominant share).
TEST(AdhocLoadTest, DiverseShapesVaryPerStageAndKeepLoad) {
  auto trace = writeTrace("adhoc-diverse", 400);
  auto o = options(trace, 10, 0.3);
  o.diverse_shapes = true;
  auto jobs = sim::loadAdhoc(o);
  ASSERT_TRUE(jobs.isOk()) << jobs.status().toString();
  EXPECT_NEAR(realisedLoad(*jobs, o), 0.3, 0.3 * 0.03);
  std::set<int64_t> vcores;
  int64_t differ = 0, two_stage = 0;
  for (const auto& j : *jobs) {
    for (const auto& st : j.stages) {
      const Resource& r = st.task_resource;
      vcores.insert(r.vcores());
      EXPECT_GE(r.memoryMib(), 1024 * r.vcores());
      EXPECT_LE(r.memoryMib(), 8192 * r.vcores());
    }
    if (j.stages.size() == 2) {
      two_stage++;
      differ += j.stages[0].task_resource != j.stages[1].task_resource ? 1 : 0;
    }
  }
  EXPECT_EQ(vcores, (std::set<int64_t>{1, 2, 4}));
  EXPECT_GT(differ, two_stage / 2);
  std::filesystem::remove(trace);
}

// A malformed trace line is reported with its line number; bad options name the field.
TEST(AdhocLoadTest, RejectsBadTraceAndOptions) {
  auto path =
      std::filesystem::temp_directory_path() / ("adhoc-bad-" + std::to_string(::getpid()) + ".tsv");
  std::ofstream(path) << "job0\t1\t1\t100\t0\t0\njob1\t2\t1\tlots\t0\t0\n";
  auto bad = sim::loadAdhoc(options(path.string(), 10, 0.3));
  ASSERT_FALSE(bad.isOk());
  EXPECT_NE(bad.status().message().find("line 2 column 4"), std::string::npos)
      << bad.status().message();
  std::filesystem::remove(path);
  auto o = options("/nonexistent/trace.tsv", 10, 0.3);
  EXPECT_FALSE(sim::loadAdhoc(o).isOk());
  o.load = -0.1;
  EXPECT_EQ(sim::loadAdhoc(o).status().message().rfind("load:", 0), 0u);
  o = options("x", 0, 0.3);
  EXPECT_EQ(sim::loadAdhoc(o).status().message().rfind("nodes:", 0), 0u);
}

}  // namespace
}  // namespace morpheus
