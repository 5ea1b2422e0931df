// TEST ORACLE, not product code: the scheduler core as it was before the
// pending-ask index (the scale work), copied verbatim
// from src/scheduler/scheduler.{h,cc} with only the namespace changed
// (morpheus::sched::reference). Every heartbeat of this copy walks the heaps
// into every app with demand; ask_index_diff_test.cc drives it and the real
// Scheduler with the same calls and requires identical results. Do not
// "improve" it: it is the old behaviour the index must reproduce.
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
//     QueueOrderingPolicy), DRF between users inside a leaf, then apps;
//  3. reservation queues beyond their guarantee (work conserving: a
//     reservation may borrow what nobody else asked for). With
//     SchedulerOptions::borrowing_reservations_share they are served in step 2
//     instead, as siblings of the top-level ad-hoc queues at weight 1.
// Inside an app, asks go by priority (lower first), then request id.
//
// Work conserving with preemption: capacity a reservation does not use is
// lent. When reservations below their guarantee have demand that free
// capacity plus containers already being preempted cannot meet, borrowed
// containers — newest first, from ad-hoc queues and from reservations over
// their guarantee — get a PreemptionNotice (takePreemptionNotices); after
// SchedulerOptions::preemption_grace they come back in NodeUpdateResult::
// to_kill of their node. Once the NM reports them gone (containerCompleted),
// the reservation gets the capacity on that node's next heartbeat, because
// step 1 runs first on every heartbeat.
//
// Allocation is heartbeat driven (YARN style): nodeUpdate fills one node.
// Gangs are granted all-or-none within that pass, so a gang must fit on the
// node. schedulePass runs nodeUpdate over every node in NodeId order.
//
// Determinism: every decision is a function of the sequence of calls and
// their arguments (ties go to the entity created first; no hash-order
// iteration influences a decision).
//
// Cost: an allocation costs O(depth * log siblings) heap updates plus a scan
// of the chosen app's asks; a heartbeat on a node where no pending ask shape
// fits costs O(distinct ask shapes). No per-allocation scan over apps.
// Preemption: the shortfall is kept incrementally, so a heartbeat without one
// costs O(1); a selection costs O((lenders + containers visited) log lenders)
// — it never walks containers of reservations within their guarantee (the
// full walk on every heartbeat dominated the simulator at scale).
//
// Thread-safety: none. One thread (the RM's scheduling strand) owns it.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/ids.h"
#include "common/resource.h"
#include "common/status.h"
#include "scheduler/ordering_policy.h"
#include "scheduler/types.h"

namespace morpheus::sched::reference {

class Scheduler {
 public:
  // Validates `options` (queue paths start at "root", no empty segments, no
  // duplicates, weights > 0, grace and delay >= 0); errors are
  // INVALID_ARGUMENT naming the field ("adhoc_queues[2].weight"). `policy`
  // orders siblings; null = DrfOrderingPolicy. The policy is shared, not
  // copied, and must be stateless.
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

  // Work-preserving RM restart: an NM reports a running container. It is
  // re-accounted to its app, the app's queue (`container.reservation` is
  // ignored: the app's queue decides) and its node, even if that over-commits
  // the node. The app's asks are untouched (the AM resyncs them). NOT_FOUND
  // for an unknown app or node; ALREADY_EXISTS for a known container id;
  // INVALID_ARGUMENT ("container.resource") for a negative or zero resource.
  // Also how the RM accounts an AM container it placed itself: with
  // `container.am` set, the container is never a preemption victim.
  Status recoverContainer(const Allocation& container);

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

  // ---- Scheduling ----

  // One node heartbeat at time `now`: returns the containers granted on the
  // node (order of guarantees above) and the preempted containers on it whose
  // grace ended by `now`; then, if reservations below their guarantee cannot
  // be served from free capacity, selects containers to preempt (notices
  // available through takePreemptionNotices). NOT_FOUND if the node is
  // unknown. `now` should not go backwards; it is used for preemption
  // deadlines and soft-constraint delays only.
  Result<NodeUpdateResult> nodeUpdate(const NodeId& node, TimePoint now);

  // nodeUpdate for every node, in NodeId order; results concatenated.
  NodeUpdateResult schedulePass(TimePoint now);

  // Preemption notices for `app` not yet handed out (each returned once, in
  // selection order). Notices of containers that ended meanwhile are dropped.
  std::vector<PreemptionNotice> takePreemptionNotices(const AppId& app);

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
  // Used by a reservation queue or an ad-hoc queue (leaf or parent path).
  Result<Resource> queueUsed(const QueueRef& queue) const;
  // Used by `user` inside ad-hoc leaf `path` (zero if the user has no app there).
  Result<Resource> userUsed(const std::string& path, const UserId& user) const;
  // Every queue as it stands (for ListQueues and the REST scheduler view):
  // the ad-hoc hierarchy in path order, then the reservation queues in id
  // order (those removed but lingering for their apps included). Costs
  // O(queues + apps + asks); for reports, never called while scheduling.
  std::vector<QueueView> queues() const;

 private:
  struct Impl;
  explicit Scheduler(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace morpheus::sched::reference
