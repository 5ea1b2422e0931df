// The RM's Carbyne edge: stage reports -> the core's DAG, and the
// scheduler.policy and scheduler.carbyne.* config keys.
#include <gtest/gtest.h>

#include "common/config.h"
#include "rm/core/rm_options.h"
#include "rm/runtime/dag_report.h"
#include "rm/runtime/queue_policies.h"
#include "scheduler/ordering_policy.h"
#include "scheduler/policies/carbyne_policy.h"
#include "scheduler/policies/phoenix_policy.h"

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
  ASSERT_TRUE(resolveQueuePolicies({{"root.default", "carbyne"}}, {"root.default"}, {}, &o).isOk());
  ASSERT_EQ(o.queue_policies.size(), 1u);
  EXPECT_EQ(o.queue_policies["root.default"]->name(), "carbyne");
  Status bad = resolveQueuePolicies({{"root.default", "lifo"}}, {"root.default"}, {}, &o);
  EXPECT_EQ(bad.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad.message().find("scheduler.policy.root.default"), std::string::npos);
  Status parent = resolveQueuePolicies({{"root.prod", "drf"}}, {"root.prod.etl"}, {}, &o);
  EXPECT_NE(parent.message().find("scheduler.policy.root.prod"), std::string::npos);
  EXPECT_EQ(o.queue_policies["root.default"]->name(), "carbyne");
  // Phoenix is one more leaf policy, next to carbyne.
  RuntimeOptions mixed;
  ASSERT_TRUE(resolveQueuePolicies({{"root.a", "phoenix"}, {"root.b", "carbyne"}},
                                   {"root.a", "root.b"}, {}, &mixed)
                  .isOk());
  EXPECT_EQ(mixed.queue_policies["root.a"]->name(), "phoenix");
  EXPECT_EQ(mixed.queue_policies["root.b"]->name(), "carbyne");
}

// Whether the carbyne policy of `o`'s leaf `path` reserves nodes.
bool reservesNodes(const RuntimeOptions& o, const std::string& path) {
  const auto* pk = dynamic_cast<const sched::CrossAppPacker*>(o.queue_policies.at(path).get());
  return pk != nullptr && pk->reservesNodes();
}

// The RM's options after `yaml`, or the schema's error.
Result<RmOptions> loadRm(const std::string& yaml) {
  RmOptions opts;
  ConfigSchema s("morpheus-rm");
  declareRmOptions(s, &opts);
  MORPHEUS_RETURN_IF_ERROR(s.loadYamlString(yaml, "rm.yaml"));
  return opts;
}

