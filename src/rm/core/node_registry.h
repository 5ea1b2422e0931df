// The RM's view of the cluster's nodes: registration, heartbeats, liveness,
// and the operator's drain/decommission state (YARN graceful decommission,
// Slurm's drain; docs/operator/node-operations.md).
// A node silent for longer than the expiry is lost (YARN NMLivelinessMonitor).
//
// Admin states (NodeAdminState) and their transitions (nextAdminState):
//   IN_SERVICE --drain--> DRAINED --undrain--> IN_SERVICE
//   IN_SERVICE or DRAINED --decommission--> DECOMMISSIONING
//   DECOMMISSIONING --(no running containers, or its deadline)--> DECOMMISSIONED
//   any --undrain--> IN_SERVICE (cancels a decommission; a decommissioned
//   node may register again)
// A node not IN_SERVICE gets no new containers and its capacity leaves the
// plan (liveCapacity). A DECOMMISSIONED node is not live: its registration and
// heartbeats are refused (INFEASIBLE (gRPC FAILED_PRECONDITION) naming the node). Admin states
// are kept apart from registrations, so a state recovered from the state store
// applies to a node that registers later (RM restart) and survives the node's
// unregistering.
//
// Thread-safety: not internally synchronised; the owner (RmCore) serialises
// calls. Time comes in as arguments (no wall clock here).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/ids.h"
#include "common/resource.h"
#include "common/status.h"

namespace morpheus::rm {

enum class NodeAdminState { kInService, kDrained, kDecommissioning, kDecommissioned };

// "in-service", "drained", "decommissioning", "decommissioned" (the state
// store's and the logs' names).
const char* toString(NodeAdminState s);
// The inverse of toString; nullopt for another text.
std::optional<NodeAdminState> parseNodeAdminState(const std::string& s);

struct NodeAdmin {
  NodeAdminState state = NodeAdminState::kInService;
  // DECOMMISSIONING: when its containers are killed if still running.
  TimePoint deadline;
};

enum class NodeAdminOp { kDrain, kUndrain, kDecommission };

// The state machine (file comment): the admin state after `op` on a node in
// `current`; `deadline` is a decommission's. Idempotent: drain of a drained
// node, decommission of a decommissioned one and undrain of one in service
// change nothing. Decommission of a DECOMMISSIONING node moves its deadline.
// INFEASIBLE (gRPC FAILED_PRECONDITION) naming the node and its state for a drain of a node
// that is decommissioning or decommissioned (undrain it first). Pure.
Result<NodeAdmin> nextAdminState(const std::string& node, const NodeAdmin& current, NodeAdminOp op,
                                 TimePoint deadline);

struct NodeInfo {
  NodeId id;
  std::string container_manager_address;
  std::string http_address;
  Resource total;
  std::map<std::string, std::string> attributes;
  bool live = true;
  TimePoint registered_at;
  TimePoint last_heartbeat;
  int64_t last_sequence = 0;
  // Last reported usage.
  Resource used;
  int64_t used_rss_mib = 0;
  double used_cpu_vcores = 0;
  int32_t num_containers = 0;
  NodeAdmin admin;  // filled in by nodes() and find() from the admin states
};

// The most one node may offer (documented maximum; a registration above it is
// refused): 64 TiB of memory, 100k vcores, 10^9 of any extended resource.
// Bounded node resources keep every sum of node capacities, and the plan built
// on it, far from int64 overflow.
inline constexpr int64_t kMaxNodeMemoryMib = 64LL * 1024 * 1024;
inline constexpr int64_t kMaxNodeVcores = 100'000;
inline constexpr int64_t kMaxNodeExtended = 1'000'000'000;

class NodeRegistry {
 public:
  explicit NodeRegistry(Millis expiry) : expiry_(expiry) {}

  // Adds or replaces the node (an NM restart re-registers the same id).
  // INVALID_ARGUMENT naming the field on a bad node id (validateNodeId), an
  // empty address, zero/negative resources, resources above the kMaxNode*
  // limits, or a total that would overflow the cluster's capacity.
  // ALREADY_EXISTS naming the node and its live address when the id is live
  // at another container_manager_address (a second NM
  // with the same id must not take the record over); the same address (an NM
  // restart) is accepted, and so is a new address once the node is lost or
  // has unregistered. INFEASIBLE (gRPC FAILED_PRECONDITION) naming the node when it is
  // DECOMMISSIONED (undrain returns it). A refused registration changes
  // nothing.
  Status registerNode(NodeInfo info, TimePoint now);
  // Records a heartbeat. NOT_FOUND when the node is unknown or was declared
  // lost (the NM must re-register: resync); INFEASIBLE (gRPC FAILED_PRECONDITION) when it is
  // DECOMMISSIONED (the NM must stop); INVALID_ARGUMENT for a usage
  // outside [0, the kMaxNode* limits].
  Status heartbeat(const NodeId& id, int64_t sequence, const Resource& used, int64_t rss_mib,
                   double cpu_vcores, int32_t num_containers, TimePoint now);
  // Removes a node that leaves gracefully. NOT_FOUND when unknown.
  Status unregisterNode(const NodeId& id);
  // Marks every live node whose last heartbeat is older than the expiry as
  // lost and returns their ids (each reported once).
  std::vector<NodeId> expire(TimePoint now);

  // A copy of the node's record with its admin state; nullopt when unknown.
  std::optional<NodeInfo> find(const NodeId& id) const;
  // `include_lost` also lists lost and decommissioned nodes.
  std::vector<NodeInfo> nodes(bool include_lost) const;
  // Sum of the resources of live nodes in service (the plan's capacity):
  // drained, decommissioning and decommissioned nodes are left out.
  Resource liveCapacity() const;
  int liveCount() const;                   // live nodes, drained and decommissioning ones included
  int lostCount() const;                   // registered nodes neither live nor decommissioned
  int adminCount(NodeAdminState s) const;  // registered nodes in state `s`

  // ---- Admin state (file comment) ----
  // The node's admin state (IN_SERVICE when none was set).
  NodeAdmin admin(const NodeId& id) const;
  // What `op` would make of the node's admin state (nextAdminState), without
  // applying it. NOT_FOUND naming the node when it never registered and has
  // no admin state.
  Result<NodeAdmin> planAdmin(const NodeId& id, NodeAdminOp op, TimePoint deadline) const;
  // Sets the node's admin state (a planAdmin result, or one recovered from
  // the state store for a node that may not have registered yet). A
  // DECOMMISSIONED node stops being live.
  void setAdmin(const NodeId& id, const NodeAdmin& admin);
  // The DECOMMISSIONING nodes and their deadlines.
  std::vector<std::pair<NodeId, TimePoint>> decommissioning() const;

 private:
  NodeAdmin adminOf(const NodeId& id) const;
  bool inService(const NodeId& id) const;

  Millis expiry_;
  std::map<NodeId, NodeInfo> nodes_;
  std::map<NodeId, NodeAdmin> admin_;  // only nodes not IN_SERVICE
};

}  // namespace morpheus::rm
