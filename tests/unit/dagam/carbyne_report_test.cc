// The DAG AM's half of Carbyne's protocol: the job spec's
// estimated_task_ms and each stage's resources reach the stage reports.
#include <gtest/gtest.h>

#include "dagam/dag_job.h"

namespace morpheus::dagam {
namespace {

// Each report carries the stage's task resources and the spec's estimate.
TEST(CarbyneReportTest, StageReportsCarryTaskResourceAndEstimate) {
  auto s = parseJobSpec(R"(
name: j
stages:
  - {name: a, tasks: 2, command: "true", estimated_task_ms: 8000,
     resources: {memory_mib: 512, vcores: 2}}
  - {name: b, tasks: 1, command: "true", depends_on: [a]}
)");
  ASSERT_TRUE(s.isOk()) << s.status().toString();
  VirtualClock clock(fromEpochMs(1000000));
  DagJob job(*s, "app_1", clock);
  auto r = job.stageReports();
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0].task_resource, Resource(512, 2));
  EXPECT_EQ(r[0].estimated_task, Millis(8000));
  EXPECT_EQ(r[1].task_resource, Resource(256, 1)) << "the spec's default resources";
  EXPECT_EQ(r[1].estimated_task, Millis(0)) << "no estimate given";
}

// A non-positive estimate is refused naming the field.
TEST(CarbyneReportTest, NonPositiveEstimateNamesTheField) {
  auto s = parseJobSpec(R"(
name: j
stages:
  - {name: a, tasks: 2, command: "true", estimated_task_ms: 0}
)");
  ASSERT_FALSE(s.isOk());
  EXPECT_NE(s.status().message().find("stages[0].estimated_task_ms"), std::string::npos)
      << s.status().message();
}

}  // namespace
}  // namespace morpheus::dagam
