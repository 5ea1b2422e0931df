// gRPC edge of the RM: protobuf <-> core types, Status -> grpc::Status.
#pragma once

#include "morpheus/v1/client.grpc.pb.h"
#include "morpheus/v1/resource_tracker.grpc.pb.h"
#include "rm/rm_core.h"

namespace morpheus::rm {

class ResourceTrackerService final : public v1::ResourceTracker::Service {
 public:
  explicit ResourceTrackerService(RmCore& core) : core_(core) {}
  grpc::Status RegisterNode(grpc::ServerContext*, const v1::RegisterNodeRequest*,
                            v1::RegisterNodeResponse*) override;
  grpc::Status NodeHeartbeat(grpc::ServerContext*, const v1::NodeHeartbeatRequest*,
                             v1::NodeHeartbeatResponse*) override;
  grpc::Status UnregisterNode(grpc::ServerContext*, const v1::UnregisterNodeRequest*,
                              v1::UnregisterNodeResponse*) override;

 private:
  RmCore& core_;
};

class ClientServiceImpl final : public v1::ClientService::Service {
 public:
  explicit ClientServiceImpl(RmCore& core) : core_(core) {}
  grpc::Status ListNodes(grpc::ServerContext*, const v1::ListNodesRequest*,
                         v1::ListNodesResponse*) override;
  grpc::Status GetClusterMetrics(grpc::ServerContext*, const v1::GetClusterMetricsRequest*,
                                 v1::ClusterMetrics*) override;

 private:
  RmCore& core_;
};

}  // namespace morpheus::rm
