// The Carbyne evaluation's setup (OSDI'16 §5) driven through the real
// scheduler core: a cluster of carbyneServer() nodes (six resources), query
// DAGs from sim/workloads/carbyne_dags.h, one ad-hoc leaf under the policy
// being measured, and each job's AM as Tez runs it: one ask per runnable
// stage at priority = the stage's breadth-first index, a stage runnable
// once each parent's every task has finished (a barrier), and its remaining
// DAG reported to the scheduler (Scheduler::reportDag) on arrival and at
// every task end. Event driven: task ends and arrivals; after all events of
// an instant every node with room gets a heartbeat (nodeUpdate), starting
// at a node that rotates per instant so no node is always offered first.
//
// The baselines the paper compares against, as bench-local policies
// plugged into the same core (carbyne_policy.h is the one under test):
//  - DRF + breadth-first: sched::DrfOrderingPolicy (YARN's DRF across jobs;
//    inside a job the asks' priority is Tez's breadth-first order), seeing
//    the six resources (`drf`) or, as YARN's DominantResourceCalculator,
//    memory and vcores only (`drf2`: disk and network over-subscribed, tasks
//    slowed, PaperRun::scheduler_sees_bandwidth); `drfcp`, DRF with the
//    stages of a job critical path first instead (a diagnostic);
//  - Tetris (SIGCOMM'14 §3, fairness knob 0): packing across every job's
//    runnable tasks (CrossAppPacker), alignment + eps x an SRTF term;
//  - SJF by critical path: jobs by the critical path of their remaining DAG
//    (with unlimited resources), shortest first; an upper bound on the
//    average JCT the paper's Carbyne is measured against; and SJF by
//    remaining work (`sjfw`), a second reference;
//  - carbyne0: Carbyne before cross-job leftover packing (carbyne_v0.h).
//
// Single-threaded; one run allocates its own Scheduler.
#pragma once

#include <array>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/resource.h"
#include "common/status.h"
#include "scheduler/ordering_policy.h"
#include "sim/workloads/workload.h"

