// The NM's ContainerManager gRPC service (YARN's ContainerManagementProtocol):
// starts only containers carrying a valid RM-issued container token for this
// node; stops them for any holder of a token of the same application.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "common/token.h"
#include "morpheus/v1/container_manager.grpc.pb.h"
#include "nodemanager/container_runtime.h"

namespace morpheus::nm {

// The RM's token key, learned at registration. Thread-safe.
class TokenKey {
 public:
  void set(const std::string& secret);
  bool known() const;
  // UNAVAILABLE before registration; PERMISSION_DENIED for a bad token.
  Result<ContainerTokenInfo> verify(const std::string& token) const;

 private:
  mutable std::mutex mu_;
  std::optional<TokenSigner> signer_;  // GUARDED_BY(mu_)
};

class ContainerServiceImpl final : public v1::ContainerManager::Service {
 public:
  ContainerServiceImpl(ContainerRuntime& runtime, const TokenKey& key)
      : runtime_(runtime), key_(key) {}
  // Set once the NM knows its id (its address when none is configured).
  void setNodeId(const std::string& id) {
    std::lock_guard<std::mutex> lk(mu_);
    node_id_ = id;
  }
  // Variables added to the environment of every AM container (one whose
  // launch environment has MORPHEUS_RM_AM_ADDRESS, set by the RM), e.g. the
  // NM's TLS files so the AM can reach the RM (tlsEnvironment()). Call before
  // the service is registered; constant afterwards.
  void setAmEnvironment(std::map<std::string, std::string> env) { am_env_ = std::move(env); }
  grpc::Status StartContainers(grpc::ServerContext*, const v1::StartContainersRequest*,
                               v1::StartContainersResponse*) override;
  grpc::Status StopContainers(grpc::ServerContext*, const v1::StopContainersRequest*,
                              v1::StopContainersResponse*) override;
  grpc::Status GetContainerStatuses(grpc::ServerContext*, const v1::GetContainerStatusesRequest*,
                                    v1::GetContainerStatusesResponse*) override;
  grpc::Status GetContainerLogs(grpc::ServerContext*, const v1::GetContainerLogsRequest*,
                                v1::GetContainerLogsResponse*) override;

 private:
  ContainerRuntime& runtime_;
  const TokenKey& key_;
  std::map<std::string, std::string> am_env_;  // constant after setAmEnvironment
  mutable std::mutex mu_;
  std::string node_id_;  // GUARDED_BY(mu_)
};

void toProto(const ContainerSnapshot& s, v1::ContainerStatus* out);

}  // namespace morpheus::nm
