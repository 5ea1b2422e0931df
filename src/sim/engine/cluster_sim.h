// One simulated run of the cluster over [from, to) (used by
// sim/engine/engine.h for the training phase and for each strategy's evaluation).
// The real sched::Scheduler holds the simulated nodes, apps and reservation
// queues; a planner::Planner (when any job is planned) holds the reservations
// and the DRA extras; a reprovision::ReprovisionPolicy (when configured)
// reviews every reservation with running apps once per plan step, exactly as
// the RM's DraMonitor does (rm/core/dra_monitor.cc, rm/core/reservation_manager.cc
// reprovision()).
//
// Tasks are containers held for their realised duration; a stage asks for its
// tasks when every stage it depends on has finished. A preempted task is
// killed and asked for again (its work is lost).
#pragma once

#include <atomic>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/resource.h"
#include "planner/reservation.h"
#include "sim/engine/engine.h"
#include "sim/engine/report.h"
#include "sim/workloads/workload.h"
#include "store/provenance/provenance_store.h"

namespace morpheus::sim {

// What a run leaves for SLO inference and the skyline LP (training only).
struct History {
  // Per periodic job (workload order): its successful runs, by submit.
  std::vector<std::vector<store::RunRecord>> runs;
  // Per periodic job: the runtime (end - start) of each successful run.
  std::vector<std::vector<Millis>> runtimes;
  // Every job's own file events, per job; and all events on any path, by time.
  std::vector<std::vector<store::FileEvent>> own_events;
  std::vector<store::FileEvent> path_events;
  // The consumers' runs (sim/workloads/workload.h consumerRun), by submit: readers'
  // run records for SLO inference (T_need).
  std::vector<store::RunRecord> consumer_runs;
  // Per periodic job: each stage's task count in its last successful run, as
  // its AM reported the DAG (input growth included); empty before any run.
  std::vector<std::vector<int64_t>> last_stage_tasks;
};

// How one periodic job is provisioned during a run.
struct JobProvision {
  enum class Kind {
    kNone,     // no reservation: the job runs in its ad-hoc queue
    kPlanned,  // `def` is submitted to the planner when the run starts
    // Morpheus §6, a period not dividing the LCM (day): `def` is the
    // template of instance 0 (window [a, d] after the epoch, period = the
    // job's own); instance k gets a one-off reservation (period 0) of the
    // window shifted by k x period, submitted once its window start is
    // within RunSetup::one_off_lead and not yet open, and submitted again at
    // every check (RunSetup::one_off_check) while the plan refuses it and
    // its window has not opened, as morpheus-inference's submitDueInstances
    // does. One-offs are planned on the residual of every periodic
    // reservation (periodic jobs have strict priority). No user fallback.
    kPerInstance,
  };
  Kind kind = Kind::kNone;
  planner::ReservationDefinition def;
  int64_t budget_container_ms = 0;  // DRA budget per instance (planned only)
  // Planned strategies: when `def` is absent or the planner refuses it, the
  // user's own request (user_containers over [submit, deadline) of each
  // period) is submitted instead, after every job's `def` was; the job runs
  // unreserved only if that fails too.
  std::optional<planner::ReservationDefinition> fallback;
  // A reshaped skyline's compression in the order the runs showed
  // (inference/model/skyline_reshape.h), submitted right after `def` when the
  // planner refuses `def`, as morpheus-inference does.
  std::optional<planner::ReservationDefinition> in_order;
};

struct RunSetup {
  TimePoint from;
  TimePoint to;
  std::vector<JobProvision> provisions;  // parallel to workload.periodic
  std::string agent = "lowcost";         // planner agent
  std::string dra;                       // "" = none, else reprovision::makePolicy name
  bool record_history = false;
  // A segment of a segmented training or evaluation (ExperimentOptions::
  // train_segments, eval_segments): only the runs of instances submitted in
  // [record_from, record_until) enter the history, or, in an evaluation, are
  // judged; those submitted before record_from (the segment's warm-up) or
  // after record_until are simulated and not recorded. In an evaluation the
  // same span also bounds the ad-hoc jobs reported (by submit), the plan
  // steps of the utilisation and the preemptions and one-offs counted (by
  // when they happen; unreserved one-offs by their window's start). With
  // record_until set, the run ends at the first instant at or after it at
  // which every periodic instance submitted before it has ended (or at
  // `to`), so the runs straddling record_until are recorded whole.
  std::optional<TimePoint> record_from;
  std::optional<TimePoint> record_until;
  // Admit the strategy's own reservations smallest instance first (a batch
  // of derived reservations, as Morpheus submits after a refit) instead of
  // workload order (users submitting their own requests, the baseline).
  bool admit_smallest_first = false;
  // A planned job whose whole recurring reservation the plan refuses gets
  // a one-off reservation per instance instead, as a kPerInstance job does
  // (morpheus-inference's acceptPerInstance), if the plan holds at least one
  // of the instances due when the run starts; otherwise its user fallback
  // (the daemon keeps such a proposal pending). As Morpheus's own
  // reservations, not the users' (the baseline's requests stay whole or
  // refused).
  bool admit_per_instance = false;
  // How far ahead the one-offs of per-instance jobs are submitted
  // (morpheus-inference's inference.one-off-lead-time, default one day).
  Millis one_off_lead{86'400'000};
  // How often refused one-offs are submitted again and newly due ones
  // submitted (inference.one-off-check-interval, default one minute).
  Millis one_off_check{60'000};
};

struct RunOutput {
  StrategyResult result;  // name left empty; extra holds unreserved_jobs, events, ...
  History history;        // filled when record_history
  int64_t events = 0;     // events processed
  bool interrupted = false;
};

// Runs the cluster. INVALID_ARGUMENT for bad options (planner/scheduler
// validation, naming the field).
Result<RunOutput> simulateRun(const Workload& workload, const ExperimentOptions& options,
                              const RunSetup& setup, const std::string& phase,
                              const ProgressFn& progress, const std::atomic<bool>* stop);

// The container unit of a job: the largest task resource of its stages (by
// memory x vcores), as the RM's containerUnit() takes the largest capability.
Resource jobUnit(const std::vector<SimStage>& stages);

// Worst-case completion (Morpheus §9): list-schedules the instance's tasks
// (stage order, dependencies respected, each task weighing
// task_resource.countCovering(unit) units) on `capacity(t)` units — the
// capacity of the step containing t — from `start`. Returns the completion
// time if it is <= deadline, nullopt otherwise. Running tasks are never cut
// when capacity drops.
std::optional<TimePoint> worstCaseCompletion(const std::vector<SimStage>& stages,
                                             const RealizedInstance& inst, const Resource& unit,
                                             TimePoint start, TimePoint deadline, Millis step,
                                             const std::function<int64_t(TimePoint)>& capacity);

}  // namespace morpheus::sim