// scheduler.carbyne.*: by default carbyne leaves reserve nodes within 5% of
// the nodes a job and 60 s; the keys turn them off or change the bounds,
// which reach the scheduler's options; a value out of range is refused
// naming the key as written, and leaves the options unchanged.
TEST(QueuePoliciesTest, CarbyneNodeReservationKeysReachTheSchedulerOptions) {
  auto def = loadRm("scheduler.policy: {root.default: carbyne}\n");
  ASSERT_TRUE(def.isOk()) << def.status().toString();
  RuntimeOptions o;
  ASSERT_TRUE(resolveQueuePolicies(def->queue_policies, {"root.default"}, def->carbyne, &o).isOk());
  EXPECT_TRUE(reservesNodes(o, "root.default"));
  EXPECT_FALSE(o.node_reservation.enabled) << "only carbyne leaves reserve";
  EXPECT_DOUBLE_EQ(o.node_reservation.reservable_nodes, 0.05);
  EXPECT_EQ(o.node_reservation.timeout, Millis(60000));

  auto set = loadRm(
      "scheduler.policy: {root.default: carbyne}\n"
      "scheduler:\n"
      "  carbyne:\n"
      "    node-reservations: false\n"
      "    reservable-nodes: 0.2\n"
      "    node-reservation-timeout: 90s\n");
  ASSERT_TRUE(set.isOk()) << set.status().toString();
  ASSERT_TRUE(resolveQueuePolicies(set->queue_policies, {"root.default"}, set->carbyne, &o).isOk());
  EXPECT_FALSE(reservesNodes(o, "root.default"));
  EXPECT_DOUBLE_EQ(o.node_reservation.reservable_nodes, 0.2);
  EXPECT_EQ(o.node_reservation.timeout, Millis(90000));

  // The schema's bounds, then the ones it cannot express.
  for (const std::string& bad : std::vector<std::string>{
           "scheduler.carbyne.reservable-nodes: 1.5", "scheduler.carbyne.reservable-nodes: -0.1",
           "scheduler.carbyne.node-reservation-timeout: 0s",
           "scheduler.carbyne.node-reservations: maybe"}) {
    auto r = loadRm(bad + "\n");
    ASSERT_FALSE(r.isOk()) << bad;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << bad;
    EXPECT_NE(r.status().message().find(bad.substr(0, bad.find(':'))), std::string::npos)
        << r.status().message();
  }
  auto zero = loadRm(
      "scheduler.policy: {root.default: carbyne}\n"
      "scheduler.carbyne.reservable-nodes: 0\n");
  ASSERT_TRUE(zero.isOk()) << zero.status().toString();
  Status st = resolveQueuePolicies(zero->queue_policies, {"root.default"}, zero->carbyne, &o);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("scheduler.carbyne.reservable-nodes"), std::string::npos)
      << st.message();
  EXPECT_NE(st.message().find("node-reservations: false"), std::string::npos) << st.message();
  EXPECT_DOUBLE_EQ(o.node_reservation.reservable_nodes, 0.2) << "unchanged";
  EXPECT_FALSE(reservesNodes(o, "root.default")) << "unchanged";
  CarbyneRmOptions no_timeout;
  no_timeout.node_reservation_timeout = Millis(0);
  st = validateCarbyneRmOptions(no_timeout);
  EXPECT_NE(st.message().find("scheduler.carbyne.node-reservation-timeout"), std::string::npos)
      << st.message();
}

// The askScore of `o`'s leaf `path` for an ask of a job below its need:
// stage "b" is needed now, one task of it (AppHint::needed_tasks), and
// `running` of its tasks run; "c" has slack.
double belowNeedScore(const RuntimeOptions& o, const std::string& path, const char* stage,
                      int64_t running) {
  const auto* ac = dynamic_cast<const sched::AskChooser*>(o.queue_policies.at(path).get());
  EXPECT_NE(ac, nullptr);
  sched::AppHint h{true, Resource(4096, 4), Millis(1000)};
  h.needed = {"b"};
  h.needed_tasks = {1};
  const Resource used(1024, 1), task(1024, 1), node(8192, 8);
  return ac->askScore({used, h, task, node, node, stage, running});
}

