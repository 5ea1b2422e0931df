// Ordering policies and their extension points (docs/design/conventions.md
// "Small policy interfaces"; docs/design/scheduler.md "Policy extension
// points"). The scheduler orders ad-hoc queues among their siblings, users
// inside a leaf queue, apps inside a user or a reservation queue, and
// reservations beyond their guarantee by a policy's scores, lowest first;
// ties go to the entity created first, so decisions are deterministic.
//
// A policy is a QueueOrderingPolicy (a name and the ordering score, which
// every policy has) that also derives from each extension point it needs,
// and from no other:
//
//   DagPlanner                  a hint from an app's reported DAG (Carbyne)
//   NoDagPlanner                a hint for an app that reported no DAG (Carbyne)
//   AppOrdering                 apps inside a user by more than their usage
//                               (Carbyne's tiers, Phoenix without the CRV)
//   ConstraintAwareAppOrdering  the same, reading the CRV waiting estimate of
//                               the app's hard constraints (Phoenix)
//   UserOrdering                users inside a leaf by their best app (Carbyne)
//   AskChooser                  which of an app's asks a node takes (Carbyne)
//   CrossAppPacker              which app's ask a node takes, packing across
//                               the apps of a leaf (Carbyne's leftover, Tetris)
//   LongWorkCap                 how much of a scarce constraint kind's nodes
//                               long work may hold (Phoenix)
//
// The scheduler looks the points up once, when a policy is installed
// (extensionPoints), keeps the result per leaf and branches on which are
// present; a point a policy does not provide costs nothing (no DAG walk, no
// fair-share computation, no CRV estimate, no scan of the asks). As with the
// Kubernetes scheduler framework's plugins, a policy declares no capability
// flags: what it implements is what it does.
//
// Contract for every interface here: const methods that are pure functions
// of their arguments. Policies hold no mutable state, so one object may be
// shared between schedulers and called re-entrantly from any thread.
#pragma once

#include <limits>
#include <memory>
#include <string_view>
#include <vector>

#include "common/clock.h"
#include "common/resource.h"
#include "common/status.h"
#include "scheduler/types.h"

