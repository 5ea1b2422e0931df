// Phoenix ordering (Thinakaran et al., "Phoenix: A Constraint-aware Scheduler
// for Heterogeneous Datacenters", ICDCS'17), as a
// QueueOrderingPolicy of the centralised scheduler core.
//
// The paper (§IV) keeps a Constraint Resource Vector per constrained resource
// (demand over supply), estimates the waiting time of constrained tasks with
// an M/G/1 model and reorders worker queues so short and constrained tasks are
// not stuck behind long ones. Here the "worker queue" is the pending apps of
// a user in an ad-hoc leaf queue, which every node heartbeat scans in score
// order, and the CRV is kept by the scheduler core (crv.h). An app's score is
//
//   score = since + expected_duration - estimated_wait   (ms, lower first)
//
// i.e. a virtual deadline: shorter expected run time first (the reordering),
// advanced by the time its hard-constrained resource is expected to make it
// wait (M/G/1 from the CRV) — an app that can only run on scarce nodes takes
// such a node when one frees instead of leaving it to work that could run
// anywhere — and aged by its arrival `since`, so an app is overtaken only by
// apps that arrived less than its own expected duration (plus their wait
// advantage) after it: bounded bypass, no starvation of long or of the longer
// short jobs (pure shortest-first starved them in the simulator). Apps
// without durations count 0 (unknown = not known to be long). Ties go to the
// app created first (FIFO). Between users and queues Phoenix keeps
// weighted DRF (score()), so it changes the order of work inside a user, not
// the fairness between users.
//
// Admission control (asks whose hard constraints no registered node can meet)
// is a pending reason from the scheduler core (Scheduler::pendingReasons), not
// part of the ordering.
//
// Two policies: PhoenixOrderingPolicy ("phoenix") provides the
// constraint-aware app ordering, so the scheduler keeps its constrained apps
// keyed to the CRV; PhoenixNoCrvOrderingPolicy ("phoenix-no-crv", the
// simulator's ablation) the same reordering without the waiting estimate
// (shortest first only), as a plain app ordering that never reads the CRV.
//
// Stateless; may be shared and called re-entrantly from any thread.
#pragma once

#include "scheduler/ordering_policy.h"

namespace morpheus::sched {

// The virtual deadline above, ms: in.since + in.expected_duration -
// estimated_wait. Pure.
double phoenixDeadline(const AppInput& in, Millis estimated_wait);

class PhoenixOrderingPolicy final : public QueueOrderingPolicy, public ConstraintAwareAppOrdering {
 public:
  std::string_view name() const override { return "phoenix"; }
  // Weighted DRF between queues and users.
  double score(const Resource& used, double weight, const Resource& cluster) const override;
  // phoenixDeadline(in, estimated_wait).
  double appScore(const AppInput& in, Millis estimated_wait) const override;
};

class PhoenixNoCrvOrderingPolicy final : public QueueOrderingPolicy, public AppOrdering {
 public:
  std::string_view name() const override { return "phoenix-no-crv"; }
  // Weighted DRF between queues and users.
  double score(const Resource& used, double weight, const Resource& cluster) const override;
  // phoenixDeadline(in, 0).
  double appScore(const AppInput& in) const override;
};

}  // namespace morpheus::sched
