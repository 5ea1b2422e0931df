// The grouped task model (sim/engine/task_model.h).
#include "sim/engine/task_model.h"

#include <gtest/gtest.h>

#include <memory>

namespace morpheus::sim {
namespace {

const Resource kNode(65536, 16);

TaskModel groupedBy(int64_t g) {
  TaskModel m;
  m.name = "grouped";
  m.group = g;
  return m;
}

PeriodicJob jobWith(int64_t tasks, const Resource& task) {
  PeriodicJob j;
  j.key = JobKey("j");
  SimStage st;
  st.tasks = tasks;
  st.task_resource = task;
  j.stages = {st, st};
  j.user_containers = 10;
  j.user_container_resource = task;
  return j;
}

// Unknown model names and groups below 1 are refused naming the flag.
TEST(TaskModelTest, BadModelOrGroupIsRefusedNamingTheFlag) {
  TaskModel m;
  m.name = "fluidic";
  EXPECT_NE(validateTaskModel(m).message().find("task-model"), std::string::npos);
  m.name = "fluid";
  EXPECT_TRUE(validateTaskModel(m).isOk());
  m.fluid_step = Millis(999);
  EXPECT_NE(validateTaskModel(m).message().find("fluid-step"), std::string::npos);
  EXPECT_NE(validateTaskModel(groupedBy(0)).message().find("task-group"), std::string::npos);
  EXPECT_TRUE(validateTaskModel(groupedBy(4)).isOk());
  EXPECT_TRUE(validateTaskModel(TaskModel{}).isOk());
}

// Grouped: ceil(tasks / g) containers of g x the resource, user provisioning
// likewise; the task model leaves the workload as it is.
TEST(TaskModelTest, GroupedStagesRoundUpToWholeGroups) {
  Workload w;
  w.periodic.push_back(jobWith(10, Resource(2048, 1)));
  Workload g = groupWorkload(w, groupedBy(4), kNode);
  ASSERT_EQ(g.periodic[0].stages.size(), 2u);
  EXPECT_EQ(g.periodic[0].stages[0].tasks, 3);
  EXPECT_EQ(g.periodic[0].stages[0].task_resource, Resource(8192, 4));
  EXPECT_EQ(g.periodic[0].user_containers, 3);
  EXPECT_EQ(g.periodic[0].user_container_resource, Resource(8192, 4));
  Workload t = groupWorkload(w, TaskModel{}, kNode);
  EXPECT_EQ(t.periodic[0].stages[0].tasks, 10);
  EXPECT_EQ(t.periodic[0].stages[0].task_resource, Resource(2048, 1));
}

// A group never exceeds what one node holds of the job's largest task.
TEST(TaskModelTest, GroupIsCappedSoAGroupedContainerFitsANode) {
  EXPECT_EQ(jobGroup(groupedBy(64), jobWith(100, Resource(8192, 2)).stages, kNode), 8);
  EXPECT_EQ(jobGroup(groupedBy(64), jobWith(100, Resource(65536, 16)).stages, kNode), 1);
  EXPECT_EQ(jobGroup(TaskModel{}, jobWith(100, Resource(1024, 1)).stages, kNode), 1);
}

// Realised durations are grouped in runs of g, each lasting its slowest
// member, from the ORIGINAL job's draw.
TEST(TaskModelTest, GroupedRealisationLastsAsLongAsTheSlowestMember) {
  auto w = std::make_shared<Workload>();
  w->periodic.push_back(jobWith(5, Resource(1024, 1)));
  RealizeFn inner = [](const PeriodicJob& job, size_t, int64_t, uint64_t) {
    RealizedInstance r;
    for (const auto& st : job.stages) {
      RealizedStage rs;
      for (int64_t i = 0; i < st.tasks; i++) rs.task_durations.push_back(Millis(1000 * (i + 1)));
      r.stages.push_back(rs);
    }
    return r;
  };
  const Workload g = groupWorkload(*w, groupedBy(2), kNode);
  RealizeFn f = groupRealize(inner, w, groupedBy(2), kNode);
  RealizedInstance r = f(g.periodic[0], 0, 0, 1);
  ASSERT_EQ(r.stages.size(), 2u);
  EXPECT_EQ(r.stages[0].task_durations,
            (std::vector<Millis>{Millis(2000), Millis(4000), Millis(5000)}));
  EXPECT_EQ(static_cast<int64_t>(r.stages[0].task_durations.size()), g.periodic[0].stages[0].tasks);
}

// groupDraw (drawGroupedInstance, which completes only the draws that may be
// their run's longest) gives exactly groupRealize(drawInstance)'s durations:
// generated jobs (noise, stragglers, input growth, code changes), groups from
// 1 to 24, many instances; and jobs without noise or with a straggler factor
// below 1.
TEST(TaskModelTest, GroupDrawEqualsGroupingEveryDraw) {
  GeneratorOptions o;
  o.periodic_jobs = 40;
  o.days = 30;
  o.seed = 3;
  o.node_size = kNode;
  o.nodes = 100;
  auto generated = generatePeriodic(o);
  ASSERT_TRUE(generated.isOk()) << generated.status().toString();
  auto w = std::make_shared<Workload>(std::move(*generated));
  PeriodicJob quiet = w->periodic[0];
  quiet.duration_noise_cv = 0;
  quiet.straggler_probability = 0.3;
  w->periodic.push_back(quiet);
  PeriodicJob shrinking = w->periodic[1];
  shrinking.straggler_probability = 0.5;
  shrinking.straggler_factor = 0.25;
  w->periodic.push_back(shrinking);
  int64_t compared = 0;
  for (int64_t g : {1, 2, 3, 7, 16, 24}) {
    const TaskModel m = groupedBy(g);
    const Workload grouped = groupWorkload(*w, m, kNode);
    RealizeFn every = groupRealize(drawInstance, w, m, kNode);
    RealizeFn fast = groupDraw(w, m, kNode);
    for (size_t j = 0; j < w->periodic.size(); j++) {
      for (int64_t k : {0, 1, 5, 29, 700}) {
        const RealizedInstance a = every(grouped.periodic[j], j, k, 11);
        const RealizedInstance b = fast(grouped.periodic[j], j, k, 11);
        ASSERT_EQ(a.stages.size(), b.stages.size());
        for (size_t s = 0; s < a.stages.size(); s++) {
          ASSERT_EQ(a.stages[s].task_durations, b.stages[s].task_durations)
              << "group " << g << " job " << j << " instance " << k << " stage " << s;
          compared += static_cast<int64_t>(a.stages[s].task_durations.size());
        }
        EXPECT_EQ(a.submit, b.submit);
        EXPECT_EQ(a.deadline, b.deadline);
        EXPECT_EQ(a.input_available, b.input_available);
        EXPECT_EQ(a.fails, b.fails);
        EXPECT_EQ(a.index, b.index);
      }
    }
  }
  EXPECT_GT(compared, 10000);
}

}  // namespace
}  // namespace morpheus::sim
