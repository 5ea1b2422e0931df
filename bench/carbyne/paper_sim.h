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
//    inside a job the asks' priority is Tez's breadth-first order);
//  - Tetris (SIGCOMM'14 §3, fairness knob 0): packing across every job's
//    runnable tasks (CrossAppPacker), alignment + eps x an SRTF term;
//  - SJF by critical path: jobs by the critical path of their remaining DAG
//    (with unlimited resources), shortest first; an upper bound on the
//    average JCT the paper's Carbyne is measured against;
//  - carbyne0: Carbyne before cross-job leftover packing (carbyne_v0.h).
//
// Single-threaded; one run allocates its own Scheduler.
#pragma once

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
// DAG (each stage one wave of its task duration), in seconds.
class SjfPolicy final : public sched::QueueOrderingPolicy,
                        public sched::DagPlanner,
                        public sched::AppOrdering,
                        public sched::UserOrdering {
 public:
  std::string_view name() const override { return "sjf"; }
  double score(const Resource& used, double weight, const Resource& cluster) const override;
  sched::AppHint planApp(const std::vector<sched::DagStage>& dag,
                         const Resource& fair_share) const override;
  double appScore(const sched::AppInput& in) const override;
  // Users by their best app (one job per user in the bench): SJF across jobs.
  double userScore(const Resource& used, double weight, const Resource& cluster,
                   double best_app) const override;
};

struct PaperRun {
  int64_t nodes = 100;
  Resource node;      // sim::carbyneServer()
  uint64_t seed = 1;  // with `run`, draws each task's realised duration
  int64_t run = 0;
  double duration_cv = 0.1;  // realised = nominal x lognormal noise (the AM reports nominal)
  Millis fairness_window{60000};
};

struct PaperResult {
  std::vector<double> jct_s;  // per job, in workload order
  double makespan_s = 0;      // first submit to last finish
  double jain = 0;            // mean over windows of Jain's index of the active jobs' shares
  int64_t tasks = 0;
  int64_t grants = 0;
};

// Runs `jobs` (sorted by submit) to completion under `policy` on the leaf.
// INVALID_ARGUMENT naming the field for an empty cluster or a task that fits
// no node.
Result<PaperResult> runPaper(const std::vector<sim::AdhocJob>& jobs,
                             std::shared_ptr<const sched::QueueOrderingPolicy> policy,
                             const PaperRun& opts);

// The bench's --scenario paper (bench_carbyne.cc hands over its argv).
int paperMain(int argc, char** argv);

}  // namespace morpheus::bench
