#include "rm/grpc/admin_service.h"

#include <spdlog/spdlog.h>

#include "common/validate.h"
#include "common/wire.h"
#include "rm/grpc/node_report.h"

namespace morpheus::rm {

grpc::Status AdminServiceImpl::admit(const grpc::ServerContext& ctx,
                                     const std::string& action) const {
  Principal who;
  if (grpc::Status st = access_.caller(ctx, &who); !st.ok()) return st;
  if (Status st = RmAccess::mayOperate(who, action); !st.isOk()) {
    spdlog::warn("refused: {}", st.message());
    return toGrpc(st);
  }
  spdlog::info("{}: {}", who.user, action);
  return grpc::Status::OK;
}

grpc::Status AdminServiceImpl::answer(const Result<NodeInfo>& node,
                                      v1::NodeAdminResponse* resp) const {
  if (!node.isOk()) return toGrpc(node.status());
  nodeReport(*node, resp->mutable_node());
  if (runtime_ != nullptr)
    resp->mutable_node()->set_harvest_class(runtime_->harvestClassOf(node->id));
  return grpc::Status::OK;
}

grpc::Status AdminServiceImpl::DrainNode(grpc::ServerContext* ctx, const v1::DrainNodeRequest* req,
                                         v1::NodeAdminResponse* resp) {
  if (Status st = validateNodeId(req->node_id(), "node_id"); !st.isOk()) return toGrpc(st);
  if (grpc::Status st = admit(*ctx, "drain node " + req->node_id()); !st.ok()) return st;
  return answer(core_.drainNode(NodeId(req->node_id())), resp);
}

grpc::Status AdminServiceImpl::UndrainNode(grpc::ServerContext* ctx,
                                           const v1::UndrainNodeRequest* req,
                                           v1::NodeAdminResponse* resp) {
  if (Status st = validateNodeId(req->node_id(), "node_id"); !st.isOk()) return toGrpc(st);
  if (grpc::Status st = admit(*ctx, "undrain node " + req->node_id()); !st.ok()) return st;
  return answer(core_.undrainNode(NodeId(req->node_id())), resp);
}

grpc::Status AdminServiceImpl::DecommissionNode(grpc::ServerContext* ctx,
                                                const v1::DecommissionNodeRequest* req,
                                                v1::NodeAdminResponse* resp) {
  if (Status st = validateNodeId(req->node_id(), "node_id"); !st.isOk()) return toGrpc(st);
  if (req->timeout_ms() < 0) return toGrpc(invalidArgument("timeout_ms", "must be >= 0"));
  if (grpc::Status st = admit(*ctx, "decommission node " + req->node_id()); !st.ok()) return st;
  auto node = core_.decommissionNode(NodeId(req->node_id()), Millis(req->timeout_ms()));
  // Nothing running there: decommissioned at once rather than at the next
  // liveness pass.
  if (node.isOk() && node->admin.state == NodeAdminState::kDecommissioning) {
    core_.checkLiveness();
    for (const auto& n : core_.nodes(/*include_lost=*/true)) {
      if (n.id == node->id) node = n;
    }
  }
  return answer(node, resp);
}

grpc::Status AdminServiceImpl::ReloadConfig(grpc::ServerContext* ctx,
                                            const v1::ReloadConfigRequest*,
                                            v1::ReloadConfigResponse* resp) {
  if (grpc::Status st = admit(*ctx, "reload the RM's config"); !st.ok()) return st;
  if (reloader_ == nullptr) {
    return grpc::Status(grpc::StatusCode::UNIMPLEMENTED, "this RM cannot reload its config");
  }
  auto report = reloader_->reload();
  if (!report.isOk()) return toGrpc(report.status());
  resp->set_config_file(report->config_file);
  for (const auto& c : report->changed) resp->add_changed(c);
  for (const auto& c : report->restart_required) resp->add_restart_required(c);
  return grpc::Status::OK;
}

}  // namespace morpheus::rm
