// What an NM heartbeat reports about its containers (NMs report
// only container changes; YARN's NodeStatusUpdater sends the same delta,
// Vavilapalli et al., SoCC'13 §3.2 "node heartbeat").
//
// A full report lists every container; a change report lists only completed
// containers not yet acknowledged (they are repeated until the RM acks them,
// as before) and running containers this RM registration has not received
// yet. A report is full right after reset() (every registration, including
// one after a resync or an RM failover) and then at most every
// `full_every`-th delivered heartbeat, so an RM that considers a container
// gone learns of it within `full_every` heartbeats and orders it killed.
//
// Jitter: after the full report that follows a registration, the next one
// comes at the node's own phase (phase_seed % full_every change reports
// earlier than full_every), not full_every heartbeats later. NMs that
// register together (a cluster start, every NM resyncing after an RM
// failover) would otherwise send their full reports in the same second
// forever, a burst of full_every times the usual load on the RM.
//
// Every report carries the node's totals (used, RSS, CPU, running count)
// over all running containers, whatever it lists.
//
// Thread-safety: none; used by the NodeAgent's thread only.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_set>
#include <vector>

#include "morpheus/v1/resource_tracker.pb.h"
#include "nodemanager/container_runtime.h"

namespace morpheus::nm {

class HeartbeatReporter {
 public:
  // `full_every` >= 1 (1 = every report is full, the old behaviour);
  // `phase_seed`: any stable per-node value (the NM passes a hash of its id).
  explicit HeartbeatReporter(int full_every, uint64_t phase_seed = 0);

  // The next report is full (call on every registration).
  void reset();
  // Fills `req`'s container statuses, changes_only, running_containers and
  // totals from `snapshot`, the node's containers now.
  void build(const std::vector<ContainerSnapshot>& snapshot, v1::NodeHeartbeatRequest* req);
  // The RM answered the last built report: the running containers it listed
  // count as received. A report that was not answered is simply not
  // delivered; the next one lists its changes again.
  void delivered();

 private:
  const int full_every_;
  const int phase_;  // change reports skipped after a registration's full report
  bool force_full_ = true;
  int since_full_ = 0;                     // delivered change reports since the last full one
  std::unordered_set<std::string> known_;  // running containers the RM has received
  // Of the last built report: was it full, the running ids it listed, and
  // every running id then (to forget containers that ended).
  bool built_full_ = false;
  std::vector<std::string> built_listed_;
  std::unordered_set<std::string> built_running_;
};

}  // namespace morpheus::nm
