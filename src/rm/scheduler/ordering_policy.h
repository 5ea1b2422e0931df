// QueueOrderingPolicy: which sibling in the scheduling tree is served next
// (CONVENTIONS.md "Small policy interfaces"; DESIGN.md §6). The scheduler
// orders ad-hoc queues among their siblings, users inside a leaf queue, apps
// inside a user or a reservation queue, and reservations beyond their
// guarantee by the policy's score, lowest first; ties go to the entity created
// first, so decisions are deterministic.
//
// Policies are stateless and may be shared and called re-entrantly.
#pragma once

#include <memory>
#include <string_view>

#include "common/clock.h"
#include "common/resource.h"
#include "common/status.h"

namespace morpheus::sched {

class QueueOrderingPolicy {
 public:
  virtual ~QueueOrderingPolicy() = default;
  virtual std::string_view name() const = 0;
  // Lower is served first. `used`: what the entity holds now; `weight` > 0 its
  // configured weight (1 for users and apps); `cluster` the live cluster total.
  // Must be a pure function of its arguments.
  virtual double score(const Resource& used, double weight, const Resource& cluster) const = 0;

  // What an app's order may depend on beyond its usage (issue #17, Phoenix).
  struct AppInput {
    const Resource& used;
    const Resource& cluster;
    Millis expected_duration;  // longest expected run time of its pending asks (0 = unknown)
    Millis estimated_wait;     // CRV waiting estimate of its hard constraints (crv.h)
    TimePoint since;           // when it joined: the last heartbeat time seen before addApp
  };
  // Score of an app among its siblings, lower first. Default: score(used, 1,
  // cluster), so policies that ignore durations and constraints order apps
  // exactly as users and queues. Must be a pure function of its arguments.
  virtual double appScore(const AppInput& in) const { return score(in.used, 1.0, in.cluster); }
  // True if appScore reads estimated_wait: the scheduler then re-keys apps
  // with hard constraints once per heartbeat when the CRV changed.
  virtual bool usesConstraintWaits() const { return false; }
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

// Policies by config name ("drf", "fifo", "phoenix": phoenix_policy.h); unknown names are
// INVALID_ARGUMENT naming `field`.
Result<std::shared_ptr<const QueueOrderingPolicy>> makeQueueOrderingPolicy(std::string_view name,
                                                                           std::string_view field);

}  // namespace morpheus::sched
