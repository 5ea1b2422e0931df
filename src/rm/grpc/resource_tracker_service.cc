#include "rm/grpc/resource_tracker_service.h"

#include <spdlog/spdlog.h>

#include <memory>
#include <string>

#include "common/metrics.h"
#include "common/wire.h"

namespace morpheus::rm {

Status ResourceTrackerService::authorizeNode(const grpc::ServerContextBase& ctx,
                                             const std::string& node_id) const {
  // Through identify() even with authentication disabled: it still refuses a
  // TLS caller without a client certificate then (common/auth.h).
  auto who = auth_.identify(ctx);
  Status st = who.isOk() ? Status::ok() : who.status();
  if (st.isOk() && auth_.open()) return st;
  if (st.isOk() && !who->node) {
    st = permissionDenied(who->user +
                          " is not a node manager: only a node token may register, "
                          "heartbeat or unregister a node");
  } else if (st.isOk() && who->user != node_id) {
    st = permissionDenied("the node token of " + who->user + " may not act as node '" + node_id +
                          "'");
  }
  if (!st.isOk()) spdlog::warn("refused a node RPC from {}: {}", ctx.peer(), st.message());
  return st;
}

grpc::Status ResourceTrackerService::RegisterNode(grpc::ServerContext* ctx,
                                                  const v1::RegisterNodeRequest* req,
                                                  v1::RegisterNodeResponse* resp) {
  if (Status st = authorizeNode(*ctx, req->node_id()); !st.isOk()) return toGrpc(st);
  auto total = validatedResource(req->total(), "total");
  if (!total.isOk()) return toGrpc(total.status());
  NodeInfo info;
  info.id = NodeId(req->node_id());
  info.container_manager_address = req->container_manager_address();
  info.http_address = req->http_address();
  info.total = *total;
  for (const auto& a : req->attributes()) {
    if (a.key().empty()) return toGrpc(invalidArgument("attributes.key", "must not be empty"));
    info.attributes[a.key()] = a.value();
  }
  Status st = core_.registerNode(std::move(info));
  if (!st.isOk()) return toGrpc(st);
  if (runtime_) runtime_->onNodeRegistered(*req);
  resp->set_heartbeat_interval_ms(core_.heartbeatInterval().count());
  resp->set_rm_epoch(core_.epoch());
  resp->set_container_token_secret(core_.nodeKey(NodeId(req->node_id())));
  return grpc::Status::OK;
}

// The node's running containers: counted from a full report, given by the
// NM with a change report (changes_only).
Result<int32_t> ResourceTrackerService::runningContainers(const v1::NodeHeartbeatRequest& req) {
  if (req.changes_only()) {
    if (req.running_containers() < 0) {
      return invalidArgument("running_containers", "must be >= 0");
    }
    return req.running_containers();
  }
  int32_t running = 0;
  for (const auto& c : req.container_statuses()) {
    running += c.state() == v1::CONTAINER_RUNNING ? 1 : 0;
  }
  return running;
}

grpc::Status ResourceTrackerService::admitHeartbeat(const grpc::ServerContextBase& ctx,
                                                    const v1::NodeHeartbeatRequest& req,
                                                    v1::NodeHeartbeatResponse* resp,
                                                    bool* schedule) {
  *schedule = false;
  if (Status st = authorizeNode(ctx, req.node_id()); !st.isOk()) return toGrpc(st);
  auto used = validatedResource(req.used(), "used");
  if (!used.isOk()) return toGrpc(used.status());
  resp->set_next_heartbeat_interval_ms(core_.heartbeatInterval().count());
  if (!req.rm_epoch().empty() && req.rm_epoch() != core_.epoch()) {
    resp->set_action(v1::NodeHeartbeatResponse::ACTION_RESYNC);
    return grpc::Status::OK;
  }
  auto running = runningContainers(req);
  if (!running.isOk()) return toGrpc(running.status());
  Status st = core_.nodeHeartbeat(NodeId(req.node_id()), req.sequence(), *used, req.used_rss_mib(),
                                  req.used_cpu_vcores(), *running);
  if (st.code() == StatusCode::kNotFound) {
    resp->set_action(v1::NodeHeartbeatResponse::ACTION_RESYNC);
    return grpc::Status::OK;
  }
  if (st.code() == StatusCode::kInfeasible) {  // decommissioned: the NM stops its containers
    spdlog::warn("heartbeat of {}: {}", req.node_id(), st.message());
    resp->set_action(v1::NodeHeartbeatResponse::ACTION_SHUTDOWN);
    return grpc::Status::OK;
  }
  if (!st.isOk()) return toGrpc(st);
  resp->set_action(v1::NodeHeartbeatResponse::ACTION_NORMAL);
  *schedule = runtime_ != nullptr;
  return grpc::Status::OK;
}

grpc::Status ResourceTrackerService::heartbeat(const grpc::ServerContextBase& ctx,
                                               const v1::NodeHeartbeatRequest& req,
                                               v1::NodeHeartbeatResponse* resp) {
  bool schedule = false;
  grpc::Status st = admitHeartbeat(ctx, req, resp, &schedule);
  if (st.ok() && schedule) runtime_->onNodeHeartbeat(req, resp);
  return st;
}

grpc::ServerUnaryReactor* ResourceTrackerService::NodeHeartbeat(grpc::CallbackServerContext* ctx,
                                                                const v1::NodeHeartbeatRequest* req,
                                                                v1::NodeHeartbeatResponse* resp) {
  // Times the whole heartbeat: admission here, the wait on the strand and the
  // scheduling there (the timer lives as long as the posted task).
  auto timer = std::make_shared<ScopedTimer>(core_.latency().heartbeat);
  grpc::ServerUnaryReactor* reactor = ctx->DefaultReactor();
  bool schedule = false;
  grpc::Status st = admitHeartbeat(*ctx, *req, resp, &schedule);
  if (!st.ok() || !schedule) {
    reactor->Finish(st);
    return reactor;
  }
  MORPHEUS_CHECK(strand_ != nullptr, "ResourceTrackerService with a runtime needs a strand");
  // The request, response and context live until Finish. A heartbeat whose
  // caller gave up while it waited (deadline passed, cancelled) is not
  // scheduled: the NM sends its changes again (heartbeat_report.h), and an
  // overloaded strand does not spend itself on answers nobody reads.
  // The answer goes out after the report; the node is scheduled afterwards
  // on the strand's background lane (strand.h), as YARN's asynchronous
  // scheduling does, so no heartbeat waits for other nodes' grants.
  bool posted = strand_->post([this, ctx, req, resp, reactor, timer] {
    if (ctx->IsCancelled() || ctx->deadline() <= std::chrono::system_clock::now()) {
      finish(reactor, grpc::Status(grpc::StatusCode::DEADLINE_EXCEEDED,
                                   "the heartbeat waited past its deadline for the RM"));
      return;
    }
    NodeId node(req->node_id());  // req is gone once the call finished
    bool schedule = runtime_->onNodeReport(*req, resp);
    finish(reactor, grpc::Status::OK);
    if (schedule) strand_->postBackground([this, node] { runtime_->scheduleNode(node); });
  });
  if (!posted) {
    reactor->Finish(grpc::Status(grpc::StatusCode::UNAVAILABLE,
                                 "the RM's scheduling queue is full: retry at the next heartbeat"));
  }
  return reactor;
}

void ResourceTrackerService::finish(grpc::ServerUnaryReactor* reactor, grpc::Status status) {
  if (replies_ != nullptr) {
    replies_->finish(reactor, std::move(status));
  } else {
    reactor->Finish(status);
  }
}

grpc::Status ResourceTrackerService::UnregisterNode(grpc::ServerContext* ctx,
                                                    const v1::UnregisterNodeRequest* req,
                                                    v1::UnregisterNodeResponse*) {
  if (Status st = authorizeNode(*ctx, req->node_id()); !st.isOk()) return toGrpc(st);
  return toGrpc(core_.unregisterNode(NodeId(req->node_id())));
}

}  // namespace morpheus::rm
