// Eagle-C: the hybrid baseline Phoenix is evaluated against (Thinakaran
// et al., "Phoenix: A Constraint-aware Scheduler for Heterogeneous
// Datacenters", ICDCS'17 §V: "Eagle-C", Eagle with constraint-aware probing),
// as a simulator baseline only — the RM never runs it.
//
// Eagle (Delgado et al., "Job-aware Scheduling in Eagle: Divide and Stick to
// Your Probes", SoCC'16) as modelled here, one worker per task slot (the
// papers' worker = one slot with its own queue):
//  - Partitions: a share `short_partition` of the nodes only ever runs short
//    work; long jobs are placed by a centralized scheduler, first come first
//    served, on idle workers of the general partition (never the short one).
//  - Succinct State Sharing (SSS): the distributed schedulers know which
//    workers run long tasks and probe the others (the short partition and
//    general workers free of long work); only when too few of those meet
//    the job's constraints do the remaining probes wait behind long tasks
//    (the head-of-line blocking at constrained workers that Phoenix targets).
//  - Probing: a short job sends `probe_ratio` probes per task to distinct
//    random workers; late binding: a probe reaching the head of a worker's
//    queue asks its job for a task and is dropped when the job has none left.
//  - Sticky Batch Probing (SBP): a worker that finished a task of job J runs
//    J's next unlaunched task before looking at its queue.
//  - Queue discipline: SRPT among a worker's probes (least remaining job work
//    = unlaunched tasks x expected task duration first), with starvation
//    prevention: a probe passed over `starvation_bound` times runs next (the
//    oldest such first).
//  - "-C": probes go only to workers whose node meets every hard constraint
//    of the job (sched::constraintMatches), and the centralized scheduler
//    places long tasks only on matching workers; a job no worker can ever run
//    is turned away at submission (the same admission control as the Phoenix
//    runs, so the measured populations are equal).
// Simplifications (stated, all in Eagle's favour): SSS is exact (no stale
// view, so no rejected probes and no re-probing), messages take no time.
//
// Phoenix as its paper defines it ("phoenix-hybrid"; Thinakaran et al.,
// ICDCS'17 §IV: "a constraint-aware hybrid scheduler" built on Eagle) is
// this cluster with one change, the order of each worker's probe queue
// (EagleQueueOrder::kCrv). Everything else — partitions, the centralized
// FCFS long-job scheduler, SSS, constraint-aware probing, late binding, SBP,
// the starvation bound — is Eagle-C's, unchanged.
//  - What the paper specifies: a Constraint Resource Vector per constrained
//    resource (demand over supply), an M/G/1 estimate of the waiting time of
//    the tasks needing it, and worker queues reordered with it so short and
//    constrained tasks at constrained workers do not wait behind others.
//  - Our choices (the paper's exact rule, thresholds and CRV refresh period
//    are not in this repository): the CRV is sched::ConstraintResourceVector
//    (crv.h, the scheduler core's), one CRV node per worker with 1 vcore free
//    when idle and 0 when running a task; demand = every task not yet
//    launched (short jobs' and queued long jobs') of 1 vcore and its job's
//    expected duration, so supply is the idle matching workers and the
//    estimate is exact at every decision (no refresh period). A worker picks
//    the probe of least  remaining work - estimated wait  (remaining work =
//    unlaunched tasks x expected task duration, Eagle's SRPT key; estimated
//    wait = CRV M/G/1 wait of the job's hard constraints, ms, 0 without
//    any), ties to the oldest probe, with Eagle's starvation bound kept: a
//    constrained probe whose scarce resource is expected to make it wait
//    runs before probes of work that could run elsewhere, and with no
//    constraint pressure (every estimate 0) the order is Eagle's SRPT.
//  - CRV-aware probe placement (the paper places probes with the CRV; its
//    rule is not in this repository): not part of phoenix-hybrid, whose
//    probes go where Eagle-C's go. Our candidate rule, measured apart as
//    "phoenix-hybrid-placement" (crv_placement): among the workers SSS lets
//    a job probe first (those not running long tasks), it probes first
//    those that have no constrained resource, other than the ones it needs
//    itself, with pending demand (CRV estimate > 0), then the others, then —
//    as in Eagle-C — workers running long tasks, so work that can run
//    elsewhere leaves the scarce workers to the tasks that can only run
//    there. It cost short-job p99 in our runs (docs/experiments/phoenix.md),
//    so the paper's Phoenix is modelled without it.
//  - CRV-aware long placement (crv_long_steering, "phoenix-hybrid-steer";
//    ours, measured apart, not the paper's stated rule): the centralized
//    long-job scheduler is constraint-aware too. An idle general worker
//    that meets a scarce constrained resource under pressure (a hard
//    constraint met by fewer than half of the workers, whose CRV estimate
//    is > 0 now) takes only long tasks that need a hard constraint; an
//    unconstrained long task waits for another worker. The scarce workers
//    then stay free of long work that could run elsewhere, so constrained
//    short probes find them without waiting behind a long task.
//  - Stealing (steal, "phoenix-hybrid-steal" with kCrv, "eagle-c-steal"
//    with kSrpt; ours, after Hawk's work stealing, Eagle's predecessor):
//    a worker left idle with no SBP task and an empty probe queue, before it
//    asks the centralized scheduler for long work, steals the oldest
//    (earliest submitted) short job that still has a task to launch and
//    whose hard constraints it meets, and runs one of its tasks. The job's
//    probes stay where they are (late binding drops them once it has no
//    task left). Stealing is exact (the worker knows every waiting job, as
//    SSS is exact here) and free. It answers what the wait breakdown
//    measured: the tail's probes wait behind long tasks while other
//    matching workers free up and take new long tasks. Not combined with
//    placement, steering or kConstrainedFirst.
//  - kConstrainedFirst ("phoenix-hybrid-no-crv", the ablation): reordering
//    without the estimate — probes of jobs with a hard constraint before the
//    others, SRPT within each group; no CRV is kept.
//
// What any worker-queue order could reach (kOracle, runQueueOrderSearch;
// bench-only, a bound search and never a scheduler: it reads each job's
// future). kOracle serves a worker's probes by a caller-given class per job
// (EagleOptions::oracle_key, lower first), SRPT within a class, then the
// oldest probe; Eagle's starvation bound is not applied (an order, not a
// rule). Everything else is Eagle-C's: partitions, SSS, constraint-aware
// probing, late binding, SBP, the centralized FCFS long scheduler.
//
// Placement bound (EagleOptions::job_bounds, a measurement: no decision
// depends on it). A short job's tasks run only on the workers it probed
// (late binding and SBP keep them there; no stealing), one task at a time
// per worker, and a long task is never preempted. So with the probes it sent
// and the long tasks running on them at its submission (each ending at the
// time it ends in that run), no order of the queues finishes it before
// placementBoundMs of those workers' free times and its tasks' run times.
// The probes depend only on which workers run long tasks at submission, so
// this holds for every queue order that leaves the run's long tasks where
// and when they ran; an order that moves the long tasks changes the bound.
// The p99 of the bounds over the short jobs is then a lower bound of the
// short-job p99 of every such order (order statistics are monotone).
//
// Wait breakdown (EagleOptions::wait_breakdown, a measurement: no decision
// depends on it). For every finished short job: its critical task is the one
// that ended last (the later-started on a tie), started at S on worker w and
// ended at E; the job is seen finished at the tick F >= E. Its response time
// F - submit is split, with no overlap and nothing left over, into
//  - run_s = E - S, the critical task's own run time;
//  - the time in [submit, S] during which w ran a long task (behind_long_*),
//    another short job's task (behind_short_*; SRPT, SBP and starvation
//    order decide these), or the job's own earlier tasks (own_tasks_s: the
//    job had more tasks than probes at free workers);
//  - dispatch_s: w idle in [submit, S] (waiting for the next 1 s round) and
//    F - E;
//  and the behind_* parts split again by whether at that moment some worker
//  meeting the job's constraints was idle after the dispatch round (*_free_s:
//  the job could have run there, but had no probe there, probes being bound
//  at submission) or none was (*_full_s: every matching worker busy, which
//  for a constrained job is the wait "for a constrained worker at all").
//
// Thread-safety: none; one simulation per object.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/clock.h"
#include "common/status.h"
#include "scheduler/policies/crv.h"
#include "sim/phoenix/phoenix_sim.h"

