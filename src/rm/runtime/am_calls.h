// The AM protocol (YARN's ApplicationMasterProtocol) as the RM's runtime takes
// it: typed calls and outcomes of RmRuntime::registerAm, allocate and
// finishAm, in domain values. The gRPC edge (rm/grpc/am_service.h) parses the
// wire requests into these calls (INVALID_ARGUMENT naming the field as
// written), turns the outcomes into replies and signs the container tokens of
// the granted ones; the runtime sees no protobuf message on this path and
// holds no signing key for it. (The AM container's own token is signed by the
// runtime: it goes to the NM in the launch request, never into a reply.)
//
// Plain values: no locking, no invariants beyond those the edge's parsing
// establishes (listed per field).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/ids.h"
#include "common/resource.h"
#include "morpheus/v1/common.pb.h"
#include "reprovision/policy.h"
#include "rm/core/app_manager.h"
#include "rm/runtime/telemetry.h"
#include "scheduler/types.h"

namespace morpheus::rm {

// One RegisterApplicationMaster (v1.RegisterApplicationMasterRequest), parsed
// (tracking_url is not kept).
struct RegisterAmCall {
  AppId app;             // application_id, never empty
  std::string am_token;  // checked by the runtime: the AM acts only for its own app
};

// A task container of the app still running when its AM registers (after an
// RM restart, the ones the NMs re-reported). No token: the AM got it with
// the grant.
struct RunningContainer {
  ContainerId id;
  NodeId node;
  std::string node_address;  // its NM's ContainerManager, host:port ("" = node unknown)
  Resource resource;
};

// What a registration gives the AM.
struct RegisterAmOutcome {
  std::string queue;          // the queue the app runs in
  ReservationId reservation;  // its bound reservation (empty = ad hoc)
  // The largest container the cluster can grant: the total of the live,
  // in-service node with the most memory (zero when there is none).
  Resource max_container;
  std::vector<RunningContainer> running;  // its task containers still running
};

// One Allocate of an AM (v1.AllocateRequest), parsed.
struct AllocateCall {
  AppId app;             // application_id, never empty
  std::string am_token;  // checked by the runtime: the AM acts only for its own app
  // The AM's progress in [0, 1]; the runtime ignores a negative one.
  float progress = 0;
  // asks, in order, as the core takes them (counts >= 0, whole gangs only; a
  // capability is non-zero where the count is > 0). Count 0 withdraws an ask.
  std::vector<sched::ResourceRequest> asks;
  std::vector<ContainerId> releases;  // releases: containers the AM gives back
  // stages: the Jockey stage report (names unique, dependencies known), empty
  // when the AM sent none; and the same report as the core's DAG (Carbyne;
  // empty when some unfinished stage lacks what the DAG needs).
  std::vector<reprovision::StageState> stages;
  std::vector<sched::DagStage> dag;
};

// A task container granted to the app (v1.Container without its token: the
// edge signs one for it, for `AllocateOutcome::user`).
struct GrantedContainer {
  ContainerId id;
  NodeId node;
  std::string node_address;  // its NM's ContainerManager, host:port
  Resource resource;
  int32_t priority = 0;    // of the ask it satisfies
  std::string request_id;  // of the ask it satisfies
};

// A task container of the app that ended (always state COMPLETE): what its
// NM reported, or what the RM decided (released, node lost), with the
// preemption's exit reason and diagnostics when the RM preempted it.
struct CompletedContainer {
  ContainerId id;
  int32_t exit_status = 0;
  v1::ContainerExitReason exit_reason = v1::EXIT_REASON_UNSPECIFIED;
  std::string diagnostics;
  int64_t rss_mib = 0;    // as the NM last sampled it (0 = none)
  double cpu_vcores = 0;  // as the NM last sampled it
  TimePoint start;        // the epoch = not reported
  TimePoint end;          // the epoch = not reported
  Resource resource;      // its allocation as the NM reported it (zero = not reported)
};

// What an Allocate gives the AM.
struct AllocateOutcome {
  // The AM has not registered with this RM incarnation (a work-preserving
  // restart): the reply carries `resync` only, and nothing else below is set.
  bool unregistered = false;
  bool resync = false;  // register again (the NMs had time to re-report)
  UserId user;          // the app's submitting user, named in its container tokens
  // Granted and completed since the AM's last Allocate, in order.
  std::vector<GrantedContainer> allocated;
  std::vector<CompletedContainer> completed;
  // Advisory notices: the RM kills the container after the deadline if the
  // capacity is still needed then.
  std::vector<sched::PreemptionNotice> preemptions;
  int32_t num_cluster_nodes = 0;  // live nodes
  Resource available;             // the cluster's unused capacity, >= 0
};

// One FinishApplicationMaster (v1.FinishApplicationMasterRequest), parsed.
struct FinishAmCall {
  AppId app;                                   // application_id, never empty
  std::string am_token;                        // checked by the runtime
  AppState final_state = AppState::kFinished;  // kFinished, kFailed or kKilled
  std::string diagnostics;
  // files_read then files_written, in order (provenance, Morpheus §4).
  std::vector<FileAccessRecord> files;
  // stages: the final stage report (as AllocateCall::stages), empty when none.
  std::vector<reprovision::StageState> stages;
};

}  // namespace morpheus::rm