namespace morpheus::sched {

// The ordering score: what every policy provides. Orders ad-hoc queues
// among siblings and reservations beyond their guarantee (the scheduler's
// policy), and, in a leaf whose policy lacks the finer points below, users
// (weighted) and apps (weight 1).
class QueueOrderingPolicy {
 public:
  virtual ~QueueOrderingPolicy() = default;
  virtual std::string_view name() const = 0;
  // Lower is served first. `used`: what the entity holds now; `weight` > 0 its
  // configured weight (1 for users and apps); `cluster` the live cluster total.
  virtual double score(const Resource& used, double weight, const Resource& cluster) const = 0;
};

// Extension point: what the policy derives from an app's remaining DAG
// (Scheduler::reportDag) given the app's fair share now, the app's AppHint
// until its next report. Without it a reported DAG leaves the app without a
// hint (it is ordered by its usage), and the scheduler skips the fair share.
class DagPlanner {
 public:
  virtual ~DagPlanner() = default;
  virtual AppHint planApp(const std::vector<DagStage>& dag, const Resource& fair_share) const = 0;
};

// Extension point: what the policy derives for an ad-hoc app that has
// reported no DAG (a non-altruistic job), given its fair share now;
// re-derived whenever its asks change. The fair share costs a walk up the
// queues on every ask update, which is why only policies that provide this
// point pay it.
class NoDagPlanner {
 public:
  virtual ~NoDagPlanner() = default;
  virtual AppHint planWithoutDag(const Resource& fair_share) const = 0;
};

// What an app's order may depend on beyond its usage (AppOrdering,
// ConstraintAwareAppOrdering).
struct AppInput {
  const Resource& used;
  const AppHint& hint;  // the DagPlanner's or NoDagPlanner's hint ({} = none)
  const Resource& cluster;
  Millis expected_duration;  // longest expected run time of its pending asks (0 = unknown)
  TimePoint since;           // when it joined: the last heartbeat time seen before addApp
  // Containers its asks still want (Phoenix's remaining work).
  int64_t pending_containers = 0;
};

// Extension point: orders the apps inside a user (or a reservation queue)
// by their usage, hint, durations or arrival. Lower is served first.
// Without it (and without ConstraintAwareAppOrdering) an app scores
// score(used, 1, cluster), as users and queues do.
class AppOrdering {
 public:
  virtual ~AppOrdering() = default;
  virtual double appScore(const AppInput& in) const = 0;
};

// Extension point: app ordering that also reads `estimated_wait`, the CRV
// waiting estimate of the app's hard constraints (crv.h; the longest over
// its pending asks). Only apps under a policy with this point cost a CRV
// estimate per re-key, and only they are re-keyed once per heartbeat when
// the CRV moved (so their order may lag it by one heartbeat). A policy that
// also derives from AppOrdering is ordered by this point.
class ConstraintAwareAppOrdering {
 public:
  virtual ~ConstraintAwareAppOrdering() = default;
  virtual double appScore(const AppInput& in, Millis estimated_wait) const = 0;
};

// Extension point: orders the users inside a leaf. `best_app` is the lowest
// app score among the user's apps with demand (+inf when none). Without it
// a user scores score(used, weight, cluster).
class UserOrdering {
 public:
  virtual ~UserOrdering() = default;
  virtual double userScore(const Resource& used, double weight, const Resource& cluster,
                           double best_app) const = 0;
};

// What an ask's placement on a node may depend on (AskChooser).
struct AskInput {
  const Resource& used;        // the app's usage now
  const AppHint& hint;         // its hint ({} = none)
  const Resource& need;        // room the ask takes on the node (capability x gang)
  const Resource& node_free;   // the node's free room (need fits in it)
  const Resource& node_total;  // the node's capacity
  // The ask's ResourceRequest::request_id in askScore's input (Carbyne
  // matches it against AppHint::needed); empty in packScore's.
  std::string_view request_id{};
  // The app's live containers granted for that request id (Carbyne counts
  // them against AppHint::needed_tasks); 0 without a request id and in
  // packScore's input.
  int64_t running = 0;
};

// Extension point: node-aware choice among an app's asks (Carbyne's
// leftover packing, Tetris SIGCOMM'14 §3.1). Every ask of the app that can
// be placed on the node is scored and the highest is taken; ties go to the
// earlier ask in priority order. Without it the first placeable ask in
// priority order is taken, at no scoring cost.
//
// An ask scored kDecline is not taken in the app's own turn (Carbyne: a
// task with slack is not run on a job's fair share). When every placeable
// ask of the app is declined the app passes on the node for the rest of
// the heartbeat's phase, and its declined asks are offered after the rest
// of its leaf: in a leaf whose policy packs across apps (CrossAppPacker)
// they compete in the packing tier by packScore with that tier's asks;
// otherwise the first declining app's first placeable ask in priority
// order is taken once no other app of the leaf has anything placeable on
// the node. A decline defers an ask; it never leaves room unused that the
// declined ask could take.
class AskChooser {
 public:
  static constexpr double kDecline = -std::numeric_limits<double>::infinity();
  virtual ~AskChooser() = default;
  virtual double askScore(const AskInput& in) const = 0;
};

// Extension point: packing across apps (Tetris SIGCOMM'14 §3.1; Carbyne
// OSDI'16 §4.3, whose leftover step packs the runnable tasks of every job
// that receives leftover, not one job's at a time). In a leaf whose policy
// provides it, once the best user with something placeable on the node
// scores at least packFrom() (Carbyne: its leftover tier; Tetris: every
// score), the node does not go to the best app: every placeable ask of
// every app below the leaf that scores at least packFrom() is scored by
// packScore and the highest is granted (ties: the better app score, then
// the earlier ask). Apps below packFrom() keep being served first, in
// score order. Costs O(apps x asks) per grant in the packing tier, so only
// leaves under such a policy pay it.
class CrossAppPacker {
 public:
  virtual ~CrossAppPacker() = default;
  // The app and user score from which apps are packed across.
  virtual double packFrom() const = 0;
  // Higher is placed first; `in` is the candidate ask's app and the node.
  virtual double packScore(const AskInput& in) const = 0;
  // Whether the leaf reserves a node for its packing tier's best app when
  // none of that app's asks fits the node's free room, keeping the room from
  // the leaf's packing tier only (types.h NodeReservationOptions: whom it is
  // kept from, the bounds), whatever SchedulerOptions::node_reservation.enabled
  // says. Default: no.
  virtual bool reservesNodes() const { return false; }
};

// Extension point: keeps part of each scarce constraint kind's nodes from
// long work (Phoenix). An ask is long when its expected_duration is above
// longTask() (0: no ask is); a kind is a hard constraint some ask has
// carried, scarce while fewer than half of the registered nodes meet it
// (crv.h). A long ask, constrained or not, is not placed on a node when the
// long work of the leaves under such policies on some scarce kind the node
// meets would then hold more than longShareOf(s) of that kind's vcores, s
// being the short share of the work granted to those leaves' asks that
// require the kind (vcores x expected duration, decayed with half-life
// shortShareHalfLife(); < 0 before any); short asks may take any node they
// fit. Read per app and node visit of a leaf under the policy (findAsk);
// the other leaves pay one null check there.
class LongWorkCap {
 public:
  virtual ~LongWorkCap() = default;
  virtual Millis longTask() const = 0;
  // In (0, 1]; 1 keeps no node from long work. The least longShareOf gives.
  virtual double longShare() const = 0;
  // In [longShare(), 1] for any s.
  virtual double longShareOf(double /*short_share*/) const { return longShare(); }
  // > 0.
  virtual Millis shortShareHalfLife() const { return Millis(3600 * 1000); }
};

// The extension points one policy provides: `order` is never null, every
// other pointer is null unless the policy derives from that interface. The
// pointers live as long as the policy object.
struct PolicyPoints {
  const QueueOrderingPolicy* order = nullptr;
  const DagPlanner* dag = nullptr;
  const NoDagPlanner* no_dag = nullptr;
  const AppOrdering* apps = nullptr;
  const ConstraintAwareAppOrdering* constrained_apps = nullptr;
  const UserOrdering* users = nullptr;
  const AskChooser* asks = nullptr;
  const CrossAppPacker* pack = nullptr;
  const LongWorkCap* long_cap = nullptr;
};

// Looks up which extension points `policy` derives from (dynamic_cast, once
// per installation, not per decision). Pure.
PolicyPoints extensionPoints(const QueueOrderingPolicy& policy);

// Weighted Dominant Resource Fairness (Ghodsi et al.): dominant share / weight,
// dominant share = max over resources of used / cluster total. With equal
// weights this is DRF between users; with queue weights, siblings converge to
// capacity proportional to their weights. The ordering score only.
class DrfOrderingPolicy final : public QueueOrderingPolicy {
 public:
  std::string_view name() const override { return "drf"; }
  double score(const Resource& used, double weight, const Resource& cluster) const override;
};

// First come, first served: every entity scores 0, so creation order decides.
// The ordering score only.
class FifoOrderingPolicy final : public QueueOrderingPolicy {
 public:
  std::string_view name() const override { return "fifo"; }
  double score(const Resource&, double, const Resource&) const override { return 0.0; }
};

// Policies by config name: scheduler/policies/policy_factory.h (makeOrderingPolicy;
// "drf", "fifo", "carbyne", "phoenix").

}  // namespace morpheus::sched