namespace morpheus::sim {

// A worker's probe queue order: Eagle's SRPT, Phoenix's CRV reordering, the
// reordering without the CRV estimate, or a caller-given oracle (above).
enum class EagleQueueOrder { kSrpt, kCrv, kConstrainedFirst, kOracle };

struct EagleOptions {
  double short_partition = 0.1;  // share of nodes reserved for short work, [0, 1)
  int32_t probe_ratio = 2;       // probes per short task (Eagle/Sparrow: 2), >= 1
  int32_t starvation_bound = 5;  // times a probe may be passed over before it runs, >= 0
  EagleQueueOrder order = EagleQueueOrder::kSrpt;  // kSrpt: Eagle-C
  bool crv_placement = false;                      // kCrv only: CRV-aware probe placement (above)
  bool crv_long_steering =
      false;                    // kCrv only: scarce workers refuse unconstrained long tasks (above)
  bool wait_breakdown = false;  // runEagleSim: fill PhoenixSimResult::short_waits (above)
  bool steal = false;  // kSrpt or kCrv alone: idle workers steal waiting short jobs (above)
  // kOracle: the class of job i (index as in runEagleSim) is (*oracle_key)[i];
  // jobs beyond it are in the last class. Required with kOracle.
  std::shared_ptr<const std::vector<int64_t>> oracle_key;
  bool job_bounds = false;  // runEagleSim: fill PhoenixSimResult::job_* (placement bound)
};

// The placement bound of one short job (above), in ms after its submission:
// `free_at` holds, per probed worker, the earliest time (ms after submission,
// >= 0) it can start one of the job's tasks (when the long task it runs
// ends; the submission tick otherwise), `runs` the run times of the job's
// tasks (ms). The job cannot finish before its longest task has run from
// the earliest free time, nor before the workers, each from its free time,
// have together run all its work (the least T with sum max(0, T - free_i) >=
// sum runs, rounded down). The larger of the two; 0 without workers or
// tasks.
int64_t placementBoundMs(std::vector<int64_t> free_at, const std::vector<int64_t>& runs);

// Means over the short jobs whose response time is at least the `q`
// quantile (nearest rank, as percentilesOf) of all of them: the tail the
// p99 (q = 0.99) or p95 sits in. Parts in seconds per job.
struct ShortWaitSummary {
  int64_t jobs = 0;
  int64_t constrained = 0;
  double threshold_s = 0;                // the quantile's response time
  double tasks = 0;                      // mean tasks per job
  double probes_behind_long_share = 0;   // of all their probes
  double long_starts_while_waiting = 0;  // mean per job (ShortJobWait)
  ShortJobWait mean;                     // mean of each part and of response_s
};
ShortWaitSummary summariseShortWaits(const std::vector<ShortJobWait>& waits, double q);

// The policy name of a run with `opts`: "eagle-c", "phoenix-hybrid",
// "phoenix-hybrid-placement" (kCrv with crv_placement),
// "phoenix-hybrid-steer" (kCrv with crv_long_steering),
// "phoenix-hybrid-placement-steer" (both), "phoenix-hybrid-no-crv",
// "phoenix-hybrid-steal" (kCrv with steal), "eagle-c-steal" (kSrpt with
// steal).
const char* eaglePolicyName(const EagleOptions& opts);

// The distributed/centralized scheduling state of an Eagle-C cluster on a
// virtual time line; the caller owns time and task completion (runEagleSim,
// tests).
class EagleCluster {
 public:
  struct Probe {
    size_t job = 0;
    int32_t bypassed = 0;  // times another probe ran before it
  };
  struct Worker {
    sched::NodeAttributes attrs;
    bool short_partition = false;
    std::optional<size_t> running;  // job of the running task
    bool running_long = false;      // SSS: the running task is long
    std::optional<size_t> sticky;   // SBP: job whose task just finished here
    std::deque<Probe> probes;
  };
  struct Started {
    size_t job = 0;
    int32_t worker = 0;
  };

