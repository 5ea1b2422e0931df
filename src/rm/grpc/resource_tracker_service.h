// The RM's ResourceTracker (proto/morpheus/v1/resource_tracker.proto), what
// node managers call: RegisterNode (a node joins with its capacity and
// attributes and gets the heartbeat interval, the RM's epoch and its own
// container-token key), NodeHeartbeat (liveness, usage and container
// statuses; the answer carries kills, acknowledgements and RESYNC or
// SHUTDOWN) and UnregisterNode (a node leaves). Protobuf <-> core types
// (RmCore for the registry and liveness, RmRuntime for containers and
// scheduling) and Status -> grpc::Status.
//
// The edge translates: RegisterNode and the heartbeat's report are parsed
// into the runtime's typed calls (rm/runtime/node_calls.h; INVALID_ARGUMENT
// naming the field as the NM wrote it, before the RmCore or the runtime
// changes anything), and the runtime's answer becomes the reply.
//
// Who may call: a node manager, as itself only (its node token; the class
// comment has the rule, and what rm.auth-disabled changes). Users, admins
// and other nodes are refused with PERMISSION_DENIED, logged, before
// anything changes.
//
// Thread-safety: every RPC may run on any gRPC thread, concurrently.
// setReplyQueue is for before serving; the arena pool is thread-safe
// (arena_messages.h); RmCore and RmRuntime are internally locked, and the
// runtime's part of a heartbeat runs on the strand, in order with the AMs'
// Allocate calls.
#pragma once

#include <string>

#include "common/auth.h"
#include "morpheus/v1/resource_tracker.grpc.pb.h"
#include "rm/core/rm_core.h"
#include "rm/grpc/arena_messages.h"
#include "rm/runtime/node_calls.h"
#include "rm/runtime/reply_queue.h"
#include "rm/runtime/runtime.h"
#include "rm/runtime/strand.h"

namespace morpheus::rm {

// The request as the runtime's call. INVALID_ARGUMENT naming the field
// ("total.vcores", "attributes.key") at the first that is malformed. Pure.
Result<NodeRegistration> parseNodeRegistration(const v1::RegisterNodeRequest& req);
// The RmCore's record of the registering node.
NodeInfo nodeInfoOf(const NodeRegistration& reg);
// The heartbeat's report as the runtime's call, parsed once per heartbeat
// (on the gRPC thread, off the strand). INVALID_ARGUMENT naming the field
// ("container_statuses[3].container_id",
// "container_statuses[0].resource.vcores", "primary_usage.cpu_vcores",
// "harvest_offer.memory_mib") at the first that is malformed, in field
// order. Pure.
Result<NodeHeartbeatCall> parseNodeHeartbeat(const v1::NodeHeartbeatRequest& req);
// The runtime's answer as the reply's containers_to_kill and
// containers_to_acknowledge (appended, in order); the action and the
// interval are the admission's. Pure.
void heartbeatReply(const NodeHeartbeatAnswer& answer, v1::NodeHeartbeatResponse* resp);

// Node managers' RPCs. Each needs "authorization: Bearer TOKEN" metadata
// whose principal has the role node and user == the request's node_id
// (unless authentication is disabled; then, under TLS, a client
// certificate); otherwise PERMISSION_DENIED and nothing changes. A node's
// TLS certificate alone never authenticates it: with tls.client-certs:
// request the RM admits TLS clients without one (common/tls.h). RegisterNode's reply carries that
// node's container-token key (RmCore::nodeKey), never the master secret.
//
// NodeHeartbeat is on gRPC's callback API: the gRPC thread
// authorizes, validates and records liveness (RmCore), then posts the
// report (RmRuntime::onNodeReport) to the RM's Strand and returns; the strand
// finishes the call and then schedules the node on its background lane
// (RmRuntime::scheduleNode), so an answer never waits for scheduling. The
// NM's answer carries kills and acknowledgements, never grants (AMs get
// those in Allocate); a kill chosen by scheduling goes out with the node's
// next heartbeat. No thread is held per waiting heartbeat, so
// 10k+ NMs cost queue entries, not threads. A full strand answers
// UNAVAILABLE (the NM retries at its next heartbeat). Register and
// Unregister stay on the synchronous API (rare).
class ResourceTrackerService final
    : public v1::ResourceTracker::WithCallbackMethod_NodeHeartbeat<v1::ResourceTracker::Service> {
 public:
  // `runtime` null = node registration and liveness only; otherwise `strand`
  // (started, stopped only after the gRPC server shut down) runs its part of
  // the heartbeats. `auth`, `runtime` and `strand` must outlive the service.
  ResourceTrackerService(RmCore& core, const Authenticator& auth, RmRuntime* runtime = nullptr,
                         Strand* strand = nullptr)
      : core_(core), auth_(auth), runtime_(runtime), strand_(strand) {
    SetMessageAllocatorFor_NodeHeartbeat(&messages_);
  }
  // Heartbeat replies are finished on `replies` instead of the strand
  // (reply_queue.h); set before serving. nullptr = on the strand.
  void setReplyQueue(ReplyQueue* replies) { replies_ = replies; }
  grpc::Status RegisterNode(grpc::ServerContext*, const v1::RegisterNodeRequest*,
                            v1::RegisterNodeResponse*) override;
  grpc::ServerUnaryReactor* NodeHeartbeat(grpc::CallbackServerContext*,
                                          const v1::NodeHeartbeatRequest*,
                                          v1::NodeHeartbeatResponse*) override;
  grpc::Status UnregisterNode(grpc::ServerContext*, const v1::UnregisterNodeRequest*,
                              v1::UnregisterNodeResponse*) override;

  // The whole heartbeat on the calling thread: what NodeHeartbeat does on the
  // gRPC thread and then on the strand (the fuzzer calls it directly). It
  // takes the runtime's lock itself and bypasses the strand's order.
  grpc::Status heartbeat(const grpc::ServerContextBase& ctx, const v1::NodeHeartbeatRequest& req,
                         v1::NodeHeartbeatResponse* resp);

 private:
  // OK when the caller may act as node `node_id` (see the class comment).
  Status authorizeNode(const grpc::ServerContextBase& ctx, const std::string& node_id) const;
  // The gRPC thread's part: authorization, validation and parsing (into
  // *call), epoch and liveness. *schedule is true when the runtime must still
  // handle the heartbeat (*call then holds its report).
  grpc::Status admitHeartbeat(const grpc::ServerContextBase& ctx,
                              const v1::NodeHeartbeatRequest& req, v1::NodeHeartbeatResponse* resp,
                              NodeHeartbeatCall* call, bool* schedule);
  // Running containers on the node (full or change report);
  // INVALID_ARGUMENT naming running_containers when negative.
  static Result<int32_t> runningContainers(const v1::NodeHeartbeatRequest& req);

  RmCore& core_;
  const Authenticator& auth_;
  RmRuntime* runtime_;
  Strand* strand_;
  ReplyQueue* replies_ = nullptr;
  // Each heartbeat's request and response on a pooled arena:
  // 8 KiB holds a change report and a reply of a few dozen containers;
  // 1,024 pooled holders keep 8 MiB.
  ArenaMessageAllocator<v1::NodeHeartbeatRequest, v1::NodeHeartbeatResponse> messages_{8 * 1024,
                                                                                       1024};
  // Finishes on replies_ when set, else inline.
  void finish(grpc::ServerUnaryReactor* reactor, grpc::Status status);
};

}  // namespace morpheus::rm
