// The RM's scheduler core (docs/design/scheduler.md):
// a pure library — no I/O, no threads, no wall clock,
// no protobuf. Time comes in as the TimePoint of each node heartbeat. The RM
// daemon translates the AM protocol and the ResourceTracker heartbeats into
// these calls; the plan follower pushes each reservation's guarantee in with
// setReservation.
//
// Queues and the order of guarantees (Morpheus §3, docs/design/scheduler.md):
//  1. reservation queues below their guarantee: periodic before one-off, then
//     the queue using the smallest fraction of its guarantee. A container is
//     placed here only if it keeps the queue within its guarantee;
//  2. the ad-hoc hierarchy: siblings by weighted dominant share (the
//     QueueOrderingPolicy), then users and apps inside a leaf by the leaf's
//     policy (AdhocQueueConfig::policy; default DRF between users, then
//     apps; Carbyne uses the apps' reported DAGs, see reportDag);
//  3. reservation queues beyond their guarantee (work conserving: a
//     reservation may borrow what nobody else asked for). With
//     SchedulerOptions::borrowing_reservations_share they are served in step 2
//     instead, as siblings of the top-level ad-hoc queues at weight 1.
// Inside an app, asks go by priority (lower first), then request id.
//
// Work conserving with preemption: capacity a reservation does not use is
// lent. The preemption check below runs at a node heartbeat, at most once per
// SchedulerOptions::preemption_interval (0: at every heartbeat; the RM's
// rm.preemption-interval, 3 s, as YARN's preemption monitor), over every
// node. Each reservation below its guarantee with demand needs containers of
// its largest pending need that keeps it within its guarantee; they are
// placed in the nodes' room (free plus containers already under notice;
// free fragments too small for them count for nothing). While some have no
// room, borrowed containers, from ad-hoc queues and from reservations over
// their guarantee, are visited newest first and taken on their node; once a
// node's room with what it has taken fits a starved container, those
// containers get a PreemptionNotice (takePreemptionNotices). Taken
// containers on a node that never gets such room are spared (a kill there
// would only free room for ad-hoc work to take back; like YARN's
// fair-scheduler preemption, which picks containers per node to fit the
// starved request). Until its notices are killed or withdrawn, such a node
// keeps the free room the starved containers need from steps 2 and 3 (as
// YARN reserves a node for a starved request). After
// SchedulerOptions::preemption_grace they come back in NodeUpdateResult::
// to_kill of their node. Once the NM reports them gone (containerCompleted),
// the reservation gets the capacity on that node's next heartbeat, because
// step 1 runs first on every heartbeat.
// A notice is re-checked when its grace ends (like YARN's
// ProportionalCapacityPreemptionPolicy, which recomputes its to-preempt set
// every round): at the first heartbeat of its node at or after the deadline,
// in the node's allocation order, the container is killed only if it is
// still needed — its reservation, if any, stays within its guarantee without
// it, and the shortfall (reservations' unmet need minus the usable room,
// with the other containers under notice, killed or not) is not covered
// without it. Otherwise the notice is withdrawn as if never sent: the container keeps
// running and is a candidate again. So when the need shrinks, the containers
// checked first are the ones spared (on one node, the older ones). Notices
// are advisory, as YARN's PreemptionMessage: the AM is not told of a
// withdrawal (a notice not yet taken is dropped), only kills are binding.
//
// Allocation is heartbeat driven (YARN style): nodeUpdate fills one node.
// Gangs are granted all-or-none within that pass, so a gang must fit on the
// node. schedulePass runs nodeUpdate over every node in NodeId order.
// With SchedulerOptions::node_reservation (off by default), or in a leaf
// whose policy asks for it for its packing tier (Carbyne's leftover), a node
// whose free room the next ad-hoc app in its leaf's order cannot use is
// reserved for it, as YARN's Fair Scheduler reserves a node (types.h
// NodeReservationOptions: which app, whom the room is kept from, the
// bounds); a reserved node keeps the room that app needs from the apps of
// its leaf that would otherwise take it in its stead (in a packing leaf, the
// packing tier only) and serves it first there once its ask fits. O(1) per
// heartbeat without a reservation, O(the app's distinct needs) with one.
//
// Determinism: every decision is a function of the sequence of calls and
// their arguments (ties go to the entity created first; no hash-order
// iteration influences a decision).
//
// Cost: an allocation costs O(depth * log siblings) heap updates plus a scan
// of the chosen app's asks; a heartbeat on a node where no pending ask shape
// fits costs O(distinct ask shapes). No per-allocation scan over apps. Every
// queue, user, reservation and app keeps the distinct needs (capability x
// gang) of the pending asks below it, so a heartbeat descends only into
// entities with an ask whose need fits the node's free room; others are
// skipped at O(distinct needs + log siblings) each instead of visiting every
// app below them (the linear scan dominated the simulator at scale;
// docs/experiments/simulator.md).
// Decisions are exactly those of the full walk (SchedulerAskIndexTest).
// Preemption: the need is kept incrementally, so a heartbeat without a
// reservation below its guarantee with demand, or within preemption_interval
// of the last check, costs O(1); with one, counting
// the usable room costs O(nodes with room x starved needs + nodes / 64) (a
// bitset of the nodes whose room may have grown; full nodes are skipped),
// and a selection O(containers visited x (log lenders + starved needs)) — it
// never walks containers of reservations within their guarantee (the full
// walk on every heartbeat dominated the simulator at scale; docs/experiments/simulator.md).
// Re-checking a notice at its deadline costs the same count, where a word of
// 64 nodes whose rooms did not change since an earlier re-check with the
// same starved shapes costs O(starved reservations) (its placements are
// remembered) instead of a visit of its nodes; withdrawing it
// puts it back in allocation order after the older neighbour it had when
// noticed: O(neighbours under notice or reinserted since), or, when that
// neighbour has ended, O(min(candidates older, newer than it)).
// Containers: a grant or an end costs O(1) expected (one id-index update);
// by ContainerSlot an end needs no id lookup, and its app's re-keying waits
// for the next other call, which re-keys each app and ancestor once however
// many ends came first (the same decisions). Without the id index
// (SchedulerOptions::index_container_ids off) a container's id is formatted
// only when an Allocation or a notice names it, so a grant by slot
// (SlotUpdate) builds no string.
//
// Phoenix (crv.h, phoenix_policy.h): the core keeps the Constraint
// Resource Vector of pending hard-constrained asks — O(hard constraints) per
// ask change, O(constrained resources the node has) per container start or
// end. Apps with hard constraints whose leaf policy (policyOf: the leaf's
// AdhocQueueConfig::policy, else the scheduler's) provides the
// ConstraintAwareAppOrdering extension point are re-keyed, with their users, at the start of a
// heartbeat when the CRV moved: O(constrained apps x log siblings), so the order may lag the CRV by
// one heartbeat.
//
// Policies (ordering_policy.h): the scheduler's and each leaf's policy is
// looked up once, in create() (a leaf's again in setAdhocQueues, which
// installs its new policy), for the extension points it provides
// (extensionPoints); every decision then branches on which are present. A
// point a policy lacks costs nothing: no fair share without a planner, no
// CRV estimate without constraint-aware ordering, no scoring of asks
// without an AskChooser. A leaf whose policy packs across apps
// (CrossAppPacker: Carbyne's leftover, Tetris) grants, once its best user
// is in the packing tier, the best-scoring placeable ask of all its
// packing-tier apps on the node, at O(apps x asks) per grant.
//
// Thread-safety: none. One thread (the RM's scheduling strand) owns it.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "common/clock.h"
#include "common/ids.h"
#include "common/resource.h"
#include "common/status.h"
#include "scheduler/ordering_policy.h"
#include "scheduler/policies/crv.h"
#include "scheduler/types.h"

