// Carbyne before cross-job leftover packing (bench_carbyne's "carbyne0"):
// forward packing with every stage at the whole share, reverse packing by
// waves, leftover to one job at a time (SRTF) with Tetris alignment among
// that job's asks only. Stateless, as the policy it copies.
#pragma once

#include <vector>

#include "scheduler/ordering_policy.h"
#include "scheduler/policies/carbyne_policy.h"

namespace morpheus::bench::v0 {

sched::CarbynePlan carbynePlanV0(const std::vector<sched::DagStage>& dag,
                                 const Resource& fair_share);

class CarbyneV0Policy final : public sched::QueueOrderingPolicy,
                              public sched::DagPlanner,
                              public sched::NoDagPlanner,
                              public sched::AppOrdering,
                              public sched::UserOrdering,
                              public sched::AskChooser {
 public:
  std::string_view name() const override { return "carbyne0"; }
  double score(const Resource& used, double weight, const Resource& cluster) const override;
  sched::AppHint planApp(const std::vector<sched::DagStage>& dag,
                         const Resource& fair_share) const override;
  sched::AppHint planWithoutDag(const Resource& fair_share) const override;
  double appScore(const sched::AppInput& in) const override;
  double userScore(const Resource& used, double weight, const Resource& cluster,
                   double best_app) const override;
  double askScore(const sched::AskInput& in) const override;
};

}  // namespace morpheus::bench::v0