  EagleCluster(EagleOptions opts, uint64_t seed);

  int32_t addWorker(sched::NodeAttributes attrs, bool short_partition);

  // Submits job `job` (ids unique, any order): `tasks` tasks of expected run
  // time `task_duration` that need every hard constraint in `constraints`.
  // Short jobs probe workers now; long ones queue at the centralized
  // scheduler. False (nothing queued) when no worker meets the constraints
  // (for a long job: no worker outside the short partition).
  bool submit(size_t job, bool is_long, int32_t tasks, Millis task_duration,
              const std::vector<sched::PlacementConstraint>& constraints);

  // The task running on `worker` finished.
  void taskFinished(int32_t worker);

  // Every idle worker takes work (SBP, then its probe queue, then — general
  // partition only — the centralized scheduler's long tasks); the tasks
  // started now.
  std::vector<Started> dispatch();

  const Worker& worker(int32_t w) const { return workers_[static_cast<size_t>(w)]; }
  size_t workerCount() const { return workers_.size(); }
  int32_t unlaunched(size_t job) const;
  // kCrv: the CRV's M/G/1 wait estimate of job `job`'s hard constraints now
  // (0 for other orders or an unknown job).
  Millis estimatedWait(size_t job) const;

  // wait_breakdown only. A job's constraint set (an index below
  // matchSetCount()), whether a set has an idle worker now, and the probes a
  // short job sent at submission (all, and to workers running long tasks).
  size_t matchSetOf(size_t job) const;
  size_t matchSetCount() const { return set_list_.size(); }
  bool matchSetHasIdle(size_t set) const { return set_list_[set]->idle > 0; }
  std::pair<int32_t, int32_t> probesSent(size_t job) const;
  // job_bounds only: the workers short job `job` probed at submission.
  const std::vector<int32_t>& probedWorkers(size_t job) const { return jobs_.at(job).probed; }
  // The constraint sets `worker` meets (indices).
  std::vector<size_t> matchSetsOf(int32_t worker) const;

