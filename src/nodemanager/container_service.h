// The NM's ContainerManager gRPC service (YARN's ContainerManagementProtocol).
// Container tokens verify with this node's key (learned at registration, see
// TokenKey); a token signed for another node never verifies here.
//  - StartContainers: only with an unexpired token naming this container and
//    this node (PERMISSION_DENIED otherwise, naming the expiry if expired).
//  - StopContainers, GetContainerLogs, GetContainerStatuses: with any token of
//    the container's application, unexpired or expired at most
//    nm.expired-token-grace ago (an AM holding the token of an earlier grant
//    may still stop its containers; a leaked token does not work for ever).
//    GetContainerStatuses lists only the token's application's containers.
//    GetContainerLogs also serves a container the runtime no longer holds
//    (acknowledged, or finished before an NM restart): its application is
//    then read from the record in its directory (ContainerRuntime::appOf),
//    until nm.log-retention removes it (log_retention.h).
//  - The container runs as the local account of the token's user
//    (RunAsPolicy); an AM token in the launch environment
//    (MORPHEUS_AM_TOKEN) is moved into a file only that account can read.
//  - Under TLS an AM container gets the CA bundle (a copy in its directory,
//    MORPHEUS_TLS_CA) and nothing else of the node's TLS: never the node's
//    certificate or key. It authenticates by its tokens (common/tls.h).
// No method trusts a TLS client certificate: the NM's server may admit
// clients without one (tls.client-certs: request), and each call is
// authenticated by its container token.
// Every container id is validated (validateContainerId) before it is used,
// INVALID_ARGUMENT naming container_id, so no id can reach outside
// nm.local-dir.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "common/clock.h"
#include "common/mutex.h"
#include "common/token.h"
#include "morpheus/v1/container_manager.grpc.pb.h"
#include "nodemanager/container_runtime.h"

namespace morpheus::nm {

// This node's container-token key (the RM's deriveNodeKey for this node id),
// learned at registration. Thread-safe.
class TokenKey {
 public:
  void set(const std::string& secret);
  bool known() const;
  // UNAVAILABLE before registration; PERMISSION_DENIED for a bad token.
  Result<ContainerTokenInfo> verify(const std::string& token) const;

 private:
  mutable Mutex mu_;
  std::optional<TokenSigner> signer_ GUARDED_BY(mu_);
};

class ContainerServiceImpl final : public v1::ContainerManager::Service {
 public:
  // `clock` judges token expiry. All three must outlive the service.
  // `expired_grace`: how long after its expiry a token still stops, lists
  // and reads the logs of its application's containers (nm.expired-token-grace).
  ContainerServiceImpl(ContainerRuntime& runtime, const TokenKey& key, const Clock& clock,
                       Millis expired_grace = Millis(3600000))
      : runtime_(runtime), key_(key), clock_(clock), expired_grace_(expired_grace) {}
  // Set once the NM knows its id (its address when none is configured).
  void setNodeId(const std::string& id) {
    MutexLock lk(mu_);
    node_id_ = id;
  }
  // The CA bundle (PEM) given to every AM container (one whose launch
  // environment has MORPHEUS_RM_AM_ADDRESS, set by the RM) so that it can
  // verify the RM and the NMs under TLS; "" (TLS off) = none. Public: the
  // node's certificate and key are never given out. Call before the service
  // is registered; constant afterwards.
  void setAmCaBundle(std::string ca_pem) { am_ca_pem_ = std::move(ca_pem); }
  grpc::Status StartContainers(grpc::ServerContext*, const v1::StartContainersRequest*,
                               v1::StartContainersResponse*) override;
  grpc::Status StopContainers(grpc::ServerContext*, const v1::StopContainersRequest*,
                              v1::StopContainersResponse*) override;
  grpc::Status GetContainerStatuses(grpc::ServerContext*, const v1::GetContainerStatusesRequest*,
                                    v1::GetContainerStatusesResponse*) override;
  grpc::Status GetContainerLogs(grpc::ServerContext*, const v1::GetContainerLogsRequest*,
                                v1::GetContainerLogsResponse*) override;

 private:
  // The token's grant when it verifies with this node's key and expired at
  // most expired_grace_ ago; PERMISSION_DENIED otherwise (naming the expiry).
  Result<ContainerTokenInfo> verifyForApp(const std::string& token) const;
  // OK when `token` passes verifyForApp and names the application container
  // `id` belongs to. PERMISSION_DENIED for a bad token or another
  // application; NOT_FOUND when the node has no record of `id`.
  Status authorizeForContainer(const std::string& token, const ContainerId& id) const;

  ContainerRuntime& runtime_;
  const TokenKey& key_;
  std::string am_ca_pem_;  // constant after setAmCaBundle
  const Clock& clock_;
  const Millis expired_grace_;
  mutable Mutex mu_;
  std::string node_id_ GUARDED_BY(mu_);
};

void toProto(const ContainerSnapshot& s, v1::ContainerStatus* out);

}  // namespace morpheus::nm
