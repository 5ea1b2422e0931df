// The RM's AdminService (proto/morpheus/v1/admin.proto): node drain,
// undrain and decommission, and the config reload. Served on the client port;
// every RPC authenticates its caller (RmAccess::caller) and needs a cluster
// admin (RmAccess::mayOperate), decided from the token only, never from a
// user named in the request.
// Thread-safety: stateless; the core and the reloader are internally locked.
#pragma once

#include <functional>

#include "morpheus/v1/admin.grpc.pb.h"
#include "rm/core/access.h"
#include "rm/core/rm_core.h"
#include "rm/runtime/config_reload.h"

namespace morpheus::rm {

class AdminServiceImpl final : public v1::AdminService::Service {
 public:
  // `reloader` null: ReloadConfig answers UNIMPLEMENTED. `runtime` (may be
  // null) adds each node's harvest class to the reports. All must outlive
  // the service.
  AdminServiceImpl(RmCore& core, const RmAccess& access, ConfigReloader* reloader = nullptr,
                   const RmRuntime* runtime = nullptr)
      : core_(core), access_(access), reloader_(reloader), runtime_(runtime) {}

  grpc::Status DrainNode(grpc::ServerContext*, const v1::DrainNodeRequest*,
                         v1::NodeAdminResponse*) override;
  grpc::Status UndrainNode(grpc::ServerContext*, const v1::UndrainNodeRequest*,
                           v1::NodeAdminResponse*) override;
  grpc::Status DecommissionNode(grpc::ServerContext*, const v1::DecommissionNodeRequest*,
                                v1::NodeAdminResponse*) override;
  grpc::Status ReloadConfig(grpc::ServerContext*, const v1::ReloadConfigRequest*,
                            v1::ReloadConfigResponse*) override;

 private:
  // The caller, if it may `action`; the error otherwise (logged).
  grpc::Status admit(const grpc::ServerContext& ctx, const std::string& action) const;
  grpc::Status answer(const Result<NodeInfo>& node, v1::NodeAdminResponse* resp) const;

  RmCore& core_;
  const RmAccess& access_;
  ConfigReloader* reloader_;
  const RmRuntime* runtime_;
};

}  // namespace morpheus::rm
