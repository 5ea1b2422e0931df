#include "rm/services.h"

#include "common/wire.h"

namespace morpheus::rm {

grpc::Status ResourceTrackerService::RegisterNode(grpc::ServerContext*,
                                                  const v1::RegisterNodeRequest* req,
                                                  v1::RegisterNodeResponse* resp) {
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
  resp->set_heartbeat_interval_ms(core_.heartbeatInterval().count());
  resp->set_rm_epoch(core_.epoch());
  resp->set_container_token_secret(core_.signer().secret());
  return grpc::Status::OK;
}

grpc::Status ResourceTrackerService::NodeHeartbeat(grpc::ServerContext*,
                                                   const v1::NodeHeartbeatRequest* req,
                                                   v1::NodeHeartbeatResponse* resp) {
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
  return grpc::Status::OK;
}

grpc::Status ResourceTrackerService::UnregisterNode(grpc::ServerContext*,
                                                    const v1::UnregisterNodeRequest* req,
                                                    v1::UnregisterNodeResponse*) {
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

}  // namespace morpheus::rm
