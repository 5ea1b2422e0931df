// Phoenix's Constraint Resource Vector (Thinakaran et al., "Phoenix: A
// Constraint-aware Scheduler for Heterogeneous Datacenters", ICDCS'17, §IV):
// for every constrained resource — one hard PlacementConstraint, e.g.
// "isa in {aarch64}" or "network_gbps >= 40" — the ratio of pending demand
// that needs it to the free supply of the nodes that have it. A ratio near or
// above 1 means the constrained resource is the bottleneck of the asks that
// need it; from it the M/G/1 (Pollaczek-Khinchine) mean waiting time of such
// an ask is estimated:
//
//   rho = min(demand / supply, kMaxUtilisation),
//   W   = rho / (1 - rho) * E[S^2] / (2 E[S])
//
// with S the expected run time of the pending containers that need the
// resource (the P-K formula lambda E[S^2] / (2 (1 - rho)) with lambda =
// rho / E[S]). Units: demand and supply in vcores (at least 1 per
// container), times in milliseconds.
//
// Kept incrementally: demand changes with asks, supply with the
// free capacity of the matching nodes; both O(constrained resources the node
// or ask touches) per change, never a scan over nodes or asks — except when a
// constrained resource is seen for the first time (one scan over the nodes to
// find those that have it).
//
// Also the matching of constraints against node attributes (one definition
// for the scheduler core, the CRV and admission control), and the long work
// held on each constraint kind's nodes (LongWorkCap, ordering_policy.h):
// every hard constraint an ask has ever carried is a kind, kept for the
// CRV's life (a kind with no pending demand still keeps its nodes from long
// work, so the next constrained job finds them); a kind is scarce while
// fewer than half of the registered nodes meet it. Long work is counted in
// vcores of the containers the scheduler reports (longHeldChanged), and the
// short and long work granted to asks requiring a kind (workGranted) in
// vcore-ms, exponentially decayed.
//
// Thread-safety: none; owned by the scheduler core's thread.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/ids.h"
#include "scheduler/types.h"

namespace morpheus::sched {

using NodeAttributes = std::map<std::string, std::string>;

// True if `attrs` satisfies `c` (hard or soft alike). kAtLeast: both sides
// parse as numbers; kVersionAtLeast: dot/dash-separated integer components,
// compared left to right (a missing component is 0). A node without the
// attribute never matches.
bool constraintMatches(const PlacementConstraint& c, const NodeAttributes& attrs);

// "isa in {aarch64}", "cores >= 32", "kernel >= v5.10", "gpu present": the
// identity of a constrained resource in the CRV and in pending reasons.
std::string describeConstraint(const PlacementConstraint& c);

class ConstraintResourceVector {
 public:
  // Saturation cap of rho, so a resource with demand >= supply gets a large
  // but finite waiting estimate (19 x E[S^2]/(2E[S]) at 0.95).
  static constexpr double kMaxUtilisation = 0.95;

  // Per constrained resource, as reported (tests, metrics, CLI).
  struct Entry {
    std::string resource;       // describeConstraint
    int64_t demand_vcores = 0;  // pending containers needing it, in vcores
    int64_t supply_vcores = 0;  // free vcores of the nodes that have it
    int32_t nodes = 0;          // registered nodes that have it
    double ratio = 0;           // demand / supply (infinity when supply is 0)
    Millis estimated_wait{0};   // M/G/1 estimate above
  };

