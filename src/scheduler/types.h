// Value types of the scheduler core (docs/design/scheduler.md). They map 1:1 onto the AM
// protocol messages (proto/morpheus/v1/application_master.proto, common.proto)
// but do not depend on protobuf: the RM's service edge converts.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "common/clock.h"
#include "common/ids.h"
#include "common/resource.h"

namespace morpheus::sched {

// Where an application runs: a reservation queue (docs/design/scheduler.md: every admitted
// reservation is a per-job queue) or a leaf of the ad-hoc hierarchy
// ("root.prod.etl").
class QueueRef {
 public:
  static QueueRef reservation(ReservationId id) { return QueueRef(std::move(id)); }
  static QueueRef adhoc(std::string path) { return QueueRef(std::move(path)); }

  bool isReservation() const { return std::holds_alternative<ReservationId>(v_); }
  // Requires isReservation().
  const ReservationId& reservationId() const { return std::get<ReservationId>(v_); }
  // Requires !isReservation().
  const std::string& adhocPath() const { return std::get<std::string>(v_); }
  bool operator==(const QueueRef&) const = default;

 private:
  explicit QueueRef(ReservationId id) : v_(std::move(id)) {}
  explicit QueueRef(std::string path) : v_(std::move(path)) {}
  std::variant<std::string, ReservationId> v_;
};

// Periodic reservations have strict priority over one-off ones (docs/design/planner.md:
// one-off reservations are planned on the residual capacity).
enum class ReservationKind { kPeriodic, kOneOff };

// How a PlacementConstraint compares the node attribute with its values
// (Phoenix, Thinakaran et al. ICDCS'17 §III: constraints on resource kinds —
// ISA, number of cores, memory, disks, kernel version, network speed,
// accelerators — are equalities or lower bounds).
enum class ConstraintOp {
  kIn,              // the attribute is one of `values` (empty: merely present)
  kAtLeast,         // numeric attribute >= values[0] ("cores", "network_gbps")
  kVersionAtLeast,  // dot-separated version >= values[0] ("kernel": 5.10 > 5.4)
};

// v1.PlacementConstraint: the node attribute `key` compared with `values` by
// `op` (see ConstraintOp). Hard constraints are never violated; soft ones are
// preferences (Phoenix-style, delay scheduling: see
// SchedulerOptions::soft_constraint_delay). Matching: scheduler/policies/crv.h.
struct PlacementConstraint {
  std::string key;
  std::vector<std::string> values;
  bool hard = false;
  ConstraintOp op = ConstraintOp::kIn;
};

// v1.ResourceRequest: `count` containers of `capability` at `priority`
// (lower = more urgent). An ask with the same non-empty `request_id` (or, with
// an empty request_id, the same priority) replaces the previous one; count 0
// withdraws it. gang_size > 1: containers are granted in all-or-nothing groups
// of gang_size within one scheduling pass; count must then be a multiple of it.
struct ResourceRequest {
  std::string request_id;
  int32_t priority = 0;
  Resource capability;
  int32_t count = 0;
  int32_t gang_size = 0;
  std::vector<PlacementConstraint> constraints;
  // The AM's estimate of one container's run time (0 = unknown). Used by the
  // Phoenix ordering (shortest first, M/G/1 waiting estimate); ignored by
  // DRF and FIFO.
  Millis expected_duration{0};
};

// A handle to a live container of one Scheduler (Allocation::slot), for
// callers that end very many containers (the simulator): containerCompleted
// and release by slot skip the id lookup. A slot is reused once its
// container is gone; the generation tells the new container from the old,
// so a stale handle is NOT_FOUND, never another container.
struct ContainerSlot {
  int32_t index = -1;
  uint32_t generation = 0;
};

// v1.Container minus the transport fields (address, token): one container the
// scheduler granted (or re-adopted, or is giving back in a removal result).
struct Allocation {
  ContainerId container;
  ContainerSlot slot;  // set by the scheduler that granted or recovered it
  AppId app;
  NodeId node;
  Resource resource;
  int32_t priority = 0;
  std::string request_id;     // echoes ResourceRequest.request_id
  ReservationId reservation;  // the reservation queue it counts against ("" = ad hoc)
  // An application master's container (placed by the RM, handed in with
  // Scheduler::recoverContainer). Never selected for preemption: killing an
  // AM kills the whole attempt, not just borrowed capacity.
  bool am = false;
};

// v1.PreemptionNotice for the owning AM. Advisory: after `deadline` the
// container is returned in NodeUpdateResult::to_kill of its node if it is
// still needed then, else the notice is silently withdrawn (scheduler.h).
struct PreemptionNotice {
  ContainerId container;
  AppId app;
  NodeId node;
  TimePoint deadline;
  std::string reason;
};

// A dense handle to a node of one Scheduler (Scheduler::nodeSlot), for
// callers that update the same nodes very often (the simulator at 50,000
// nodes): no id lookup per update. A slot is never reused: once its node is
// removed it stays invalid, even if a node of the same id joins again.
struct NodeSlot {
  int32_t value = -1;
};

// A handle to an app of one Scheduler (Scheduler::appSlot), for callers that
// address the same apps very often (the simulator): no id lookup per call. A
// slot is reused once its app is removed; the generation tells the new app
// from the old, so a stale handle is NOT_FOUND, never another app.
struct AppSlot {
  int32_t index = -1;
  uint32_t generation = 0;
  bool operator==(const AppSlot&) const = default;
};

// A PreemptionNotice by slot (Scheduler::takePreemptionNotices into a
// vector): its container, app and node, and the kill deadline, without the
// ids' strings, for callers that address them by slot (the simulator takes
// millions of notices).
struct SlotNotice {
  ContainerSlot container;
  AppSlot app;
  NodeSlot node;
  TimePoint deadline;
};

// One container of a heartbeat by slot (Scheduler::nodeUpdate into a
// SlotUpdate): the Allocation's accounting fields without its strings, for
// callers that address containers and apps by slot and start millions of
// containers (the simulator).
struct SlotGrant {
  ContainerSlot container;
  AppSlot app;
  Resource resource;
  int32_t priority = 0;  // the ask's
};

// NodeUpdateResult by slot: the same containers in the same order.
struct SlotUpdate {
  std::vector<SlotGrant> grants;
  std::vector<ContainerSlot> to_kill;
};

// What one node heartbeat produced.
struct NodeUpdateResult {
  // New containers, in grant order. Gang members are contiguous.
  std::vector<Allocation> allocations;
  // Preempted containers whose grace period expired: the NM must kill them.
  // They stay accounted until containerCompleted() reports them gone. Each is
  // returned once.
  std::vector<Allocation> to_kill;
};

// One remaining stage of an app's DAG as its AM reports it (Carbyne,
// OSDI'16 §4: AllocateRequest.stages). Stages that finished are not reported.
struct DagStage {
  int64_t tasks_left = 0;    // tasks not yet succeeded (running ones included), > 0
  Millis task_duration{0};   // estimated duration of one task, > 0
  Resource task;             // resources of one task, not zero
  std::vector<size_t> deps;  // indices (in the same report) of stages that must finish first
  // The request id of the ask carrying the stage's tasks (the AM's stage
  // name); empty when unknown. Lets a policy tell the asks of the stages
  // its plan needs now from the others (AppHint::needed).
  std::string request_id{};
};

// What an ordering policy derived from an app's DAG (DagPlanner::planApp),
// or for an app that reported none (NoDagPlanner::planWithoutDag). valid =
// false: the policy derived nothing and the app is ordered by its usage
// alone.
struct AppHint {
  bool valid = false;
  // Least allocation now that keeps the estimated completion. From a DAG
  // the scheduler adds the app's AM containers (Scheduler::reportDag): the
  // plan sees tasks, the app's usage counts its AM too.
  Resource need;
  Millis remaining{0};   // estimated time to completion at its fair share (max: unknown)
  bool from_dag = true;  // false: NoDagPlanner's (need = the fair share)
  // Request ids (DagStage::request_id) of the stages whose tasks make up
  // `need`, sorted; empty when the report named none.
  std::vector<std::string> needed{};
  // Per entry of `needed`: how many of that stage's tasks the plan runs now
  // (its running tasks included), so tasks beyond that many have slack
  // (AskInput::running counts them). Empty: the counts are unknown.
  std::vector<int64_t> needed_tasks{};
};

class QueueOrderingPolicy;

// One ad-hoc queue from config. Paths are dot-separated and start at "root"
// ("root.prod.etl"); parents missing from the list are created with weight 1.
struct AdhocQueueConfig {
  std::string path;
  double weight = 1.0;  // share relative to siblings; must be > 0
  // Leaves only: orders the users and apps inside the queue
  // (scheduler.policy); null = the scheduler's policy.
  std::shared_ptr<const QueueOrderingPolicy> policy = nullptr;
};

// Read view of one queue (Scheduler::queues).
struct QueueView {
  QueueRef ref = QueueRef::adhoc("");
  bool leaf = true;     // ad-hoc: accepts apps (reservation queues: true)
  double weight = 1.0;  // ad-hoc: share relative to siblings
  ReservationKind kind = ReservationKind::kOneOff;  // reservation queues only
  Resource guaranteed;             // reservation queues: guarantee now; ad-hoc: zero
  Resource used;                   // containers in use, descendants included
  Resource pending;                // sum of capability x count of the apps' asks
  int64_t pending_containers = 0;  // sum of the apps' ask counts
  int32_t apps = 0;                // apps in the scheduler (descendants included)
  // Ad-hoc: the cap on what its apps hold (Scheduler::setQueueMaxResources);
  // none = unlimited.
  std::optional<Resource> max_resources;
};

// Node reservations for ad-hoc work, as the YARN Fair Scheduler's reserved
// container, in every ad-hoc leaf with `enabled`, and in the leaves whose
// policy asks for them for its packing tier (CrossAppPacker::reservesNodes:
// Carbyne's leftover) whatever `enabled` says; the bounds below hold for
// both. When the app a leaf would serve next on a node has no pending ask
// that fits the node's free room, the node is reserved for it, and the free
// room it needs (up to its largest pending need that fits the node) is kept
// for it, as other containers end there, from the apps that would otherwise
// take it in its stead (below), until the app's ask fits; then the app is
// served on that node before them and the reservation ends. Without it the
// room freed on a full node goes to whichever app's ask fits it, so an app
// whose containers are larger than what frees up at a time waits while
// smaller ones pass it.
//  - Which app: the first app in the leaf's order the walk reaches (its
//    best user's best app) when none of its needs fits. In a leaf whose
//    policy packs across apps (CrossAppPacker: Carbyne's leftover), with
//    `packing_tier_only` (always, when the policy asks for them) only once
//    the walk reaches the packing tier: the packing tier's best app
//    (Carbyne: the leftover job with the least remaining time); apps below
//    the packing tier (Carbyne: jobs below their altruistic need, new jobs
//    and their AMs) then never get a reservation.
//  - Whom the room is kept from. A reservation made in the packing tier:
//    only from the packing of its own leaf (the allocation that would
//    otherwise give the room to another packing-tier app of the leaf); the
//    reserved app is served there first once its ask fits the node's whole
//    free room. Any other reservation (a leaf without a packer, or
//    `packing_tier_only` off): from every app of its own leaf; the reserved
//    app is served first when the walk enters the leaf. Either way it is
//    also kept from reservation queues beyond their guarantee served after
//    the ad-hoc hierarchy (they borrow only what no ad-hoc app asked for;
//    with SchedulerOptions::borrowing_reservations_share they are siblings
//    of the top-level queues and see the whole room, as other queues do).
//    Everything else sees the node's whole free room: the apps of the leaf
//    the policy serves before its packing tier (Carbyne's DRF tier), and
//    every other leaf and queue, whatever its policy or tier. So a
//    reservation never lets one leaf's leftover (or first app) take room
//    from another queue's fair share, nor from its own leaf's apps served
//    before it; when they take the room the app waits for, the reservation
//    holds on until its app fits or it times out.
//  - Bounds: one app per node; an app holds at most
//    ceil(reservable_nodes x nodes) nodes (YARN's
//    yarn.scheduler.fair.reservable-nodes, 0.05 there too); a reservation
//    ends after `timeout` (YARN has none), when the app is served on the
//    node, or when it has no pending ask that fits the node's capacity.
//    After a timeout the node's room goes to the app first in the leaf's
//    order at that heartbeat, which may reserve it again (the same app if
//    it is still first and still does not fit): the timeout bounds how long
//    a node is held for an app that is no longer first.
struct NodeReservationOptions {
  bool enabled = false;
  double reservable_nodes = 0.05;  // fraction of the nodes one app may hold, > 0
  Millis timeout{60000};           // > 0
  bool packing_tier_only = true;
};

struct SchedulerOptions {
  // Ad-hoc hierarchy. Apps go to leaves only. Empty = a single leaf
  // "root.default" with weight 1.
  std::vector<AdhocQueueConfig> adhoc_queues;
  // Time between a preemption notice and the container appearing in a to_kill
  // list, if it is still needed then (scheduler.h). Default 15 s
  // (rm.preemption-grace).
  Millis preemption_grace{15000};
  // How often the preemption check runs (scheduler.h): at a node heartbeat
  // only when `preemption_interval` has passed since the last heartbeat that
  // ran it with a reservation below its guarantee with demand (the TimePoints
  // given to nodeUpdate). 0 (the default here): at every heartbeat. The RM
  // and morpheus-sim give 3 s (rm.preemption-interval), as YARN's
  // ProportionalCapacityPreemptionPolicy runs on its monitoring interval
  // (yarn.resourcemanager.monitor.capacity.preemption.monitoring_interval,
  // 3 s there too) instead of at every heartbeat. >= 0.
  Millis preemption_interval{0};
  // Delay scheduling for soft constraints: an ask whose soft constraints do
  // not match a node may use it once it has been passed over for this long
  // (measured with the TimePoints given to nodeUpdate). Default 3 s, three
  // heartbeats at the default 1 s NM interval.
  Millis soft_constraint_delay{3000};
  // Container ids are "<app>_<container_id_epoch>_<sequence>"; give the RM's
  // start time (ms) so ids stay unique across RM restarts. Default 0.
  int64_t container_id_epoch = 0;
  // false: reservation queues beyond their guarantee are served after the
  // whole ad-hoc hierarchy (they borrow only what nobody else asked for).
  // true: they compete with the top-level ad-hoc queues by the ordering
  // policy's score at weight 1 (the RM daemon's behaviour: a reservation whose
  // window ended, or whose guarantee is below its needs, keeps progressing
  // next to ad-hoc work instead of starving behind it).
  bool borrowing_reservations_share = false;
  // true (default): containers are found by id (release and
  // containerCompleted by ContainerId, recoverContainer's duplicate check).
  // false: the caller addresses them by ContainerSlot only (the simulator,
  // which starts and ends millions of containers): no id index is kept, and
  // the calls by id and recoverContainer are INFEASIBLE. Decisions are the
  // same either way.
  bool index_container_ids = true;
  // Node reservations for ad-hoc apps in every leaf (off by default; a
  // policy may ask for them for its packing tier: NodeReservationOptions).
  NodeReservationOptions node_reservation;
};

}  // namespace morpheus::sched
