// The RM's view of the cluster's nodes: registration, heartbeats, liveness.
// A node silent for longer than the expiry is lost (YARN NMLivelinessMonitor).
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
  // has unregistered. A refused registration changes nothing.
  Status registerNode(NodeInfo info, TimePoint now);
  // Records a heartbeat. NOT_FOUND when the node is unknown or was declared
  // lost (the NM must re-register: resync); INVALID_ARGUMENT for a usage
  // outside [0, the kMaxNode* limits].
  Status heartbeat(const NodeId& id, int64_t sequence, const Resource& used, int64_t rss_mib,
                   double cpu_vcores, int32_t num_containers, TimePoint now);
  // Removes a node that leaves gracefully. NOT_FOUND when unknown.
  Status unregisterNode(const NodeId& id);
  // Marks every live node whose last heartbeat is older than the expiry as
  // lost and returns their ids (each reported once).
  std::vector<NodeId> expire(TimePoint now);

  const NodeInfo* find(const NodeId& id) const;
  std::vector<NodeInfo> nodes(bool include_lost) const;
  // Sum of the resources of live nodes (the plan's capacity).
  Resource liveCapacity() const;
  int liveCount() const;
  int lostCount() const;

 private:
  Millis expiry_;
  std::map<NodeId, NodeInfo> nodes_;
};

}  // namespace morpheus::rm
