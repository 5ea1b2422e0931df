// Carbyne: altruistic scheduling of ad-hoc jobs (Grandl et al., "Altruistic
// Scheduling in Multi-Resource Clusters", OSDI'16). The policy of
// a leaf queue (scheduler.policy: carbyne) orders its jobs in two tiers:
//
//  1. Inter-job fairness (paper §4.1), the DRF tier: a job below its
//     altruistic need is served by DRF (dominant share of the cluster), as
//     under plain DRF.
//  2. Intra-job altruism (§4.2): the need is the least allocation NOW that
//     keeps the job's estimated completion time at its fair share. planApp
//     estimates that time T by packing the remaining DAG forward at the fair
//     share (a list schedule: at every task end the runnable stages start
//     as many tasks as fit in what the share has left, stages with the
//     longest path to the end first, so parallel stages compete for the
//     share), then packs it in reverse from T (the same list schedule on the
//     reversed DAG, the stages farthest from now placed latest): a runnable
//     stage's tasks whose latest start falls within their first duration
//     must run now (at most what fits in the share); the others have slack
//     and run now only on leftover. The runnable stage that must start
//     first always keeps a task. The rest of the fair share is leftover.
//  3. Leftover redistribution (§4.3), the leftover tier: a job at or above
//     its need competes only after every job below its need. Then the
//     runnable tasks of every job in the leftover tier are packed across
//     jobs (CrossAppPacker; Tetris, SIGCOMM'14 §3.1): on each node
//     heartbeat the ask, of any such job, with the highest alignment of
//     its demand with the node's free room (the dot product of both
//     normalised by the node's capacity, over all resources) minus an SRTF
//     term (eps x ln(1 + the job's estimated remaining seconds / tau),
//     LeftoverPacking) is placed, so leftover favours jobs closest to
//     completion and tasks that fit the node's free resources. Jobs below
//     their need take the asks of the stages their plan needs now first
//     (AppHint::needed, matched by DagStage::request_id; with
//     LeftoverPacking::count_needed only while fewer of the stage's tasks
//     run than the plan runs now), then priority order; a stage with slack is served on that
//     allocation only when no needed stage's task fits the node, or, with
//     LeftoverPacking::decline_slack, not at all: its tasks wait for the
//     leftover tier. A node none of whose free room the
//     leftover's best job (least remaining time) can use is reserved for it
//     (LeftoverPacking::reserve_nodes, on by default; YARN's reserved
//     container): the room that frees there is kept from the other
//     leftover-tier jobs until its task fits, within the bounds of
//     SchedulerOptions::node_reservation; jobs below their need (new jobs
//     and their AMs among them) and other queues still use it.
//
// Non-altruistic jobs (no DAG reported) yield nothing: their need is their
// whole fair share (planWithoutDag), so below it they are in the DRF tier
// by dominant share, as under DRF; beyond it they compete for leftover
// after every job with an estimate (their remaining time is unknown), so
// what altruists lend goes to the jobs closest to completion, not to
// whoever reports nothing (§4.3 gives leftover SRTF first). Running
// tasks count as a full task duration (the estimate errs towards keeping
// resources), which with the per-report recomputation bounds the damage of
// misestimates: a job that falls behind its estimate asks again at its next
// report (§4.4 "misestimations").
//
// Users inside the leaf (§4.1: isolation at the level of the tenant): a user
// with a job below its need is ordered by its weighted dominant share (DRF
// between users); a user whose jobs all hold their need competes in the
// leftover tier by its best job's remaining time. The fair share planApp
// gets is split by queue weight, then over the leaf's users and the user's
// jobs (Scheduler::reportDag). Stateless; pure functions of their arguments.
#pragma once

#include <string_view>
#include <vector>

#include "scheduler/ordering_policy.h"

