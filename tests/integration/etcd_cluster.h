// Test helpers for HA on etcd: a real etcd cluster of N members on
// loopback (free ports, fresh data dirs, SIGKILLed and reaped when the object
// goes), and a loopback TCP proxy a test can freeze to partition a client
// from the cluster.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "harness.h"

namespace morpheus::testing {

class EtcdCluster {
 public:
  // Starts `members` etcd processes (/usr/bin/etcd or $MORPHEUS_ETCD) with
  // fast heartbeats (default 50 ms, election timeout 500 ms) and waits
  // (<= 20 s) until every member is healthy; a start where some member
  // exits (a port taken meanwhile) is retried on new ports, three starts in
  // all. ok() tells whether one succeeded; log() shows why not. `extra_args` go to every member
  // (--max-txn-ops 400).
  explicit EtcdCluster(int members, int heartbeat_ms = 50, int election_ms = 500,
                       const std::vector<std::string>& extra_args = {});
  ~EtcdCluster() = default;
  bool ok() const { return ok_; }
  std::string log() const;
  // "127.0.0.1:c0,127.0.0.1:c1,...": every member's client address.
  std::string endpoints() const;
  std::string endpoint(int i) const { return "127.0.0.1:" + std::to_string(client_ports_[i]); }
  int size() const { return static_cast<int>(procs_.size()); }
  void kill(int i);  // SIGKILL member i and reap it
  // The member that is raft leader now, as its own status reports it
  // (etcd's /v3/maintenance/status gateway); -1 when no live member says so.
  int leaderIndex() const;

  // Whether the etcd binary exists (tests skip, saying so, when it does not).
  static bool available();

 private:
  // One try at starting the members on fresh ports; whether all became healthy.
  bool start(int members, int heartbeat_ms, int election_ms,
             const std::vector<std::string>& extra_args);
  bool ok_ = false;
  std::vector<int> client_ports_, peer_ports_;
  std::vector<Process> procs_;
  std::string failed_starts_;  // logs of the starts that failed, for log()
};

// Forwards 127.0.0.1:port() to `target_port` on a thread. freeze() stops
// moving bytes both ways and leaves new connections unaccepted (the peer sees
// timeouts, as across a network partition); thaw() resumes.
class TcpProxy {
 public:
  explicit TcpProxy(int target_port);
  ~TcpProxy();
  int port() const { return port_; }
  void freeze() { frozen_ = true; }
  void thaw() { frozen_ = false; }

 private:
  void run();
  int target_port_;
  int listen_fd_ = -1;
  int port_ = 0;
  std::atomic<bool> frozen_{false};
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace morpheus::testing