namespace morpheus::sched {

class Scheduler {
 public:
  // Validates `options` (queue paths start at "root", no empty segments, no
  // duplicates, weights > 0, grace and delay >= 0); errors are
  // INVALID_ARGUMENT naming the field ("adhoc_queues[2].weight"). `policy`
  // orders siblings; null = DrfOrderingPolicy. The policy is shared, not
  // copied, and must be stateless (ordering_policy.h); its extension points
  // are looked up here, once.
  static Result<std::unique_ptr<Scheduler>> create(
      SchedulerOptions options, std::shared_ptr<const QueueOrderingPolicy> policy = nullptr);
  ~Scheduler();
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;

  // ---- Nodes (ResourceTracker side) ----

  // A node joins with its capacity and attributes (matched by placement
  // constraints). ALREADY_EXISTS if known; INVALID_ARGUMENT ("total") if
  // `total` is negative in any dimension or zero.
  Status addNode(const NodeId& node, const Resource& total,
                 std::map<std::string, std::string> attributes);

  // The node is gone (lost or decommissioned). Returns its containers, oldest
  // first; they are no longer accounted anywhere and their apps' AMs should be
  // told they were lost. NOT_FOUND if unknown.
  Result<std::vector<Allocation>> removeNode(const NodeId& node);

  // Harvesting (Zhang et al. OSDI'16 §3): what the node offers
  // changes with its primary tenant's usage. The node's capacity becomes
  // `total` (may be zero); its running containers stay, and while they exceed
  // it nothing more is placed there (free stays below zero until enough end).
  // NOT_FOUND if unknown; INVALID_ARGUMENT ("total") if negative. O(1) when
  // unchanged, else re-sorts queues as addNode does.
  Status setNodeTotal(const NodeId& node, const Resource& total);

