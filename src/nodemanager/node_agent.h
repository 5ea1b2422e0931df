// The NM's link to the RM: registers, heartbeats, follows resync orders.
// Runs its own thread; the RM being down is not fatal (retries with backoff).
#pragma once

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "common/metrics.h"
#include "morpheus/v1/resource_tracker.grpc.pb.h"
#include "nodemanager/container_runtime.h"
#include "nodemanager/container_service.h"
#include "nodemanager/nm_options.h"

namespace morpheus::nm {

class NodeAgent {
 public:
  // `container_manager_address` / `http_address`: where this NM serves.
  // Heartbeats report `runtime`'s containers and obey the RM's kill and
  // acknowledge orders; the RM's token key is stored in `key` at registration.
  NodeAgent(const NmOptions& opts, std::string node_id, std::string container_manager_address,
            std::string http_address, MetricsRegistry& metrics, ContainerRuntime& runtime,
            TokenKey& key);
  ~NodeAgent();

  void start();
  // Stops the loop; does not unregister (containers survive an NM restart).
  void stop();
  bool registered() const { return registered_.load(); }

 private:
  void run();
  bool registerOnce();
  bool heartbeatOnce();  // false = must re-register

  const NmOptions opts_;
  const std::string node_id_;
  const std::string cm_address_;
  const std::string http_address_;
  MetricsRegistry& metrics_;
  ContainerRuntime& runtime_;
  TokenKey& key_;
  std::unique_ptr<v1::ResourceTracker::Stub> stub_;

  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;  // GUARDED_BY(mu_)
  std::atomic<bool> registered_{false};
  std::string epoch_;     // used only by the agent thread
  int64_t sequence_ = 0;  // used only by the agent thread
  Millis interval_;       // used only by the agent thread
  std::thread thread_;
};

}  // namespace morpheus::nm
