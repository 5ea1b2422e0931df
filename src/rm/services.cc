#include "rm/services.h"

#include <spdlog/spdlog.h>

#include "common/wire.h"

namespace morpheus::rm {

Status ResourceTrackerService::authorizeNode(const grpc::ServerContext& ctx,
                                             const std::string& node_id) const {
  if (auth_.open()) return Status::ok();
  auto who = auth_.identify(ctx);
  Status st = who.isOk() ? Status::ok() : who.status();
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

grpc::Status ResourceTrackerService::NodeHeartbeat(grpc::ServerContext* ctx,
                                                   const v1::NodeHeartbeatRequest* req,
                                                   v1::NodeHeartbeatResponse* resp) {
  if (Status st = authorizeNode(*ctx, req->node_id()); !st.isOk()) return toGrpc(st);
  auto used = validatedResource(req->used(), "used");
  if (!used.isOk()) return toGrpc(used.status());
  resp->set_next_heartbeat_interval_ms(core_.heartbeatInterval().count());
  if (!req->rm_epoch().empty() && req->rm_epoch() != core_.epoch()) {
    resp->set_action(v1::NodeHeartbeatResponse::ACTION_RESYNC);
    return grpc::Status::OK;
  }
  int32_t running = 0;
  for (const auto& c : req->container_statuses()) {
    running += c.state() == v1::CONTAINER_RUNNING ? 1 : 0;
  }
  Status st = core_.nodeHeartbeat(NodeId(req->node_id()), req->sequence(), *used,
                                  req->used_rss_mib(), req->used_cpu_vcores(), running);
  if (st.code() == StatusCode::kNotFound) {
    resp->set_action(v1::NodeHeartbeatResponse::ACTION_RESYNC);
    return grpc::Status::OK;
  }
  if (!st.isOk()) return toGrpc(st);
  resp->set_action(v1::NodeHeartbeatResponse::ACTION_NORMAL);
  if (runtime_) runtime_->onNodeHeartbeat(*req, resp);
  return grpc::Status::OK;
}

grpc::Status ResourceTrackerService::UnregisterNode(grpc::ServerContext* ctx,
                                                    const v1::UnregisterNodeRequest* req,
                                                    v1::UnregisterNodeResponse*) {
  if (Status st = authorizeNode(*ctx, req->node_id()); !st.isOk()) return toGrpc(st);
  return toGrpc(core_.unregisterNode(NodeId(req->node_id())));
}

grpc::Status ClientServiceImpl::ListNodes(grpc::ServerContext*, const v1::ListNodesRequest* req,
                                          v1::ListNodesResponse* resp) {
  for (const auto& n : core_.nodes(req->include_lost())) {
    auto* r = resp->add_nodes();
    r->set_node_id(n.id.value());
    r->set_container_manager_address(n.container_manager_address);
    r->set_http_address(n.http_address);
    toProto(n.total, r->mutable_total());
    toProto(n.used, r->mutable_used());
    for (const auto& [k, v] : n.attributes) {
      auto* a = r->add_attributes();
      a->set_key(k);
      a->set_value(v);
    }
    r->set_state(n.live ? v1::NodeReport::NODE_STATE_RUNNING : v1::NodeReport::NODE_STATE_LOST);
    r->set_last_heartbeat_ms(toEpochMs(n.last_heartbeat));
    r->set_num_containers(n.num_containers);
    r->set_used_rss_mib(n.used_rss_mib);
    r->set_used_cpu_vcores(n.used_cpu_vcores);
  }
  return grpc::Status::OK;
}

grpc::Status ClientServiceImpl::GetClusterMetrics(grpc::ServerContext*,
                                                  const v1::GetClusterMetricsRequest*,
                                                  v1::ClusterMetrics* resp) {
  ClusterSummary s = core_.summary();
  resp->set_live_nodes(s.live_nodes);
  resp->set_lost_nodes(s.lost_nodes);
  toProto(s.total, resp->mutable_total());
  toProto(s.used, resp->mutable_used());
  return grpc::Status::OK;
}

v1::ApplicationState toProto(AppState s) {
  switch (s) {
    case AppState::kSubmitted:
      return v1::APP_STATE_SUBMITTED;
    case AppState::kRunning:
      return v1::APP_STATE_RUNNING;
    case AppState::kFinished:
      return v1::APP_STATE_FINISHED;
    case AppState::kFailed:
      return v1::APP_STATE_FAILED;
    case AppState::kKilled:
      return v1::APP_STATE_KILLED;
  }
  return v1::APP_STATE_UNSPECIFIED;
}

void toProto(const AppRecord& a, v1::ApplicationReport* out) {
  out->set_application_id(a.id.value());
  out->set_name(a.spec.name);
  out->set_user(a.spec.user.value());
  out->set_queue(a.queue);
  out->set_reservation_id(a.reservation.value());
  out->set_recurrence_key(a.spec.recurrence_key.value());
  out->set_state(toProto(a.state));
  out->set_progress(a.progress);
  out->set_submit_ms(toEpochMs(a.submit));
  out->set_start_ms(toEpochMs(a.start));
  out->set_finish_ms(toEpochMs(a.finish));
  out->set_am_attempt(a.attempt);
  out->set_diagnostics(a.diagnostics);
  out->set_am_node_id(a.am_node.value());
  out->set_am_container_id(a.am_container.value());
}

grpc::Status ClientServiceImpl::SubmitApplication(grpc::ServerContext*,
                                                  const v1::SubmitApplicationRequest* req,
                                                  v1::SubmitApplicationResponse* resp) {
  if (!apps_) return grpc::Status(grpc::StatusCode::UNIMPLEMENTED, "applications are not enabled");
  AppSpec s;
  s.name = req->name();
  s.user = UserId(req->user());
  s.queue = req->queue();
  s.reservation = ReservationId(req->reservation_id());
  s.recurrence_key = JobKey(req->recurrence_key());
  auto res = validatedResource(req->am_resource(), "am_resource");
  if (!res.isOk()) return toGrpc(res.status());
  s.am_resource = *res;
  if (!req->has_am_launch_context() || req->am_launch_context().command().empty()) {
    return toGrpc(invalidArgument("am_launch_context.command", "is required"));
  }
  s.am_launch_context = req->am_launch_context().SerializeAsString();
  s.max_attempts = req->max_am_attempts();
  s.priority = req->priority();
  s.tags = {req->tags().begin(), req->tags().end()};
  auto rec = apps_->submit(s);
  if (!rec.isOk()) return toGrpc(rec.status());
  resp->set_application_id(rec->id.value());
  return grpc::Status::OK;
}

grpc::Status ClientServiceImpl::GetApplication(grpc::ServerContext*,
                                               const v1::GetApplicationRequest* req,
                                               v1::ApplicationReport* resp) {
  if (!apps_) return grpc::Status(grpc::StatusCode::UNIMPLEMENTED, "applications are not enabled");
  if (req->application_id().empty())
    return toGrpc(invalidArgument("application_id", "is required"));
  auto rec = apps_->get(AppId(req->application_id()));
  if (!rec.isOk()) return toGrpc(rec.status());
  toProto(*rec, resp);
  if (runtime_) {
    int32_t n = 0;
    Resource used;
    runtime_->usage(rec->id, &n, &used);
    resp->set_running_containers(n);
    toProto(used, resp->mutable_used());
  }
  return grpc::Status::OK;
}

grpc::Status ClientServiceImpl::ListApplications(grpc::ServerContext*,
                                                 const v1::ListApplicationsRequest* req,
                                                 v1::ListApplicationsResponse* resp) {
  if (!apps_) return grpc::Status(grpc::StatusCode::UNIMPLEMENTED, "applications are not enabled");
  std::set<AppState> states;
  for (int s : req->states()) {
    switch (s) {
      case v1::APP_STATE_SUBMITTED:
        states.insert(AppState::kSubmitted);
        break;
      case v1::APP_STATE_RUNNING:
        states.insert(AppState::kRunning);
        break;
      case v1::APP_STATE_FINISHED:
        states.insert(AppState::kFinished);
        break;
      case v1::APP_STATE_FAILED:
        states.insert(AppState::kFailed);
        break;
      case v1::APP_STATE_KILLED:
        states.insert(AppState::kKilled);
        break;
      default:
        return toGrpc(invalidArgument("states", "unknown state " + std::to_string(s)));
    }
  }
  for (const auto& a : apps_->list(states, req->queue())) {
    auto* r = resp->add_applications();
    toProto(a, r);
    if (runtime_) {
      int32_t n = 0;
      Resource used;
      runtime_->usage(a.id, &n, &used);
      r->set_running_containers(n);
      toProto(used, r->mutable_used());
    }
  }
  return grpc::Status::OK;
}

grpc::Status ClientServiceImpl::KillApplication(grpc::ServerContext*,
                                                const v1::KillApplicationRequest* req,
                                                v1::KillApplicationResponse*) {
  if (!apps_) return grpc::Status(grpc::StatusCode::UNIMPLEMENTED, "applications are not enabled");
  if (req->application_id().empty())
    return toGrpc(invalidArgument("application_id", "is required"));
  if (req->user().empty()) return toGrpc(invalidArgument("user", "is required"));
  Status st = apps_->kill(AppId(req->application_id()), UserId(req->user()),
                          admins_.count(req->user()) > 0, req->reason());
  if (st.isOk() && runtime_) runtime_->onAppKilled(AppId(req->application_id()));
  return toGrpc(st);
}

grpc::Status ClientServiceImpl::ListAppTelemetry(grpc::ServerContext*,
                                                 const v1::ListAppTelemetryRequest* req,
                                                 v1::ListAppTelemetryResponse* resp) {
  if (!runtime_)
    return grpc::Status(grpc::StatusCode::UNIMPLEMENTED, "applications are not enabled");
  for (const auto& t : runtime_->telemetry(req->recurrence_key())) {
    auto* a = resp->add_apps();
    a->set_application_id(t.app.value());
    a->set_recurrence_key(t.recurrence_key.value());
    a->set_user(t.user.value());
    a->set_submit_ms(toEpochMs(t.submit));
    a->set_start_ms(toEpochMs(t.start));
    a->set_finish_ms(toEpochMs(t.finish));
    a->set_step_ms(t.step.count());
    for (double v : t.skyline) a->add_skyline(v);
    toProto(t.container, a->mutable_container());
    for (const auto& f : t.files) {
      auto* e = a->add_files();
      e->set_path(f.path);
      e->set_time_ms(toEpochMs(f.time));
      e->set_write(f.write);
    }
  }
  return grpc::Status::OK;
}

}  // namespace morpheus::rm
