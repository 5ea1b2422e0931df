// AM launches on node managers (docs/design/scheduler.md): the RM's calls of
// ContainerManager.StartContainers for application-master containers.
//
// Launches are asynchronous gRPC calls started by one dispatcher thread that
// never blocks on the network. They are bounded twice: at most
// `max_in_flight` calls in total and at most `per_node_in_flight` per node;
// launches beyond either bound wait in their node's FIFO queue. A node that
// accepts TCP and never answers therefore holds only its own slots (until
// `timeout`) and delays only the launches queued for it: the others go out
// on their own nodes' slots at once. One channel per NM address is kept and
// reused (least recently used ones dropped beyond `max_channels`).
//
// Thread-safety: submit() and stop() may be called from any thread, also
// while holding the caller's own locks: submit() only queues. The `Done`
// callback runs on the dispatcher thread without any lock of this class, so
// it may take the caller's locks; it is never invoked from within submit().
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "common/clock.h"
#include "common/ids.h"
#include "common/mutex.h"
#include "common/tls.h"
#include "morpheus/v1/container_manager.grpc.pb.h"

namespace morpheus::rm {

struct AmLauncherOptions {
  int max_in_flight = 64;      // concurrent StartContainers calls in total (>= 1)
  int per_node_in_flight = 2;  // concurrent calls to one node (>= 1)
  Millis timeout{10000};       // deadline of one call; a silent node fails the launch then
  size_t max_channels = 1024;  // NM channels kept for reuse (least recently used dropped)
  TlsOptions tls;              // mutual TLS towards the NMs (plaintext when off)
};

// One AM container to start: the request is complete (launch context, env and
// container token filled in by the caller).
struct AmLaunch {
  AppId app;
  NodeId node;
  std::string node_address;
  v1::StartContainersRequest request;
};

class AmLauncher {
 public:
  // `error` is "" when the NM started the container, else why not (the RPC
  // status or the NM's failure), naming the node.
  using Done = std::function<void(const AmLaunch& launch, const std::string& error)>;

  AmLauncher(AmLauncherOptions opts, Done done);
  ~AmLauncher();  // stop()
  AmLauncher(const AmLauncher&) = delete;
  AmLauncher& operator=(const AmLauncher&) = delete;

  void start();
  // Cancels the calls in flight, waits for their completion (their Done runs)
  // and drops queued launches. Idempotent.
  void stop();
  // Queues a launch behind the earlier ones of the same node.
  void submit(AmLaunch launch);

  // Calls in flight and launches queued (for tests and metrics).
  int inFlight() const;
  size_t queued() const;
  // Launches whose Done has returned since start (for tests: a count that
  // reached N proves the caller has applied N verdicts, late ones included).
  uint64_t verdicts() const;

 private:
  struct Call;
  struct NodeQueue {
    std::deque<AmLaunch> waiting;
    int in_flight = 0;
    bool in_ready = false;  // listed in ready_
  };
  struct CachedChannel {
    std::shared_ptr<grpc::Channel> channel;
    std::list<std::string>::iterator lru;  // position in lru_
  };

  void loop();
  bool startable() const REQUIRES(mu_);
  std::vector<Call*> takeStartable() REQUIRES(mu_);
  std::shared_ptr<grpc::Channel> channelFor(const std::string& address) REQUIRES(mu_);
  void issue(Call* call);
  void finish(std::unique_ptr<Call> call);

  const AmLauncherOptions opts_;
  const Done done_;

  mutable Mutex mu_;
  CondVar cv_;
  std::map<NodeId, NodeQueue> nodes_ GUARDED_BY(mu_);
  std::deque<NodeId> ready_ GUARDED_BY(mu_);  // nodes with waiting launches, round robin
  std::map<std::string, CachedChannel> channels_ GUARDED_BY(mu_);
  std::list<std::string> lru_ GUARDED_BY(mu_);  // addresses, most recent first
  std::map<Call*, std::unique_ptr<Call>> running_ GUARDED_BY(mu_);
  std::vector<Call*> completed_ GUARDED_BY(mu_);
  int in_flight_ GUARDED_BY(mu_) = 0;
  uint64_t verdicts_ GUARDED_BY(mu_) = 0;
  bool stopping_ GUARDED_BY(mu_) = false;
  std::thread dispatcher_;
};

}  // namespace morpheus::rm