 private:
  struct MatchSet;
  struct JobState {
    bool is_long = false;
    int32_t unlaunched = 0;
    Millis task_duration{0};
    uint64_t seq = 0;                // submission order
    MatchSet* set = nullptr;         // its constraint set (std::map values do not move)
    int32_t probes = 0;              // wait_breakdown: probes sent at submission
    int32_t probes_behind_long = 0;  // ... to workers running a long task
    std::vector<int32_t> probed;     // job_bounds: the workers it probed
  };
  // The workers meeting one set of hard constraints (ascending; kept up to
  // date as workers are added) and the long jobs queued with that set.
  struct MatchSet {
    std::vector<sched::PlacementConstraint> constraints;
    bool constrained = false;  // has a hard constraint
    std::vector<int32_t> workers;
    std::deque<size_t> long_jobs;                       // FIFO
    sched::ConstraintResourceVector::Resolved crv_ids;  // kCrv: estimatedWait's cache
    bool pressured = false;              // kCrv: CRV estimate > 0 at the last probe placement
    size_t index = 0;                    // in set_list_
    std::map<uint64_t, size_t> waiting;  // steal: short jobs with a task left, by seq
    int32_t idle = 0;                    // wait_breakdown: idle workers in `workers`
  };
  // The queue key of a live probe's job (lower runs first).
  int64_t probeKey(const JobState& j) const;
  // kOracle: job `job`'s class (EagleOptions::oracle_key).
  int64_t oracleClass(size_t job) const;

