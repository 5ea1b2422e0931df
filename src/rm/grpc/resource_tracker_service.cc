#include "rm/grpc/resource_tracker_service.h"

#include <spdlog/spdlog.h>

#include <cmath>
#include <memory>
#include <string>
#include <utility>

#include "common/metrics.h"
#include "common/wire.h"

namespace morpheus::rm {

namespace {

// container_statuses[i] (field `f`) as the runtime's report.
// container_statuses[i], parsed. The field names of an error are built only
// when there is one: this runs for every status of every heartbeat.
Result<ContainerReport> containerReport(const v1::ContainerStatus& st, int i) {
  auto field = [i](const char* leaf) {
    return "container_statuses[" + std::to_string(i) + "]." + leaf;
  };
  if (st.container_id().empty()) return invalidArgument(field("container_id"), "is required");
  ContainerReport out;
  Result<Resource> resource = validatedResource(st.resource(), "resource");
  if (!resource.isOk()) resource = validatedResource(st.resource(), field("resource"));
  MORPHEUS_ASSIGN_OR_RETURN(out.resource, std::move(resource));
  out.id = ContainerId(st.container_id());
  out.complete = st.state() == v1::CONTAINER_COMPLETE;
  out.exit_status = st.exit_status();
  out.exit_reason = st.exit_reason();
  out.diagnostics = st.diagnostics();
  out.rss_mib = st.rss_mib();
  out.cpu_vcores = st.cpu_vcores();
  out.start = fromEpochMs(st.start_ms());
  out.end = fromEpochMs(st.end_ms());
  return out;
}

// A heartbeat waiting for the strand: its timer (admission, the wait, the
// report) and its parsed report, in one allocation per heartbeat.
struct PendingHeartbeat {
  explicit PendingHeartbeat(Histogram& latency) : timer(latency) {}
  ScopedTimer timer;
  NodeHeartbeatCall call;
};

}  // namespace

Result<NodeRegistration> parseNodeRegistration(const v1::RegisterNodeRequest& req) {
  NodeRegistration reg;
  MORPHEUS_ASSIGN_OR_RETURN(reg.total, validatedResource(req.total(), "total"));
  for (const auto& a : req.attributes()) {
    if (a.key().empty()) return invalidArgument("attributes.key", "must not be empty");
    reg.attributes[a.key()] = a.value();
  }
  reg.id = NodeId(req.node_id());
  reg.container_manager_address = req.container_manager_address();
  reg.http_address = req.http_address();
  return reg;
}

NodeInfo nodeInfoOf(const NodeRegistration& reg) {
  NodeInfo info;
  info.id = reg.id;
  info.container_manager_address = reg.container_manager_address;
  info.http_address = reg.http_address;
  info.total = reg.total;
  info.attributes = reg.attributes;
  return info;
}

Result<NodeHeartbeatCall> parseNodeHeartbeat(const v1::NodeHeartbeatRequest& req) {
  NodeHeartbeatCall call;
  call.node = NodeId(req.node_id());
  call.containers.reserve(static_cast<size_t>(req.container_statuses_size()));
  for (int i = 0; i < req.container_statuses_size(); i++) {
    MORPHEUS_ASSIGN_OR_RETURN(auto report, containerReport(req.container_statuses(i), i));
    call.containers.push_back(std::move(report));
  }
  if (req.has_primary_usage()) {
    const auto& u = req.primary_usage();
    if (!std::isfinite(u.cpu_vcores()) || u.cpu_vcores() < 0)
      return invalidArgument("primary_usage.cpu_vcores", "must be a number >= 0");
    if (u.memory_mib() < 0) return invalidArgument("primary_usage.memory_mib", "must be >= 0");
    call.primary_usage = PrimaryUsageReport{u.tenant(), u.cpu_vcores(), u.memory_mib()};
  }
  if (req.has_harvest_offer()) {
    MORPHEUS_ASSIGN_OR_RETURN(call.harvest_offer,
                              validatedResource(req.harvest_offer(), "harvest_offer"));
  }
  return call;
}

void heartbeatReply(const NodeHeartbeatAnswer& answer, v1::NodeHeartbeatResponse* resp) {
  for (const auto& id : answer.to_kill) resp->add_containers_to_kill(id.value());
  for (const auto& id : answer.to_acknowledge) resp->add_containers_to_acknowledge(id.value());
}

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
  Result<NodeRegistration> reg = parseNodeRegistration(*req);
  if (!reg.isOk()) return toGrpc(reg.status());
  Status st = core_.registerNode(nodeInfoOf(*reg));
  if (!st.isOk()) return toGrpc(st);
  if (runtime_) runtime_->onNodeRegistered(*reg);
  resp->set_heartbeat_interval_ms(core_.heartbeatInterval().count());
  resp->set_rm_epoch(core_.epoch());
  resp->set_container_token_secret(core_.nodeKey(reg->id));
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
                                                    NodeHeartbeatCall* call, bool* schedule) {
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
  // Parsed before the RmCore records the heartbeat: a malformed report
  // changes nothing.
  Result<NodeHeartbeatCall> parsed = parseNodeHeartbeat(req);
  if (!parsed.isOk()) return toGrpc(parsed.status());
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
  *call = std::move(parsed).value();
  return grpc::Status::OK;
}

grpc::Status ResourceTrackerService::heartbeat(const grpc::ServerContextBase& ctx,
                                               const v1::NodeHeartbeatRequest& req,
                                               v1::NodeHeartbeatResponse* resp) {
  bool schedule = false;
  NodeHeartbeatCall call;
  grpc::Status st = admitHeartbeat(ctx, req, resp, &call, &schedule);
  if (st.ok() && schedule) heartbeatReply(runtime_->onNodeHeartbeat(std::move(call)), resp);
  return st;
}

grpc::ServerUnaryReactor* ResourceTrackerService::NodeHeartbeat(grpc::CallbackServerContext* ctx,
                                                                const v1::NodeHeartbeatRequest* req,
                                                                v1::NodeHeartbeatResponse* resp) {
  // Times the whole heartbeat: admission here, the wait on the strand and the
  // scheduling there (the timer lives as long as the posted task).
  auto pending = std::make_shared<PendingHeartbeat>(core_.latency().heartbeat);
  grpc::ServerUnaryReactor* reactor = ctx->DefaultReactor();
  bool schedule = false;
  grpc::Status st = admitHeartbeat(*ctx, *req, resp, &pending->call, &schedule);
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
  bool posted = strand_->post([this, ctx, resp, reactor, pending] {
    if (ctx->IsCancelled() || ctx->deadline() <= std::chrono::system_clock::now()) {
      finish(reactor, grpc::Status(grpc::StatusCode::DEADLINE_EXCEEDED,
                                   "the heartbeat waited past its deadline for the RM"));
      return;
    }
    NodeId node = pending->call.node;  // the call is consumed by the report
    NodeHeartbeatAnswer answer;
    bool schedule = runtime_->onNodeReport(std::move(pending->call), &answer);
    heartbeatReply(answer, resp);
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
