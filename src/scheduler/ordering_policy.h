// QueueOrderingPolicy: which sibling in the scheduling tree is served next
// (docs/design/conventions.md "Small policy interfaces"; docs/design/scheduler.md). The scheduler
// orders ad-hoc queues among their siblings, users inside a leaf queue, apps
// inside a user or a reservation queue, and reservations beyond their
// guarantee by the policy's score, lowest first; ties go to the entity created
// first, so decisions are deterministic.
//
// Policies are stateless and may be shared and called re-entrantly.
#pragma once

#include <memory>
#include <string_view>
#include <vector>

#include "common/clock.h"
#include "common/resource.h"
#include "common/status.h"
#include "scheduler/types.h"

namespace morpheus::sched {

class QueueOrderingPolicy {
 public:
  virtual ~QueueOrderingPolicy() = default;
  virtual std::string_view name() const = 0;
  // Lower is served first. `used`: what the entity holds now; `weight` > 0 its
  // configured weight (1 for users and apps); `cluster` the live cluster total.
  // Must be a pure function of its arguments.
  virtual double score(const Resource& used, double weight, const Resource& cluster) const = 0;

  // ---- Job-aware hooks. A leaf queue's policy orders the users
  // and apps inside it with these; the defaults reduce to score(). ----

  // What the policy derives from an app's remaining DAG (Scheduler::reportDag)
  // given the app's fair share now. Default: no hint (the app is scored by
  // score()). Pure function of its arguments.
  virtual AppHint planApp(const std::vector<DagStage>& dag, const Resource& fair_share) const {
    (void)dag;
    (void)fair_share;
    return {};
  }
  // What the policy derives for an app that has reported no DAG (a
  // non-altruistic job), given its fair share now; re-derived when its asks
  // change, only if plansWithoutDag() (the fair share costs a walk up the
  // queues on every ask update). Default: no hint. Pure function of its
  // arguments.
  virtual bool plansWithoutDag() const { return false; }
  virtual AppHint planWithoutDag(const Resource& fair_share) const {
    (void)fair_share;
    return {};
  }
  // What an app's order may depend on beyond its usage: the hint of planApp
  // (Carbyne) and durations, constraint waits and arrival (Phoenix).
  struct AppInput {
    const Resource& used;
    const AppHint& hint;  // planApp's hint for the app's last reported DAG ({} = none)
    const Resource& cluster;
    Millis expected_duration;  // longest expected run time of its pending asks (0 = unknown)
    Millis estimated_wait;     // CRV waiting estimate of its hard constraints (crv.h)
    TimePoint since;           // when it joined: the last heartbeat time seen before addApp
  };
  // An app inside its user (or reservation queue): lower is served first.
  // Default: score(used, 1, cluster), so policies that ignore hints, durations
  // and constraints order apps exactly as users and queues. Must be a pure
  // function of its arguments.
  virtual double appScore(const AppInput& in) const { return score(in.used, 1.0, in.cluster); }
  // True if appScore reads estimated_wait: the scheduler then re-keys apps
  // with hard constraints once per heartbeat when the CRV changed.
  virtual bool usesConstraintWaits() const { return false; }
  // A user inside a leaf; `best_app` is the lowest appScore among the user's
  // apps with demand (+inf when none). Default score(used, weight, cluster).
  virtual double userScore(const Resource& used, double weight, const Resource& cluster,
                           double best_app) const {
    (void)best_app;
    return score(used, weight, cluster);
  }

  // ---- Node-aware choice among an app's asks (Carbyne's
  // leftover packing, Tetris SIGCOMM'14 §3.1). ----

  // True if the scheduler should offer every ask of an app that can be
  // placed on a node to askScore and take the highest; false (the default):
  // the first placeable ask in priority order, as the core always did.
  virtual bool choosesAsks() const { return false; }
  struct AskInput {
    const Resource& used;        // the app's usage now
    const AppHint& hint;         // its planApp hint ({} = none)
    const Resource& need;        // room the ask takes on the node (capability x gang)
    const Resource& node_free;   // the node's free room (need fits in it)
    const Resource& node_total;  // the node's capacity
  };
  // Only called when choosesAsks(): higher is taken first; ties go to the
  // earlier ask in priority order. Must be a pure function of its arguments.
  virtual double askScore(const AskInput& in) const {
    (void)in;
    return 0.0;
  }
};

// Weighted Dominant Resource Fairness (Ghodsi et al.): dominant share / weight,
// dominant share = max over resources of used / cluster total. With equal
// weights this is DRF between users; with queue weights, siblings converge to
// capacity proportional to their weights.
class DrfOrderingPolicy final : public QueueOrderingPolicy {
 public:
  std::string_view name() const override { return "drf"; }
  double score(const Resource& used, double weight, const Resource& cluster) const override;
};

// First come, first served: every entity scores 0, so creation order decides.
class FifoOrderingPolicy final : public QueueOrderingPolicy {
 public:
  std::string_view name() const override { return "fifo"; }
  double score(const Resource&, double, const Resource&) const override { return 0.0; }
};

// Policies by config name: scheduler/policies/policy_factory.h (makeOrderingPolicy;
// "drf", "fifo", "carbyne", "phoenix").

}  // namespace morpheus::sched