  MatchSet& matching(const std::string& key, const std::vector<sched::PlacementConstraint>& cs);
  std::vector<int32_t> probeTargets(size_t job, const std::vector<int32_t>& matching);
  std::optional<size_t> takeProbe(Worker& w);
  std::optional<size_t> nextLong(int32_t worker, bool constrained_only);
  // steal: the oldest waiting short job `worker` meets.
  std::optional<size_t> stealable(int32_t worker) const;
  // crv_long_steering: `worker` meets a scarce constrained set whose CRV
  // estimate is > 0 now.
  bool scarcePressured(int32_t worker);
  void start(int32_t worker, size_t job, std::vector<Started>& out);
  // wait_breakdown: `worker` became idle (+1) or busy (-1).
  void idleChanged(int32_t worker, int32_t delta);

  EagleOptions opts_;
  uint64_t seed_;
  // kCrv only: demand = unlaunched tasks, supply = idle workers (one CRV
  // node each, crv_nodes_[worker]).
  std::unique_ptr<sched::ConstraintResourceVector> crv_;
  std::vector<sched::ConstraintResourceVector::NodeSlot*> crv_nodes_;
  // kCrv with crv_placement or crv_long_steering: per worker, the
  // constrained sets it meets.
  std::vector<std::vector<MatchSet*>> worker_sets_;
  std::vector<Worker> workers_;
  std::unordered_map<size_t, JobState> jobs_;
  std::set<int32_t> idle_;  // workers running nothing
  uint64_t next_seq_ = 0;
  // By constraint set. The centralized scheduler's FIFO of long jobs is the
  // union of the sets' queues in submission order (seq).
  std::map<std::string, MatchSet> matching_;
  std::vector<MatchSet*> set_list_;  // by MatchSet::index
  // wait_breakdown or steal: per worker, the sets it meets.
  std::vector<std::vector<MatchSet*>> member_of_;
  bool members_ = false;  // member_of_ and MatchSet::idle kept
};

// Runs the workload of `opts` (phoenix_sim.h; the same jobs and nodes as
// runPhoenixSim) under Eagle-C: every node gives min(vcores, memory / 2 GiB)
// workers; the short partition is short_partition of the nodes spread evenly
// over the node list (inShortPartition; for trace mixes the caller passes
// opts.short_partition, where short_partition_first kinds put their nodes);
// 1 s dispatch rounds, skipped when nothing arrived, finished or started
// since the last (it would start nothing). policy = eaglePolicyName(eagle).
// INVALID_ARGUMENT naming the field for bad options.
Result<PhoenixSimResult> runEagleSim(const PhoenixSimOptions& opts, const EagleOptions& eagle);

// What worker-queue orders reach with Eagle-C's placement rules (kOracle,
// above; bench-only): runs the workload of `opts` under `eagle` (its
// partition and probe ratio; order and oracle_key are set here, steal and
// the CRV options must be off) with these queue orders, each with
// job_bounds:
//  - "srpt": Eagle-C itself (its SRPT key and starvation bound);
//  - "edf": every job's class is its floor finish (submission + its longest
//    task), so the job that can finish first is served first;
//  - "sacrifice": edf's classes, but the 0.9% of short jobs with the most
//    work (tasks x expected duration) after every other job: a p99 lets 1%
//    of the jobs be late, and these are the ones that delay others most;
//  - "repair-k", k = 1..repair_passes: sacrifice's classes, each other short
//    job at or above the previous pass's short-job p99 moved earlier by what
//    it took beyond that pass's p95 (cumulative over the passes), so the jobs
//    that formed the tail are served sooner and the others keep their
//    deadlines.
// The best order found is the pass of least short-job p99: not a bound,
// since other orders may do better. What bounds every order is the
// placement bound of a pass (above), under that pass's long tasks.
// Returns the best pass's result with policy "queue-order-bound" and every
// pass in `passes`. INVALID_ARGUMENT naming the field for bad options.
Result<PhoenixSimResult> runQueueOrderSearch(const PhoenixSimOptions& opts,
                                             const EagleOptions& eagle, int32_t repair_passes);

}  // namespace morpheus::sim