  // One constrained resource (internal bookkeeping, exposed as Entry).
  struct Tracked {
    PlacementConstraint constraint;
    int64_t refs = 0;  // pending containers referring to it (any vcores)
    int64_t demand_vcores = 0;
    double sum_s = 0;   // sum over pending containers of S (ms)
    double sum_s2 = 0;  // sum over pending containers of S^2 (ms^2)
    int64_t supply_vcores = 0;
    std::vector<NodeId> nodes;  // nodes that have it
    // waitOf(*this) at version() == wait_version (estimatedWait with a
    // Resolved cache: one computation per resource per change, not per ask).
    mutable uint64_t wait_version = ~uint64_t{0};
    mutable Millis wait{0};
  };
  // A constraint kind (the hard form of one constraint ever asked for) and
  // the long work on its nodes.
  struct Kind {
    PlacementConstraint constraint;
    int32_t nodes = 0;        // registered nodes that meet it
    int64_t vcores = 0;       // their capacity
    int64_t long_vcores = 0;  // held by long work on them (longHeldChanged)
    // Work granted to asks requiring it (workGranted), vcore-ms decayed to
    // work_at (the last grant), counted since work_since (the first) over
    // half-lives of work_half_life.
    double short_work = 0, long_work = 0;
    TimePoint work_at{}, work_since{};
    Millis work_half_life{0};
  };
  // A registered node; the handle stays valid until removeNode.
  struct NodeSlot {
    NodeAttributes attrs;
    int64_t free_vcores = 0;
    int64_t vcores = 0;               // capacity
    int64_t long_vcores = 0;          // held by long work (longHeldChanged)
    std::vector<Tracked*> resources;  // tracked resources it has
    std::vector<Kind*> kinds;         // kinds it meets
  };
  // Nodes: `free_vcores` is what the node has free now, `vcores` its
  // capacity (-1: free_vcores, a node added empty). The caller keeps the
  // handle for nodeFreeChanged (no lookup on the allocation path).
  NodeSlot* addNode(const NodeId& node, const NodeAttributes& attrs, int64_t free_vcores,
                    int64_t vcores = -1);
  void removeNode(const NodeId& node);
  // The node's attributes changed: its resources and kinds follow, its free
  // vcores, capacity and long work stay. The old handle is invalid.
  NodeSlot* setAttributes(const NodeId& node, const NodeAttributes& attrs);

  // Long work (LongWorkCap): `delta` more (negative: fewer) vcores of long
  // containers on `node`. O(kinds the node meets).
  void longHeldChanged(NodeSlot* node, int64_t delta);
  // Whether `vcores` more of long work on `node` keeps the long work of every
  // scarce kind the node meets at or below `share` of that kind's vcores.
  // O(kinds the node meets).
  bool mayHoldLong(const NodeSlot* node, int64_t vcores, double share) const;
  // The same with each kind's share given by `share_of(s)`, s the kind's
  // shortWorkShare.
  template <class ShareOf>
  bool mayHoldLong(const NodeSlot* node, int64_t vcores, const ShareOf& share_of) const {
    if (node == nullptr) return true;
    for (const Kind* k : node->kinds) {
      if (scarce(*k) && static_cast<double>(k->long_vcores + vcores) >
                            share_of(shortWorkShare(*k)) * static_cast<double>(k->vcores))
        return false;
    }
    return true;
  }
  // `vcore_ms` of short or long work granted at `now` to an ask requiring
  // every hard constraint in `constraints`: added to those kinds' counts,
  // which decay by half every `half_life` (> 0). O(hard constraints x log
  // kinds).
  void workGranted(const std::vector<PlacementConstraint>& constraints, double vcore_ms,
                   bool long_work, TimePoint now, Millis half_life);
  // short_work / (short_work + long_work) of `k`; -1 (unknown) until its
  // grants span one half-life, or when both are 0.
  static double shortWorkShare(const Kind& k);
  // Every kind in describeConstraint order, with whether it is scarce.
  struct KindEntry {
    std::string resource;
    int32_t nodes = 0;
    int64_t vcores = 0, long_vcores = 0;
    bool scarce = false;
    double short_share = -1;  // shortWorkShare
  };
  std::vector<KindEntry> kinds() const;
  // The node's free vcores changed by `delta` (negative when allocating).
  void nodeFreeChanged(NodeSlot* node, int64_t delta);
  // Deferred free-vcore changes. Only tracked resources read the nodes'
  // free vcores, and a workload without hard constraints never tracks one;
  // nodeFreeChanged on every container start and end then costs a cache
  // miss on the node's slot for nothing. With `take_deferred` set, the CRV
  // is dormant until it first tracks a resource: the caller keeps the
  // changes of each node's free vcores itself instead of calling
  // nodeFreeChanged, and at that first track the CRV adds, per node,
  // take_deferred(node) (the sum of the changes kept since the node was
  // added, which the caller then forgets) to the node's free vcores once;
  // from then on it is not dormant. Every node's free vcores, hence every
  // estimate, are those of calling nodeFreeChanged on every change.
  void deferFreeChanges(std::function<int64_t(const NodeId&)> take_deferred);
  bool dormant() const { return dormant_; }

