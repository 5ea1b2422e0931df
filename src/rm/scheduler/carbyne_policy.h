// Carbyne: altruistic scheduling of ad-hoc jobs (Grandl et al., "Altruistic
// Scheduling in Multi-Resource Clusters", OSDI'16; issue #17). The policy of
// a leaf queue (scheduler.policy: carbyne) orders its jobs in two tiers:
//
//  1. Inter-job fairness (paper §4.1), the DRF tier: a job below its
//     altruistic need is served by DRF (dominant share of the cluster), as
//     under plain DRF.
//  2. Intra-job altruism (§4.2): the need is the least allocation NOW that
//     keeps the job's estimated completion time at its fair share. planApp
//     estimates that time T by packing the remaining DAG forward at the fair
//     share (each stage in waves of the tasks that fit in the share), then
//     packs it in reverse from T (latest finish of every stage, the critical
//     path at zero slack): a runnable stage with latest finish LF needs only
//     ceil(tasks / floor(LF / task duration)) tasks running now. The rest of
//     the fair share is leftover.
//  3. Leftover redistribution (§4.3), the leftover tier: a job at or above
//     its need competes only after every job below its need, shortest
//     estimated remaining time first (SRTF). The second step, packing, is the
//     scheduler core's per-node heartbeat: each node's free room goes to the
//     first job in that order with an ask that fits it.
//
// Non-altruistic jobs (no DAG reported, AppHint::valid false) stay in the DRF
// tier by their dominant share, as under DRF. Running
// tasks count as a full task duration (the estimate errs towards keeping
// resources), which with the per-report recomputation bounds the damage of
// misestimates: a job that falls behind its estimate asks again at its next
// report (§4.4 "misestimations").
//
// Users inside the leaf are ordered by their best job (Carbyne's fairness is
// between jobs, not users). Stateless; pure functions of their arguments.
#pragma once

#include <string_view>
#include <vector>

#include "rm/scheduler/ordering_policy.h"

namespace morpheus::sched {

// The forward / reverse packing of one DAG at a fair share (exposed for tests
// and for the simulator's report).
struct CarbynePlan {
  Millis completion{0};               // T: estimated completion from now at the fair share
  std::vector<Millis> latest_finish;  // per stage: latest finish keeping T
  std::vector<int64_t> need_tasks;    // per stage: tasks that must run now (0 = not runnable)
  Resource need;                      // sum of need_tasks x task, capped at the fair share
};

// Validates nothing: `dag` must satisfy DagStage's contract and be acyclic
// (Scheduler::reportDag checks). A zero fair share is treated as one task of
// each stage at a time.
CarbynePlan carbynePlan(const std::vector<DagStage>& dag, const Resource& fair_share);

class CarbyneOrderingPolicy final : public QueueOrderingPolicy {
 public:
  // Scores of jobs in the leftover tier start here (dominant shares are <= 1
  // per unit of weight, so every tier-1 score is below it).
  static constexpr double kLeftoverTier = 1e6;

  std::string_view name() const override { return "carbyne"; }
  double score(const Resource& used, double weight, const Resource& cluster) const override;
  AppHint planApp(const std::vector<DagStage>& dag, const Resource& fair_share) const override;
  // Reads in.used, in.hint and in.cluster only.
  double appScore(const AppInput& in) const override;
  double userScore(const Resource& used, double weight, const Resource& cluster,
                   double best_app) const override;
};

}  // namespace morpheus::sched