  // setNodeTotal for many nodes in one step, by slot (nodeSlot): every score
  // depends on the cluster total only, so the queues are re-sorted once for
  // the whole batch instead of once per node; decisions are those of calling
  // setNodeTotal for each entry in order. All-or-nothing: NOT_FOUND for an
  // unknown or removed slot, INVALID_ARGUMENT ("totals[i].total") for a
  // negative total, and then nothing changes. A later entry for the same slot
  // wins. O(changed nodes) plus one re-sort when any total changed.
  Status setNodeTotals(const std::vector<std::pair<NodeSlot, Resource>>& totals);

  // Harvesting (Zhang et al. OSDI'16 §4.1): the RM tags a node
  // with its primary tenant's class when it recomputes the classes. Sets (or,
  // with `value` empty, removes) attribute `key`; constraints see the change
  // from the next placement on. NOT_FOUND if unknown; INVALID_ARGUMENT
  // ("key") for an empty key. O(constrained resources) via the CRV.
  Status setNodeAttribute(const NodeId& node, const std::string& key, const std::string& value);

  // ---- Queues ----

  // A config reload: new weights and leaf policies of the ad-hoc queues.
  // `queues` must name exactly the configured paths the scheduler was
  // created with (adding or removing a queue needs a new scheduler);
  // validated as create() does, INVALID_ARGUMENT naming the field
  // ("adhoc_queues[2].weight", or ".path" for a path not configured) and
  // nothing changes. Each leaf's extension points and whether any policy is
  // constraint-aware are looked up again, as create() does; every score is
  // re-keyed (O(entities)).
  Status setAdhocQueues(const std::vector<AdhocQueueConfig>& queues);

  // ---- Applications ----

  // Admits an app to a queue. INVALID_ARGUMENT naming the field when the
  // queue is unknown ("queue.reservation_id: unknown reservation r_1") or the
  // ad-hoc path is not a leaf ("queue.path"), or ids are empty; ALREADY_EXISTS
  // if the app is known.
  Status addApp(const AppId& app, const UserId& user, const QueueRef& queue);

  // The app finished or was killed: forgets its asks and notices and returns
  // its containers (oldest first), which the caller must stop. NOT_FOUND if
  // unknown.
  Result<std::vector<Allocation>> removeApp(const AppId& app);

  // YARN allocate() asks: each ask replaces the app's previous ask with the
  // same request_id (or same priority when request_id is empty); count 0
  // withdraws it; asks not mentioned are kept. All-or-nothing: on
  // INVALID_ARGUMENT (the message names the field, e.g.
  // "asks[1].gang_size") nothing changes. NOT_FOUND if the app is unknown.
  Status updateAsks(const AppId& app, const std::vector<ResourceRequest>& asks);

  // The AM gives a container back: its capacity is free at once (the caller
  // tells the NM to stop it). NOT_FOUND if unknown; PERMISSION_DENIED if it
  // belongs to another app. Returns the released container.
  Result<Allocation> release(const AppId& app, const ContainerId& container);

  // The NM reports the container ended (any reason, preemption included):
  // frees its capacity. NOT_FOUND if unknown (e.g. already released).
  Result<Allocation> containerCompleted(const ContainerId& container);

