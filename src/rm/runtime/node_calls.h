// The NMs' side of YARN's ResourceTracker as the RM's runtime takes it: a
// node's registration and its heartbeat's report as typed calls, and what the
// runtime answers the node, in domain values. The gRPC edge
// (rm/grpc/resource_tracker_service.h) parses the wire requests into these
// (INVALID_ARGUMENT naming the field as the NM wrote it, before anything
// changes), and turns the answer into the reply; the runtime sees no protobuf
// message on this path. Liveness, usage, the RM's epoch and the reply's action
// (RESYNC, SHUTDOWN) are the RmCore's and the edge's, not in these calls.
//
// Plain values: no locking, no invariants beyond those the edge's parsing
// establishes (listed per field).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/ids.h"
#include "common/resource.h"
#include "morpheus/v1/common.pb.h"

namespace morpheus::rm {

// One RegisterNode (v1.RegisterNodeRequest), parsed: the node as its NM
// announces it. The RmCore's NodeInfo is built from it too.
struct NodeRegistration {
  NodeId id;                                      // node_id
  std::string container_manager_address;          // its NM's ContainerManager, host:port
  std::string http_address;                       // its NM's HTTP endpoint (the runtime ignores it)
  Resource total;                                 // total, every dimension >= 0
  std::map<std::string, std::string> attributes;  // attributes, keys non-empty
};

// One container as the node reports it (v1.ContainerStatus in a heartbeat).
struct ContainerReport {
  ContainerId id;         // container_id, never empty
  bool complete = false;  // state COMPLETE; any other state (NEW, RUNNING) counts as alive
  int32_t exit_status = 0;
  // The wire's enum value, as CompletedContainer's: it goes on unchanged to
  // the AM and the container history, values newer than this RM included.
  v1::ContainerExitReason exit_reason = v1::EXIT_REASON_UNSPECIFIED;
  std::string diagnostics;
  int64_t rss_mib = 0;    // as the NM last sampled it
  double cpu_vcores = 0;  // as the NM last sampled it
  TimePoint start;        // start_ms; the epoch (or before) = not reported
  TimePoint end;          // end_ms; the epoch = not reported
  Resource resource;      // its allocation, every dimension >= 0 (zero = not reported)
};

// The primary tenant's measured use of the node (harvesting, OSDI'16 §3).
struct PrimaryUsageReport {
  std::string tenant;      // "" = the node is its own tenant
  double cpu_vcores = 0;   // finite, >= 0
  int64_t memory_mib = 0;  // >= 0
};

// One NodeHeartbeat's report (v1.NodeHeartbeatRequest), parsed: the part the
// runtime applies once the RmCore admitted the heartbeat.
struct NodeHeartbeatCall {
  NodeId node;  // node_id (the caller proved to be this node)
  // container_statuses, in order: every container the NM knows, or with a
  // change report only the changes (the runtime treats both alike).
  std::vector<ContainerReport> containers;
  // primary_usage, when the NM watches a primary tenant.
  std::optional<PrimaryUsageReport> primary_usage;
  // harvest_offer: what secondary containers may use now, every dimension
  // >= 0. Applied only with primary_usage (an NM sends both or neither).
  std::optional<Resource> harvest_offer;
};

// What the runtime answers a heartbeat (the reply's containers_to_kill and
// containers_to_acknowledge, in order).
struct NodeHeartbeatAnswer {
  std::vector<ContainerId> to_kill;         // stop (with the grace period), then report
  std::vector<ContainerId> to_acknowledge;  // completions the RM recorded: the NM forgets them
};

}  // namespace morpheus::rm