namespace morpheus::bench {

// Tetris with fairness knob 0 (Grandl et al., SIGCOMM'14 §3.1-3.3): every
// job's runnable tasks compete on each node by the alignment of their
// demand with the node's free resources plus eps x (w0 / (w0 + the job's
// remaining work)), the SRTF term that favours jobs with little work left
// (remaining work: sum of tasks left x duration x vcores, in core-seconds;
// `w0` scales it, the average job's work in the bench).
class TetrisPolicy final : public sched::QueueOrderingPolicy,
                           public sched::DagPlanner,
                           public sched::AppOrdering,
                           public sched::CrossAppPacker {
 public:
  TetrisPolicy(double eps, double w0_core_s) : eps_(eps), w0_(w0_core_s) {}
  std::string_view name() const override { return "tetris"; }
  double score(const Resource& used, double weight, const Resource& cluster) const override;
  sched::AppHint planApp(const std::vector<sched::DagStage>& dag,
                         const Resource& fair_share) const override;
  double appScore(const sched::AppInput& in) const override;
  double packFrom() const override;
  double packScore(const sched::AskInput& in) const override;

 private:
  double eps_, w0_;
};

// SJF by critical path: an app scores the critical path of its remaining
// DAG (each stage one wave of its task duration), in seconds. With a
// `server`, SJF by remaining work instead (`sjfw`): the sum over the tasks
// left of duration x the task's dominant share of one server, the job's
// size in server-seconds of its busiest resource (shortest remaining work
// first; a job short in time may still be wide).
class SjfPolicy final : public sched::QueueOrderingPolicy,
                        public sched::DagPlanner,
                        public sched::AppOrdering,
                        public sched::UserOrdering {
 public:
  SjfPolicy() = default;
  explicit SjfPolicy(const Resource& server) : by_work_(true), server_(server) {}
  std::string_view name() const override { return by_work_ ? "sjfw" : "sjf"; }
  double score(const Resource& used, double weight, const Resource& cluster) const override;
  sched::AppHint planApp(const std::vector<sched::DagStage>& dag,
                         const Resource& fair_share) const override;
  double appScore(const sched::AppInput& in) const override;
  // Users by their best app (one job per user in the bench): SJF across jobs.
  double userScore(const Resource& used, double weight, const Resource& cluster,
                   double best_app) const override;

 private:
  bool by_work_ = false;
  Resource server_;
};

struct PaperRun {
  int64_t nodes = 100;
  Resource node;      // sim::carbyneServer()
  uint64_t seed = 1;  // with `run`, draws each task's realised duration
  int64_t run = 0;
  double duration_cv = 0.1;  // realised = nominal x lognormal noise (the AM reports nominal)
  Millis fairness_window{60000};
  // false: the scheduler sees memory and vcores only, of nodes and asks (as
  // YARN's DRF, which knows no disk or network), so it may place more
  // bandwidth on a node than it has. Either way the run models what
  // over-subscription costs: every task on a node whose running tasks ask
  // more of a bandwidth than the node has progresses at capacity / demand of
  // its most over-subscribed one (fluid sharing, Tetris SIGCOMM'14 §2), its
  // end moving as tasks come and go. With bandwidth seen (and reserved) no
  // node is ever over-subscribed and every task runs at its duration.
  bool scheduler_sees_bandwidth = true;
  // Inside a job, asks by Tez's breadth-first order (false), or critical
  // path first (true: by each stage's longest path to the job's end, the
  // order of Carbyne's own plan); a diagnostic of what the breadth-first
  // order costs DRF.
  bool critical_path_first = false;
  // Record CarbyneLedgerWindow figures (PaperResult::ledger) for a policy
  // that plans (a DagPlanner): what its plans were given and what they
  // freed, read through Scheduler::appHint after every report. Costs a
  // second plan per report and a pass over the active jobs per event.
  bool ledger = false;
  // Diagnostic (with `ledger`): after every report the AM re-ranks its asks
  // so the stages the plan needs now beyond what runs of them come first
  // (breadth-first among them), the others after, so a job below its need
  // spends its DRF-tier grants on the tasks its plan needs now.
  bool needed_first = false;
  // The scheduler's node reservations (sched::NodeReservationOptions; the
  // bounds of `carbyne`'s, `enabled` for `drf-resv` and `carbyne-resv-all`):
  // a node whose free room the next app in the leaf's order (Carbyne: the
  // leftover job with the least remaining time) cannot use is held for it
  // until its task fits.
  sched::NodeReservationOptions node_reservation;
  // Called before each report of job `job` (its index in the jobs) at
  // simulated time `now_ms`: a stateful bench policy's hook
  // (`carbyne-deadline`). Empty: nothing.
  std::function<void(size_t job, int64_t now_ms)> before_report;
};

// Over one window (PaperRun::fairness_window), time averages of sums over
// the active jobs of dominant shares of the cluster (fractions; the share
// is an equal split, so `share` is about 1). A job is in the DRF tier
// while its hint's need does not fit in what it holds (every resource),
// else in the leftover tier (carbyne_policy.h).
struct CarbyneLedgerWindow {
  double start_s = 0;
  double jobs = 0, drf_jobs = 0, left_jobs = 0;
  double capped_jobs = 0;  // jobs whose need is their whole share (no slack found)
  double share = 0;        // the share the plans were given (Scheduler's equal split)
  double need = 0;         // the plans' needs
  double start = 0;        // what the plans' forward packing starts now (CarbynePlan::start)
  // DRF's progressive filling level among the active jobs given what each
  // can use now (drfFairLevel, at least the equal split): the dominant
  // share DRF gives a job that could use more, and the need the same plan
  // finds at that share (the cluster scaled by it).
  double share_drf = 0, need_at_drf = 0;
  // The need the same plan finds when only tasks whose latest start is now
  // (not within their first duration) must start now.
  double need_strict = 0;
  double held = 0;           // what the jobs hold
  double drf_held = 0;       // held by DRF-tier jobs
  double drf_over_need = 0;  // DRF-tier jobs: held beyond their need's dominant share
  double drf_short = 0;      // DRF-tier jobs: their need's dominant share not yet held
  double left_need = 0;      // leftover-tier jobs' needs
  double lent = 0;           // leftover-tier jobs: held beyond their need (the leftover lent)
  double vcores = 0;         // allocated vcores over the cluster's
  double demand_vcores = 0;  // vcores of running + runnable unstarted tasks, over the cluster's
  // Leftover-tier jobs' estimated remaining seconds: plain mean, and the
  // mean weighted by what each was lent (below the plain mean: the
  // leftover goes to the jobs closest to completion).
  double left_remaining_s = 0, lent_remaining_s = 0;
  // The quarter of the leftover-tier jobs with the least estimated remaining
  // time (the ones SRTF serves first): what they are lent, how many of them
  // have runnable tasks not started, and those tasks' dominant share.
  double lent_shortq = 0, shortq_waiting_jobs = 0, shortq_waiting = 0;
  int64_t reports = 0, plan_mismatches = 0;  // bench plan at the bench's share != the hint's
  double reserved_nodes = 0;  // nodes reserved for an app (PaperRun::node_reservation), time avg
  // The cluster's vcores (fractions, time averages): held by DRF-tier jobs;
  // held by leftover-tier jobs up to their need's vcores and beyond it (the
  // leftover lent); of the lent, held by a job while a leftover-tier job
  // with less estimated remaining time had runnable tasks not started (not
  // the SRTF-first). Idle is 1 - vcores.
  double v_drf = 0, v_left_need = 0, v_lent = 0, v_lent_behind = 0;
  // Every active job (planned or not), by its remaining work (tasks not
  // finished x duration x the task's dominant share of a server, as `sjfw`
  // ranks) in five equal groups, least first: the cluster's vcores each
  // group holds and the vcores of its runnable tasks not started.
  std::array<double, 5> v_fifth{}, v_fifth_waiting{};
};

struct PaperResult {
  std::vector<double> jct_s;  // per job, in workload order
  // PaperRun::ledger, per job: the hint's estimated remaining time at its
  // first report (its completion estimate on arrival), seconds; -1 without.
  std::vector<double> est_s;
  double makespan_s = 0;  // first submit to last finish
  // Jain's index per 60 s window, averaged over the windows, over the jobs
  // active in the window: `jain` of each job's dominant share (integrated
  // over the window), `jain_fair` of each job's share over its fair share
  // (Jain, Chiu, Hawe 1984 normalise each allocation by the fair one): the
  // DRF allocation of the cluster among the active jobs given what each can
  // use now (running tasks plus the unstarted tasks of its runnable stages),
  // integrated over the window. A job that cannot use its equal share is not
  // counted as short-changed by `jain_fair`; it is by `jain`.
  double jain = 0;
  double jain_fair = 0;
  // Time averages over first submit to last finish: allocated vcores over
  // the cluster's, the busiest of the six dimensions, tasks runnable but not
  // started, jobs in the system.
  double util_vcores = 0;
  double util_busiest = 0;
  double pending_tasks_avg = 0;
  double active_jobs_avg = 0;
  int64_t tasks = 0;
  int64_t grants = 0;
  std::vector<CarbyneLedgerWindow> ledger;  // PaperRun::ledger
  // PaperRun::ledger, per grant: to a job in the DRF tier or the leftover
  // tier (as it stood before the grant); of the leftover-tier grants, how
  // many went to a job while a leftover-tier job with a shorter estimated
  // remaining time had a runnable task that fitted the node's free room
  // (an SRTF inversion), and the chosen job's mean rank among those that
  // had one (0: the shortest, 1: the longest).
  // grants_behind: leftover-tier grants while a leftover-tier job with less
  // remaining time had a runnable task not started, fitting the node or
  // not (grants_behind - grants_inverted: none of its tasks fitted).
  int64_t grants_drf = 0, grants_left = 0, grants_inverted = 0, grants_behind = 0;
  double grants_left_rank = 0;
  // Of the DRF-tier grants: a task of a stage the plan needs now beyond
  // what the job runs of it, and a task of another stage (one with slack)
  // while a needed stage still had tasks not started.
  int64_t grants_drf_needed = 0, grants_drf_slack_first = 0;
  // Time average of the nodes reserved for an app (PaperRun::node_reservation).
  double reserved_nodes_avg = 0;
};

// DRF's fair level among jobs whose demands are `demand` (per job, the six
// dimensions as fractions of the cluster): the largest dominant share L such
// that giving each job min(L, its dominant demand), its demand vector scaled
// to that, fits the cluster in every dimension (progressive filling, Ghodsi
// et al. NSDI'11; every task asks for all six, so the first dimension to
// fill stops every job). +infinity when all demands fit together. Pure.
double drfFairLevel(const std::vector<std::array<double, 6>>& demand);

// Runs `jobs` (sorted by submit) to completion under `policy` on the leaf.
// INVALID_ARGUMENT naming the field for an empty cluster or a task that fits
// no node.
Result<PaperResult> runPaper(const std::vector<sim::AdhocJob>& jobs,
                             std::shared_ptr<const sched::QueueOrderingPolicy> policy,
                             const PaperRun& opts);

// The bench's --scenario paper (bench_carbyne.cc hands over its argv).
int paperMain(int argc, char** argv);

}  // namespace morpheus::bench