// scheduler.carbyne.decline-slack and count-needed-tasks default to the
// policy's LeftoverPacking and reach every carbyne leaf's policy: a slack
// stage's task is declined below the need, and a needed stage's task beyond
// the count its plan runs now has slack; a value that is not a boolean is
// refused naming the key.
TEST(QueuePoliciesTest, CarbyneDeclineAndCountKeysReachThePolicy) {
  EXPECT_EQ(CarbyneRmOptions{}.decline_slack, sched::LeftoverPacking{}.decline_slack);
  EXPECT_EQ(CarbyneRmOptions{}.count_needed_tasks, sched::LeftoverPacking{}.count_needed);
  auto off = loadRm(
      "scheduler.policy: {root.default: carbyne}\n"
      "scheduler.carbyne.decline-slack: false\n"
      "scheduler.carbyne.count-needed-tasks: false\n");
  ASSERT_TRUE(off.isOk()) << off.status().toString();
  RuntimeOptions o;
  ASSERT_TRUE(resolveQueuePolicies(off->queue_policies, {"root.default"}, off->carbyne, &o).isOk());
  EXPECT_DOUBLE_EQ(belowNeedScore(o, "root.default", "c", 0), 0.0);
  EXPECT_DOUBLE_EQ(belowNeedScore(o, "root.default", "b", 1), 1.0);

  auto on = loadRm(
      "scheduler.policy: {root.default: carbyne}\n"
      "scheduler:\n"
      "  carbyne:\n"
      "    decline-slack: true\n"
      "    count-needed-tasks: true\n");
  ASSERT_TRUE(on.isOk()) << on.status().toString();
  ASSERT_TRUE(resolveQueuePolicies(on->queue_policies, {"root.default"}, on->carbyne, &o).isOk());
  EXPECT_EQ(belowNeedScore(o, "root.default", "c", 0), sched::AskChooser::kDecline);
  EXPECT_DOUBLE_EQ(belowNeedScore(o, "root.default", "b", 0), 1.0);
  EXPECT_EQ(belowNeedScore(o, "root.default", "b", 1), sched::AskChooser::kDecline);

  for (const std::string& bad :
       std::vector<std::string>{"scheduler.carbyne.decline-slack: sometimes",
                                "scheduler.carbyne.count-needed-tasks: 2"}) {
    auto r = loadRm(bad + "\n");
    ASSERT_FALSE(r.isOk()) << bad;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << bad;
    EXPECT_NE(r.status().message().find(bad.substr(0, bad.find(':'))), std::string::npos)
        << r.status().message();
  }
}

// scheduler.phoenix.long-task, long-share and reserve-factor reach every
// phoenix leaf's long-work cap; their defaults are the policy's (cap off,
// share 0.9, factor 3); a share of 0 and a negative factor are refused
// naming the key.
TEST(QueuePoliciesTest, PhoenixLongWorkKeysReachThePolicy) {
  EXPECT_EQ(PhoenixRmOptions{}.long_task, sched::PhoenixLongWork{}.long_task);
  EXPECT_DOUBLE_EQ(PhoenixRmOptions{}.long_share, sched::PhoenixLongWork{}.long_share);
  EXPECT_DOUBLE_EQ(PhoenixRmOptions{}.reserve_factor, sched::PhoenixLongWork{}.reserve_factor);
  auto set = loadRm(
      "scheduler.policy: {root.default: phoenix}\n"
      "scheduler.phoenix.long-task: 90s\n"
      "scheduler.phoenix.long-share: 0.8\n"
      "scheduler.phoenix.reserve-factor: 2\n");
  ASSERT_TRUE(set.isOk()) << set.status().toString();
  RuntimeOptions o;
  ASSERT_TRUE(
      resolveQueuePolicies(set->queue_policies, {"root.default"}, set->carbyne, &o, set->phoenix)
          .isOk());
  const sched::LongWorkCap* cap =
      sched::extensionPoints(*o.queue_policies["root.default"]).long_cap;
  ASSERT_NE(cap, nullptr);
  EXPECT_EQ(cap->longTask(), Millis(90000));
  EXPECT_DOUBLE_EQ(cap->longShare(), 0.8);
  EXPECT_DOUBLE_EQ(cap->longShareOf(0.05), 0.9);  // 1 - 2 x 0.05
  auto negative = loadRm("scheduler.phoenix.reserve-factor: -1\n");
  EXPECT_FALSE(negative.isOk());
  if (!negative.isOk()) {
    EXPECT_NE(negative.status().message().find("scheduler.phoenix.reserve-factor"),
              std::string::npos)
        << negative.status().message();
  }
  auto zero = loadRm("scheduler.phoenix.long-share: 0\n");
  ASSERT_TRUE(zero.isOk()) << zero.status().toString();
  Status st = resolveQueuePolicies({}, {"root.default"}, zero->carbyne, &o, zero->phoenix);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("scheduler.phoenix.long-share"), std::string::npos) << st.message();
}

}  // namespace
}  // namespace morpheus::rm