  // `count` more (negative: fewer) pending containers of `vcores` each and
  // expected run time `duration` need every hard constraint in `constraints`
  // (soft ones are ignored: they do not restrict supply).
  void changeDemand(const std::vector<PlacementConstraint>& constraints, int64_t vcores,
                    Millis duration, int64_t count);

  // Largest estimated wait over the hard constraints of `constraints` whose
  // resource at least one node has (an ask no node can serve is a matter of
  // admission control, not of ordering); 0 without hard constraints.
  Millis estimatedWait(const std::vector<PlacementConstraint>& constraints) const;

  // The tracked resources of one constraint list's hard constraints, as
  // estimatedWait last looked them up: kept by the caller beside the list
  // (the scheduler's asks), read only by the CRV.
  struct Resolved {
    uint64_t layout = 0;  // layout_ at resolution (0: never resolved)
    std::vector<const Tracked*> resources;
  };
  // estimatedWait(constraints), looking the resources up only when `cache`
  // was resolved before a resource was last tracked or untracked (else no
  // name is built and no map searched: apps are re-keyed for every skipped
  // app and every CRV change, the scheduler's hot path under Phoenix).
  // `cache` must only ever be used with this `constraints` (same contents).
  Millis estimatedWait(const std::vector<PlacementConstraint>& constraints, Resolved& cache) const;

  // Bumped on every change: the scheduler re-keys apps whose order depends
  // on the estimates when it moved.
  uint64_t version() const { return version_; }
  bool empty() const { return resources_.empty(); }

  // Every tracked resource in describeConstraint order.
  std::vector<Entry> entries() const;

 private:
  // The entry of c's hard form, created (with the nodes that have it) on
  // first use.
  std::map<std::string, Tracked>::iterator track(const PlacementConstraint& c);
  // describeConstraint(hard form of c), the key of resources_, built in
  // scratch_ (no allocation once it has grown: the lookups on the scheduling
  // path, estimatedWait once per app key, led morpheus-sim's profile when
  // each built its strings anew). Valid until the next call.
  const std::string& nameOf(const PlacementConstraint& c) const;
  void untrack(std::map<std::string, Tracked>::iterator it);
  static Millis waitOf(const Tracked& r);
  static Entry entryOf(const Tracked& r);

  // The Kind of c's hard form (name: its describeConstraint), created with
  // the nodes that meet it on first use.
  void noteKind(const std::string& name, const PlacementConstraint& hard);
  bool scarce(const Kind& k) const { return 2 * static_cast<size_t>(k.nodes) < nodes_.size(); }

  std::map<NodeId, NodeSlot> nodes_;
  // deferFreeChanges's; dormant_ while it is set and no resource was ever
  // tracked (the nodes' free_vcores then lack the deferred changes).
  std::function<int64_t(const NodeId&)> take_deferred_;
  bool dormant_ = false;
  std::map<std::string, Tracked> resources_;  // by describeConstraint (hard form)
  std::map<std::string, Kind> kinds_;         // by describeConstraint (hard form); never erased
  uint64_t version_ = 0;
  uint64_t layout_ = 1;          // bumped when resources_ gains or loses an entry (Resolved)
  mutable std::string scratch_;  // nameOf's buffer
};

}  // namespace morpheus::sched