  // release and containerCompleted by the slot the Allocation carries: the
  // same accounting without the id lookup or returning the container (the
  // caller holds it). NOT_FOUND for a slot whose container is gone;
  // PERMISSION_DENIED (release) if it belongs to another app.
  Status release(const AppId& app, ContainerSlot container);
  Status containerCompleted(ContainerSlot container);

  // Hints for a caller about to end very many containers by slot (the
  // simulator, a few events ahead): fetch the container's memory
  // (prefetchContainer), then, once it is cached, its list neighbours'
  // (prefetchNeighbours), which an end relinks. They change nothing and
  // never fail: any slot, stale or out of range, is accepted.
  void prefetchContainer(ContainerSlot container) const;
  void prefetchNeighbours(ContainerSlot container) const;

  // The slot of a live app (NOT_FOUND if unknown), and updateAsks by slot:
  // the same validation and decisions without the id lookup. NOT_FOUND for
  // the slot of a removed app (the generation differs once it is reused).
  Result<AppSlot> appSlot(const AppId& app) const;
  Status updateAsks(AppSlot app, const std::vector<ResourceRequest>& asks);

  // Work-preserving RM restart: an NM reports a running container. It is
  // re-accounted to its app, the app's queue (`container.reservation` is
  // ignored: the app's queue decides) and its node, even if that over-commits
  // the node. The app's asks are untouched (the AM resyncs them). NOT_FOUND
  // for an unknown app or node; ALREADY_EXISTS for a known container id;
  // INVALID_ARGUMENT ("container.resource") for a negative or zero resource.
  // Also how the RM accounts an AM container it placed itself: with
  // `container.am` set, the container is never a preemption victim.
  Status recoverContainer(const Allocation& container);

  // The app's remaining DAG as its AM reported it (each report
  // replaces the previous one; empty = no DAG). The DagPlanner of the app's
  // leaf queue's policy turns it into the app's ordering hint (Carbyne: its altruistic
  // need and remaining time) at the app's fair share now: the cluster not used
  // by reservations, split down the ad-hoc hierarchy by queue weight among
  // the siblings in use (demand or usage; the app's own queues always
  // count), then evenly over the leaf's users, then over the user's apps.
  // The hint's need also counts the app's AM containers (recoverContainer
  // with `am`) at the time of the report, as the app's usage does.
  // A policy without a DagPlanner leaves the app without a hint.
  // INVALID_ARGUMENT naming the field ("stages[2].deps": out of range, self
  // or a cycle; ".tasks_left", ".task_duration" > 0; ".task" non-zero and
  // non-negative) leaves the previous hint; NOT_FOUND if the app is unknown.
  Status reportDag(const AppId& app, const std::vector<DagStage>& stages);

  // ---- Reservations (the plan follower, docs/design/scheduler.md) ----

  // Creates or updates the reservation queue `id`: its guaranteed capacity is
  // the plan's allocation for its current instance. Called every plan step and
  // on every plan change, so it is cheap and idempotent. Lowering the
  // guarantee below what the queue uses makes the excess borrowed (and
  // preemptable). INVALID_ARGUMENT for an empty id or a negative guarantee.
  Status setReservation(const ReservationId& id, ReservationKind kind, const Resource& guaranteed);

  // The reservation ended or was deleted. Its apps keep running with no
  // guarantee (all their containers become borrowed) and the queue goes away
  // with its last app; new apps can no longer bind to it. NOT_FOUND if
  // unknown.
  Status removeReservation(const ReservationId& id);

  // ---- Queue caps (the Fair Scheduler's maxResources) ----

  // Caps what the apps of ad-hoc queue `path` and its descendants hold
  // (AM containers included): no container is granted that would take the
  // queue's use beyond `max` in any dimension; none = unlimited. Running
  // containers are never taken back. May be called at any time (config
  // reload). NOT_FOUND for an unknown path; INVALID_ARGUMENT ("max") when
  // negative.
  Status setQueueMaxResources(const std::string& path, std::optional<Resource> max);
  // Whether `extra` more for `app` keeps every capped ad-hoc queue above it
  // within its cap (true for reservation apps and unknown apps). O(depth).
  bool withinQueueMax(const AppId& app, const Resource& extra) const;

  // ---- Scheduling ----

