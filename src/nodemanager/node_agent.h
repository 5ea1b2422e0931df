// The NM's link to the RM: registers, heartbeats, follows resync orders.
// Runs its own thread; the RM being down is not fatal (retries with backoff).
// Every RPC to the RM carries this node's bearer token (nm.token-file) as
// "authorization: Bearer TOKEN" metadata; a refused registration (wrong
// token, or the node id live elsewhere) is logged as an error and retried.
#pragma once

#include <atomic>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "common/metrics.h"
#include "common/mutex.h"
#include "common/rm_failover.h"
#include "morpheus/v1/resource_tracker.grpc.pb.h"
#include "nodemanager/container_runtime.h"
#include "nodemanager/container_service.h"
#include "nodemanager/heartbeat_report.h"
#include "nodemanager/nm_metrics.h"
#include "nodemanager/nm_options.h"

namespace morpheus::nm {

// The token in nm.token-file: its one non-comment line ('#' starts a
// comment), a single word of at least 16 characters. INVALID_ARGUMENT naming
// nm.token-file otherwise.
Result<std::string> readNodeToken(const std::string& path);

class NodeAgent {
 public:
  // `container_manager_address` / `http_address`: where this NM serves.
  // opts.rm_address must be a valid address list (splitAddressList).
  // Heartbeats report `runtime`'s containers and obey the RM's kill and
  // acknowledge orders; this node's container-token key is stored in `key`
  // at registration. `rm_token` "" = send no credentials (nm.auth-disabled).
  NodeAgent(const NmOptions& opts, std::string node_id, std::string container_manager_address,
            std::string http_address, std::string rm_token, MetricsRegistry& metrics,
            ContainerRuntime& runtime, TokenKey& key);
  ~NodeAgent();

  // Called on the agent thread with true when the node registers and false
  // when the RM orders a resync (registration lost). Set before start().
  void setRegistrationListener(std::function<void(bool)> listener) {
    on_registration_ = std::move(listener);
  }
  // Harvesting: called on the agent thread to add fields to
  // every heartbeat before it is sent. Set before start().
  void setHeartbeatExtension(std::function<void(v1::NodeHeartbeatRequest*)> extend) {
    extend_heartbeat_ = std::move(extend);
  }
  void start();
  // Stops the loop; does not unregister (containers survive an NM restart).
  void stop();
  bool registered() const { return registered_.load(); }

 private:
  void run();
  bool registerOnce();
  bool heartbeatOnce();  // false = must re-register
  void setRegistered(bool registered);
  // Adds this node's credentials to an RPC's context.
  void authorize(grpc::ClientContext* ctx) const;

  const NmOptions opts_;
  const std::string node_id_;
  const std::string cm_address_;
  const std::string http_address_;
  const std::string rm_token_;
  NodeAgentMetrics metrics_;
  ContainerRuntime& runtime_;
  TokenKey& key_;
  // nm.rm-address, one address or the RMs of an HA pair: calls
  // follow the active RM (common/rm_failover.h).
  std::shared_ptr<FailoverChannel> rm_;
  std::function<void(bool)> on_registration_;                        // constant after start()
  std::function<void(v1::NodeHeartbeatRequest*)> extend_heartbeat_;  // constant after start()

  Mutex mu_;
  CondVar cv_;
  bool stopping_ GUARDED_BY(mu_) = false;
  std::atomic<bool> registered_{false};
  std::string epoch_;         // used only by the agent thread
  int64_t sequence_ = 0;      // used only by the agent thread
  Millis interval_;           // used only by the agent thread
  HeartbeatReporter report_;  // used only by the agent thread
  std::thread thread_;
};

}  // namespace morpheus::nm
