// morpheus-sim's task models: how finely tasks are
// simulated. A choice of fidelity against speed, made explicitly by the user
// (`morpheus-sim run --task-model`, `bench_sim --task-model`).
//
// - task (the default): every task is one container and one task-end event.
//   The target scenario (50,000 nodes, 30 days, 10,000 periodic jobs plus the
//   SWIM ad-hoc load) is ~9e10 task events this way: hours, not minutes.
// - grouped: up to `group` identical tasks of one stage are simulated as ONE
//   container of `group` x the task's resource, held until the slowest of them
//   ends (they run side by side in it). A job's stages, its realised instances
//   and its user provisioning are all rewritten in these grouped containers,
//   so the planner, the skyline LP, the scheduler and DRA see a consistent
//   workload whose containers are `group` times coarser; events fall by up to
//   `group` x. What it changes (see README "morpheus-sim", fidelity table):
//   stage widths are rounded up to whole groups (a stage of 5 tasks in groups
//   of 4 holds 8 tasks' worth), a group holds its capacity until its slowest
//   member ends (stragglers cost more), a group needs `group` x the room on
//   one node (more fragmentation), and preemption kills a whole group.
//   The group of a job is min(group, the tasks of its largest task resource a
//   node holds), so every grouped container still fits a node.
// - fluid: ad-hoc jobs are fluid work (sim/engine/fluid_adhoc.h): per ad-hoc queue
//   and container shape one scheduler app holds containers for the ad-hoc
//   load, and each stage is one record with a task count and remaining work,
//   advanced every `fluid_step` (completions batched per step). Periodic jobs
//   keep the real planner, scheduler, reservation queues and DRA, grouped by
//   `group` as in the grouped model (`--task-group 1` keeps them task-level).
//   Ad-hoc events fall from one per task to about one per held container
//   change and step.
//
// Pure functions of their inputs: determinism of the engine is kept.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "common/resource.h"
#include "common/status.h"
#include "sim/engine/engine.h"
#include "sim/workloads/workload.h"

namespace morpheus::sim {

struct TaskModel {
  // "task", "grouped" or "fluid".
  std::string name = "task";
  // grouped (all jobs) and fluid (periodic jobs): the most tasks of one stage
  // simulated as one container (tasks, >= 1). Default 8: at the default
  // 16-vcore nodes and 1-vcore tasks, two grouped containers per node.
  int64_t group = 8;
  // fluid only: the step at which the fluid ad-hoc pools advance, ask and
  // release (ms, >= 1000: the NM heartbeat). Default 10 s.
  Millis fluid_step{10000};
};

// INVALID_ARGUMENT naming "task-model" (an unknown name), "task-group"
// (< 1) or "fluid-step" (< 1 s).
Status validateTaskModel(const TaskModel& model);

// ExperimentOptions::fluid_adhoc_step for the model: fluid_step for fluid,
// else 0 (ad-hoc jobs simulated task by task).
Millis fluidAdhocStep(const TaskModel& model);

// The group size used for `stages` on nodes of `node_size`: 1 for the task
// model, else min(model.group, the fewest tasks of any stage's resource that
// fit a node), at least 1.
int64_t jobGroup(const TaskModel& model, const std::vector<SimStage>& stages,
                 const Resource& node_size);

// The workload as the model simulates it (a copy; the task model returns it
// unchanged): per job, every stage's tasks become ceil(tasks / g) containers
// of g x task_resource, and a periodic job's user_containers become
// ceil(user_containers / g) of g x user_container_resource. The fluid model
// groups periodic jobs only (ad-hoc jobs stay as given: their pool is fluid).
Workload groupWorkload(const Workload& workload, const TaskModel& model, const Resource& node_size);

// The realisation for the grouped workload: `inner` draws instance k of the
// ORIGINAL job number job_index (so the draws are those of the task model),
// then each stage's task durations are grouped in consecutive runs of g, each
// group lasting as long as its slowest member. `original` must outlive the
// returned function. The task model returns `inner` unchanged.
RealizeFn groupRealize(RealizeFn inner, std::shared_ptr<const Workload> original,
                       const TaskModel& model, const Resource& node_size);

// groupRealize(drawInstance, ...) by drawGroupedInstance (the same
// durations, fewer draws), each job's group computed once.
RealizeFn groupDraw(std::shared_ptr<const Workload> original, const TaskModel& model,
                    const Resource& node_size);

}  // namespace morpheus::sim
