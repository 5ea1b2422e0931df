// The RM's Carbyne edge: stage reports -> the core's DAG, and the
// scheduler.policy config key.
#include <gtest/gtest.h>

#include "rm/runtime/dag_report.h"
#include "rm/runtime/queue_policies.h"

namespace morpheus::rm {
namespace {

v1::StageReport report(const std::string& name, int tasks, int completed, int64_t est_ms,
                       std::vector<std::string> deps = {}) {
  v1::StageReport r;
  r.set_name(name);
  r.set_tasks(tasks);
  r.set_completed(completed);
  r.set_estimated_task_ms(est_ms);
  r.mutable_task_resource()->set_memory_mib(256);
  r.mutable_task_resource()->set_vcores(1);
  for (auto& d : deps) r.add_depends_on(d);
  return r;
}

// Finished stages are dropped and dependencies re-indexed among the rest;
// the observed mean beats the estimate.
TEST(DagReportTest, UnfinishedStagesWithReindexedDeps) {
  google::protobuf::RepeatedPtrField<v1::StageReport> rs;
  *rs.Add() = report("map", 4, 4, 1000);
  *rs.Add() = report("side", 3, 1, 2000);
  *rs.Add() = report("reduce", 2, 0, 5000, {"map", "side"});
  rs[1].set_mean_task_ms(2500);
  auto dag = dagFromStageReports(rs);
  ASSERT_TRUE(dag.isOk()) << dag.status().toString();
  ASSERT_EQ(dag->size(), 2u);
  EXPECT_EQ((*dag)[0].tasks_left, 2);
  EXPECT_EQ((*dag)[0].task_duration, Millis(2500));
  EXPECT_EQ((*dag)[1].task_duration, Millis(5000));
  EXPECT_EQ((*dag)[1].deps, (std::vector<size_t>{0}));
  EXPECT_EQ((*dag)[1].task, Resource(256, 1));
  // Each stage carries its name: the DAG AM's request id for its tasks.
  EXPECT_EQ((*dag)[0].request_id, "side");
  EXPECT_EQ((*dag)[1].request_id, "reduce");
}

// A stage without an estimate makes the app non-altruistic (no DAG); a
// negative estimate is an error naming the field.
TEST(DagReportTest, MissingEstimateGivesNoDagNegativeIsRefused) {
  google::protobuf::RepeatedPtrField<v1::StageReport> rs;
  *rs.Add() = report("map", 4, 0, 0);
  auto dag = dagFromStageReports(rs);
  ASSERT_TRUE(dag.isOk());
  EXPECT_TRUE(dag->empty());
  rs[0].set_estimated_task_ms(-1);
  auto bad = dagFromStageReports(rs);
  ASSERT_FALSE(bad.isOk());
  EXPECT_NE(bad.status().message().find("stages[0].estimated_task_ms"), std::string::npos);
}

// scheduler.policy: known names per leaf; an unknown policy or a non-leaf
// path names the key and leaves the options unchanged.
TEST(QueuePoliciesTest, ResolvesLeavesAndNamesBadEntries) {
  RuntimeOptions o;
  ASSERT_TRUE(resolveQueuePolicies({{"root.default", "carbyne"}}, {"root.default"}, &o).isOk());
  ASSERT_EQ(o.queue_policies.size(), 1u);
  EXPECT_EQ(o.queue_policies["root.default"]->name(), "carbyne");
  Status bad = resolveQueuePolicies({{"root.default", "lifo"}}, {"root.default"}, &o);
  EXPECT_EQ(bad.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad.message().find("scheduler.policy.root.default"), std::string::npos);
  Status parent = resolveQueuePolicies({{"root.prod", "drf"}}, {"root.prod.etl"}, &o);
  EXPECT_NE(parent.message().find("scheduler.policy.root.prod"), std::string::npos);
  EXPECT_EQ(o.queue_policies["root.default"]->name(), "carbyne");
  // Phoenix is one more leaf policy, next to carbyne.
  RuntimeOptions mixed;
  ASSERT_TRUE(resolveQueuePolicies({{"root.a", "phoenix"}, {"root.b", "carbyne"}},
                                   {"root.a", "root.b"}, &mixed)
                  .isOk());
  EXPECT_EQ(mixed.queue_policies["root.a"]->name(), "phoenix");
  EXPECT_EQ(mixed.queue_policies["root.b"]->name(), "carbyne");
}

}  // namespace
}  // namespace morpheus::rm
