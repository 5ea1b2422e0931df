// Fluid ad-hoc work for morpheus-sim's `--task-model fluid` (for
// scale): the ad-hoc jobs of one queue and one container shape as a pool of
// work, not as tasks. Each stage is ONE record — its task count, task
// duration and remaining work in task-milliseconds — and the pool advances
// in fixed time steps: completions are batched per step.
//
// How it runs (cluster_sim.cc holds the scheduler side): the pool is one app
// of the real scheduler in the jobs' ad-hoc queue. Every step the simulator
// calls advance() with the containers that app holds, then asks for
// demand() containers in total and releases what it holds beyond that. So
// the queue's fair share, reservation lending and preemption of ad-hoc work
// by guarantees all come from the real scheduler; only the inside of the
// ad-hoc load is fluid. Periodic jobs keep going through the task-level path.
//
// Model (the README "morpheus-sim" lists the fidelity this costs):
// - the held containers are shared max-min fairly among the live jobs, each
//   capped at its demand (what DRF gives apps of one container shape); inside
//   a job, its ready stages are served in stage order;
// - a ready stage of n tasks of duration d that has run for e so far
//   demands min(n, ceil(remaining work / (d - e))) while e < d (its tasks all
//   still run), then min(n, ceil(remaining work / d)) (whole tasks left),
//   and never fewer than the containers it ran on in the last step; a
//   stage given r containers for a step of dt does r x dt of work. So n
//   containers finish it in d, and c < n containers in about n x d / c;
// - a stage is done when its work is; its dependents become ready at that
//   step's end; a job ends at the end of the step its last stage finished
//   in. Jobs submitted during a step start at the next step;
// - a preempted container loses no work (a killed task loses its progress in
//   the task model);
// - lastCompletions() tells how many tasks' worth of work ended in the step:
//   the simulator returns that many containers to the scheduler while other
//   apps wait for room (the turnover of ended tasks in the task model).
// Deterministic: no randomness, fixed iteration order (submission order).
#pragma once

#include <cstdint>
#include <vector>

#include "common/clock.h"
#include "sim/workloads/workload.h"

namespace morpheus::sim {

struct FluidFinished {
  int64_t job = 0;  // the index given to add()
  TimePoint end;
};

class FluidPool {
 public:
  // Adds job `index` with `stages` (tasks, task_duration, depends_on; stage
  // dependencies refer to earlier stages or any stage, acyclic as validated
  // workloads are). It takes part from the next advance() on. A job with no
  // work ends at that advance().
  void add(int64_t index, const std::vector<SimStage>& stages);

  // Containers the live jobs' ready stages can use now (sum of demands).
  int64_t demand() const;

  // Runs one step of length dt ending at `now` with `held` containers (>= 0)
  // and returns the jobs that finished in it, in the order they were added.
  std::vector<FluidFinished> advance(TimePoint now, Millis dt, int64_t held);
  // The same with the containers held averaged over the step (>= 0, may be
  // fractional): a pool whose capacity changed inside the step does the
  // work of its time-weighted mean.
  std::vector<FluidFinished> advanceMean(TimePoint now, Millis dt, double held);

  // Tasks that ended in the last advance(): the work done in it, in task
  // durations, summed over stages (a fluid figure: may be fractional).
  double lastCompletions() const { return last_completions_; }

  // Jobs added and not finished, in the order they were added.
  std::vector<int64_t> unfinished() const;
  size_t live() const { return jobs_.size(); }

 private:
  struct Stage {
    double work_ms = 0;  // remaining, in task-milliseconds
    int64_t duration_ms = 1;
    int64_t tasks = 0;
    int64_t elapsed_ms = 0;    // time ready and run so far
    int64_t last_running = 0;  // containers it ran on in the last step (rounded up)
    int64_t unmet = 0;         // dependencies not done
    bool done = false;
    std::vector<size_t> dependents;
  };
  struct Job {
    int64_t index = 0;
    std::vector<Stage> stages;
    size_t stages_left = 0;
  };

  static int64_t stageDemand(const Stage& s);
  static int64_t jobDemand(const Job& j);
  // Max-min fair shares of `held` for demands `want` (same order).
  static std::vector<double> waterFill(const std::vector<int64_t>& want, double held);
  // Runs `alloc` containers for dt on the job's ready stages (stage order);
  // true when the job's last stage finished.
  static bool runJob(Job& job, double alloc, Millis dt, double& completions);
  static void finishStage(Job& job, size_t s);

  std::vector<Job> jobs_;  // live, in the order added
  double last_completions_ = 0;
};

}  // namespace morpheus::sim
