#include "sim/engine/task_model.h"

#include <algorithm>
#include <utility>
#include <vector>

namespace morpheus::sim {

namespace {

int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Whether periodic jobs are grouped; ad-hoc jobs are only in "grouped".
bool grouped(const TaskModel& m) { return m.name == "grouped" || m.name == "fluid"; }

void groupStages(std::vector<SimStage>& stages, int64_t g) {
  for (auto& st : stages) {
    st.tasks = ceilDiv(std::max<int64_t>(0, st.tasks), g);
    st.task_resource = st.task_resource * g;
  }
}

}  // namespace

Status validateTaskModel(const TaskModel& model) {
  if (model.name != "task" && model.name != "grouped" && model.name != "fluid") {
    return invalidArgument("task-model",
                           "unknown model '" + model.name + "' (task, grouped, fluid)");
  }
  if (model.group < 1) return invalidArgument("task-group", "must be >= 1");
  if (model.fluid_step < Millis(1000)) return invalidArgument("fluid-step", "must be >= 1 s");
  return Status::ok();
}

Millis fluidAdhocStep(const TaskModel& model) {
  return model.name == "fluid" ? model.fluid_step : Millis(0);
}

int64_t jobGroup(const TaskModel& model, const std::vector<SimStage>& stages,
                 const Resource& node_size) {
  if (!grouped(model)) return 1;
  int64_t g = model.group;
  for (const auto& st : stages) {
    if (st.task_resource.isZero()) continue;
    g = std::min(g, node_size.countFitting(st.task_resource));
  }
  return std::max<int64_t>(1, g);
}

Workload groupWorkload(const Workload& workload, const TaskModel& model,
                       const Resource& node_size) {
  Workload w = workload;
  if (!grouped(model)) return w;
  for (auto& job : w.periodic) {
    const int64_t g = jobGroup(model, job.stages, node_size);
    groupStages(job.stages, g);
    job.user_containers = ceilDiv(std::max<int64_t>(1, job.user_containers), g);
    job.user_container_resource = job.user_container_resource * g;
  }
  if (model.name != "grouped") return w;
  for (auto& job : w.adhoc) groupStages(job.stages, jobGroup(model, job.stages, node_size));
  return w;
}

RealizeFn groupRealize(RealizeFn inner, std::shared_ptr<const Workload> original,
                       const TaskModel& model, const Resource& node_size) {
  if (!grouped(model)) return inner;
  return [inner = std::move(inner), original = std::move(original), model, node_size](
             const PeriodicJob&, size_t job_index, int64_t k, uint64_t seed) {
    const PeriodicJob& job = original->periodic[job_index];
    RealizedInstance inst = inner(job, job_index, k, seed);
    const auto g = static_cast<size_t>(jobGroup(model, job.stages, node_size));
    for (auto& st : inst.stages) {
      std::vector<Millis> out;
      out.reserve(st.task_durations.size() / g + 1);
      for (size_t i = 0; i < st.task_durations.size(); i += g) {
        const auto end = st.task_durations.begin() +
                         static_cast<std::ptrdiff_t>(std::min(i + g, st.task_durations.size()));
        out.push_back(
            *std::max_element(st.task_durations.begin() + static_cast<std::ptrdiff_t>(i), end));
      }
      st.task_durations = std::move(out);
    }
    return inst;
  };
}

RealizeFn groupDraw(std::shared_ptr<const Workload> original, const TaskModel& model,
                    const Resource& node_size) {
  if (!grouped(model)) return drawInstance;
  std::vector<int64_t> group;
  group.reserve(original->periodic.size());
  for (const auto& job : original->periodic) {
    group.push_back(jobGroup(model, job.stages, node_size));
  }
  return [original = std::move(original), group = std::move(group)](
             const PeriodicJob&, size_t job_index, int64_t k, uint64_t seed) {
    return drawGroupedInstance(original->periodic[job_index], job_index, k, seed, group[job_index]);
  };
}

}  // namespace morpheus::sim
