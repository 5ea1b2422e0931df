// Replica placement for a storage layer on harvested disks (Zhang et al.,
// OSDI'16 §4.2, Algorithm 2). Primary tenants reimage their
// disks (losing what secondaries stored) and, when busy, make them
// unavailable; both correlate within a class of servers. The placer groups
// servers into a grid of reimaging-frequency classes x peak-utilisation
// classes (quantiles over the servers, `reimage_classes` x `util_classes`)
// and places a block's replicas:
//   for each replica: the cells sharing neither class with a replica already
//   placed (else sharing one, else any cell not yet used, else any); among
//   them, one drawn with probability proportional to its free space; in it,
//   a server drawn among those with free space, not holding the block and on
//   a rack no replica is on (else any rack).
// Draws are seeded by the block id (and the placer's seed), so a block's
// placement is reproducible. INFEASIBLE when fewer distinct servers with
// free space exist than replicas wanted; then nothing is taken.
// Not thread-safe; the caller serialises. Cost O(S) per replica for S servers.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "common/ids.h"
#include "common/status.h"

namespace morpheus::rm {

struct StorageServer {
  NodeId id;
  std::string rack;
  double reimages_per_month = 0;  // from the primary tenant's history
  double peak_util = 0;           // fraction of capacity
  int64_t free_blocks = 0;
};

struct Block {
  std::string id;
  int replicas = 3;
};

struct ReplicaPlacerOptions {
  int reimage_classes = 3;
  int util_classes = 3;
  uint64_t seed = 1;
};

class ReplicaPlacer {
 public:
  // INVALID_ARGUMENT naming "servers[i].<field>" (empty or duplicate id,
  // negative values) or "options.*" (classes < 1).
  static Result<ReplicaPlacer> create(std::vector<StorageServer> servers,
                                      ReplicaPlacerOptions options);
  // The servers for `block`'s replicas, each taking one block of space.
  // INVALID_ARGUMENT naming "block.replicas" (< 1) or "block.id" (empty).
  Result<std::vector<NodeId>> PlaceReplicas(const Block& block);
  // The cell (reimage class, utilisation class) of a server; (-1, -1) if unknown.
  std::pair<int, int> cellOf(const NodeId& id) const;
  int64_t freeBlocks(const NodeId& id) const;

 private:
  ReplicaPlacer(std::vector<StorageServer> servers, ReplicaPlacerOptions options);
  struct Server {
    StorageServer s;
    int rc = 0, uc = 0;
  };
  std::vector<Server> servers_;
  ReplicaPlacerOptions opts_;
};

// Baselines for the simulator: distinct servers with free space, drawn
// uniformly (random) or the lowest (reimages, peak) first (best-first).
// Both take one block of space per replica; INFEASIBLE like PlaceReplicas.
Result<std::vector<NodeId>> placeRandom(std::vector<StorageServer>& servers, const Block& block,
                                        uint64_t seed);
Result<std::vector<NodeId>> placeBestFirst(std::vector<StorageServer>& servers, const Block& block);

}  // namespace morpheus::rm