namespace morpheus::sched {

// The forward / reverse packing of one DAG at a fair share (exposed for tests
// and for the simulator's report).
struct CarbynePlan {
  Millis completion{0};               // T: estimated completion from now at the fair share
  std::vector<Millis> latest_finish;  // per stage: latest finish keeping T
  std::vector<int64_t> need_tasks;    // per stage: tasks needed now (0: not runnable, or slack)
  Resource need;                      // sum of need_tasks x task, capped at the fair share
  Resource start;  // what the forward packing starts now: the most of the share the job can use
};

// Validates nothing: `dag` must satisfy DagStage's contract and be acyclic
// (Scheduler::reportDag checks). A share smaller than a task (zero
// included) runs one task at a time. O(task groups x stages): a group per
// stage per wave of the tasks that fit in the share.
// `must_start_within`: a runnable stage's tasks whose latest start is
// below it are needed now; Millis(-1) (the policy's rule): below the
// stage's task duration. Other values are for measurements of the rule.
// `slack` (>= 0): time the job may finish after T and still keep its
// promised completion (a deadline later than now + T); every task's latest
// start moves later by it, so fewer tasks are needed now. 0 is the
// policy's rule; other values are for measurements.
CarbynePlan carbynePlan(const std::vector<DagStage>& dag, const Resource& fair_share,
                        Millis must_start_within = Millis(-1), Millis slack = Millis(0));

// The hint of `plan` for `dag` (the DAG it was planned from): its need and
// completion, and the request ids of the stages it needs now with their
// task counts (AppHint::needed, needed_tasks; stages sharing an id add up;
// stages without one are not named). Pure.
AppHint carbyneHint(const std::vector<DagStage>& dag, CarbynePlan plan);

// The SRTF term of the leftover packing score: - eps x ln(1 + remaining
// seconds / tau), next to an alignment that is at most the number of
// resources (a task as large as the node on an empty node) and typically
// 0.05-0.5. Scale-free: a job with half the remaining time of another gains
// about eps x ln 2 (for remaining times well above tau), so SRTF decides
// between jobs far apart in remaining time and alignment between jobs close
// to each other, whatever the load.
// `reserve_nodes`: when the leftover's best job (the least remaining time)
// has no task that fits a node's free room, the node is reserved for it and
// the room that frees there is kept for it from the leftover tier's packing
// until its task fits (YARN's reserved container; types.h
// NodeReservationOptions: whom the room is kept from, the bounds). At 0.99
// of the vcores allocated the room that frees on a node at a time is rarely
// as large as the shortest jobs' tasks, and without it the leftover went to
// the shortest job whose task fitted, so the jobs SRTF should serve first
// got little of it (docs/experiments/carbyne.md). The room is not kept from
// jobs below their need (§4.1 serves them before any leftover; a new job
// and its AM among them) nor from other queues, so a reservation never
// delays a job's fair share.
// `decline_slack`: below its need a job declines (AskChooser::kDecline) the
// asks of stages its plan does not need now, so on a node where none of its
// needed stages' tasks fits, the room goes to the other jobs below their
// need, then to the leftover tier, where the declined tasks compete as
// leftover (§4.2: a job lends what it does not need to keep its
// completion estimate). Only a job whose hint names its needed stages
// (AppHint::needed) declines, and only asks with a request id.
// `count_needed`: a needed stage's task is needed only while fewer of the
// stage's tasks run than the plan runs now (AppHint::needed_tasks against
// AskInput::running, the job's live containers of the stage's request id);
// beyond that many its further tasks have slack (declined with
// `decline_slack`). Off: every task of a needed stage counts as needed, so a
// job below its need takes further tasks of a stage that already runs what
// its plan needs before a stage with slack.
struct LeftoverPacking {
  double eps = 0.5;
  double tau_s = 60.0;
  bool reserve_nodes = true;
  bool decline_slack = false;
  bool count_needed = false;
};

// Provides every extension point but the constraint-aware app ordering
// (ordering_policy.h).
class CarbyneOrderingPolicy final : public QueueOrderingPolicy,
                                    public DagPlanner,
                                    public NoDagPlanner,
                                    public AppOrdering,
                                    public UserOrdering,
                                    public AskChooser,
                                    public CrossAppPacker {
 public:
  explicit CarbyneOrderingPolicy(LeftoverPacking packing = {}) : packing_(packing) {}
  // Scores of jobs in the leftover tier start here (dominant shares are <= 1
  // per unit of weight, so every tier-1 score is below it).
  static constexpr double kLeftoverTier = 1e6;
  // packScore's offset for jobs without a remaining-time estimate.
  static constexpr double kNoEstimatePenalty = 1e6;

  std::string_view name() const override { return "carbyne"; }
  // Dominant share / weight (DRF between queues, and users below their need).
  double score(const Resource& used, double weight, const Resource& cluster) const override;
  // carbyneHint of carbynePlan at the fair share; no hint for an empty DAG.
  AppHint planApp(const std::vector<DagStage>& dag, const Resource& fair_share) const override;
  // need = fair_share, remaining unknown (Millis::max()), from_dag false.
  AppHint planWithoutDag(const Resource& fair_share) const override;
  // Below its need (or no hint): dominant share; at or above it:
  // kLeftoverTier + remaining seconds. Reads in.used, in.hint and in.cluster
  // only.
  double appScore(const AppInput& in) const override;
  // best_app in the leftover tier (or +inf): best_app; else used's dominant
  // share / weight.
  double userScore(const Resource& used, double weight, const Resource& cluster,
                   double best_app) const override;
  // Leftover tier (hint valid and need held): the Tetris alignment
  // sum over resources of need/node_total x node_free/node_total. Below the
  // need: 1 for an ask of a stage the plan needs now (its request id in
  // hint.needed; with LeftoverPacking::count_needed only while in.running
  // is below the stage's hint.needed_tasks), else 0, so a job below its
  // need spends its DRF-tier allocation on the tasks its plan must start
  // now whatever its AM's priority order (Tez asks breadth-first); priority
  // order decides among equals. With LeftoverPacking::decline_slack,
  // kDecline instead of 0 when hint.needed is not empty and the ask has a
  // request id.
  double askScore(const AskInput& in) const override;
  // The leftover tier is packed across jobs.
  double packFrom() const override;
  // Tetris alignment - eps x ln(1 + remaining seconds / tau); a job whose
  // remaining time is unknown (no DAG) comes after every job with an
  // estimate (kNoEstimatePenalty), as in the leftover tier's order.
  double packScore(const AskInput& in) const override;
  // LeftoverPacking::reserve_nodes.
  bool reservesNodes() const override { return packing_.reserve_nodes; }

 private:
  LeftoverPacking packing_;
};

// Tetris's alignment of `need` with `free` on a node of capacity `total`:
// the dot product of both normalised by `total`, over memory, vcores and
// `need`'s extended resources (dimensions with zero total count 0).
double tetrisAlignment(const Resource& need, const Resource& free, const Resource& total);

}  // namespace morpheus::sched