  // One node heartbeat at time `now`: returns the containers granted on the
  // node (order of guarantees above) and the preempted containers on it whose
  // grace ended by `now`; then, if reservations below their guarantee cannot
  // be served from free capacity, selects containers to preempt (notices
  // available through takePreemptionNotices). NOT_FOUND if the node is
  // unknown. `now` should not go backwards; it is used for preemption
  // deadlines and soft-constraint delays only.
  Result<NodeUpdateResult> nodeUpdate(const NodeId& node, TimePoint now);

  // The slot of a known node (NOT_FOUND if unknown), and nodeUpdate by slot:
  // the same decisions without the id lookup. NOT_FOUND for the slot of a
  // removed node or one this scheduler never gave.
  Result<NodeSlot> nodeSlot(const NodeId& node) const;
  Result<NodeUpdateResult> nodeUpdate(NodeSlot slot, TimePoint now);
  // nodeUpdate by slot into `out` (cleared first; the capacity of its
  // vectors is reused): the same decisions, the containers by slot and
  // without their ids' strings (SlotUpdate). NOT_FOUND as above, and `out`
  // is then left empty.
  Status nodeUpdate(NodeSlot slot, TimePoint now, SlotUpdate* out);

  // Whether the node holds containers under preemption notice not yet sent
  // to kill: a nodeUpdate there may kill them or silently withdraw their
  // notices. False for an unknown slot.
  bool nodeHasNotices(NodeSlot slot) const;
  // Whether any node does (nodeHasNotices for some slot). O(1).
  bool anyNodeHasNotices() const;
  // Preemption notices of all apps not yet taken (takePreemptionNotices),
  // withdrawn or ended ones dropped. O(1).
  int64_t numUntakenNotices() const;

  // Nodes reserved for an app now (SchedulerOptions::node_reservation). O(1).
  int64_t numReservedNodes() const;

  // nodeUpdate for every node, in NodeId order; results concatenated.
  NodeUpdateResult schedulePass(TimePoint now);

  // Preemption notices for `app` not yet handed out (each returned once, in
  // selection order). Notices of containers that ended meanwhile, or whose
  // notice was withdrawn, are dropped.
  std::vector<PreemptionNotice> takePreemptionNotices(const AppId& app);
  // takePreemptionNotices for every app, by slot, appended to `out`: each
  // app's notices in selection order, the apps by AppSlot index. Builds no
  // string; O(notices taken + app slots up to the last app with one).
  void takePreemptionNotices(std::vector<SlotNotice>* out);

  // ---- Read view (metrics, reports, tests) ----

  Resource clusterTotal() const;
  Resource clusterUsed() const;
  size_t numNodes() const;
  size_t numContainers() const;
  // NOT_FOUND if unknown.
  Result<Resource> nodeUsed(const NodeId& node) const;
  Result<Resource> appUsed(const AppId& app) const;
  // Containers still asked for by the app (sum of its ask counts).
  Result<int64_t> appPending(const AppId& app) const;
  // The ordering hint of the app's last reportDag ({} if none).
  Result<AppHint> appHint(const AppId& app) const;
  // Used by a reservation queue or an ad-hoc queue (leaf or parent path).
  Result<Resource> queueUsed(const QueueRef& queue) const;
  // Used by `user` inside ad-hoc leaf `path` (zero if the user has no app there).
  Result<Resource> userUsed(const std::string& path, const UserId& user) const;
  // Every queue as it stands (for ListQueues and the REST scheduler view):
  // the ad-hoc hierarchy in path order, then the reservation queues in id
  // order (those removed but lingering for their apps included). Costs
  // O(queues + apps + asks); for reports, never called while scheduling.
  std::vector<QueueView> queues() const;

  // Admission control (Phoenix): for each pending ask of `app`
  // whose hard constraints no registered node meets (or no such node is large
  // enough for one container or gang), one line naming the ask and the
  // constraints. Empty when every ask can be placed some day. The ask stays
  // pending (a node may register later); this is its pending reason for app
  // reports. O(asks x nodes): for reports, never called while scheduling.
  // Also one line per capped ad-hoc queue above the app whose headroom (its
  // max-resources less its use) fits none of the app's pending asks.
  // NOT_FOUND if unknown.
  Result<std::vector<std::string>> pendingReasons(const AppId& app) const;

  // The Constraint Resource Vector as it stands (crv.h), by resource.
  std::vector<ConstraintResourceVector::Entry> constraintResourceVector() const;

 private:
  struct Impl;
  explicit Scheduler(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace morpheus::sched
