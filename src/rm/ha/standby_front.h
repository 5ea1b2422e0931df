// What a standby RM serves while it waits for leadership (docs/design/ha.md;
// YARN's standby RM answering StandbyException).
//
// The standby listens from the start on the RM's own gRPC and HTTP ports, so
// operators and load balancers see it, and clients configured with both RMs
// learn where the active one is:
//  - gRPC: every method (ClientService, ReservationService, ResourceTracker,
//    ApplicationMaster, anything else) is answered UNAVAILABLE "standby;
//    active RM is host:port" with trailing metadata `morpheus-leader:
//    host:port` (common/rm_failover.h; "" and "no active RM yet" while none
//    is). Nothing is executed, so clients may retry anywhere.
//  - HTTP: /healthz 200; /readyz 503 "not ready: active (standby; active RM
//    is host:port)"; /metrics with morpheus_rm_ha_active 0; the web UI ("/",
//    "/ui", "/ui/*") and REST ("/ws/*") answer 503 naming the active RM's
//    HTTP address for every method, so no mutation is ever served here.
// Once elected the RM recovers its state, destroys the front (which frees
// the ports: HttpServer::stop alone leaves its socket bound) and starts its
// real servers on the same ports (grpcPort(), httpPort()).
#pragma once

#include <memory>
#include <mutex>
#include <string>

#include "common/daemon.h"
#include "common/metrics.h"
#include "common/mutex.h"
#include "common/status.h"

namespace morpheus::rm {

// The active RM's client addresses, the value of the etcd leader key.
struct LeaderRecord {
  std::string grpc;  // host:port RM clients call
  std::string http;  // host:port of REST and the web UI
  int64_t pid = 0;
};
// JSON {"grpc": ..., "http": ..., "pid": ...}.
std::string encodeLeaderRecord(const LeaderRecord& r);
// The record of encodeLeaderRecord; a value that is not such JSON (an older
// RM's "host:port (pid N)") gives grpc = its first word, http = "".
LeaderRecord decodeLeaderRecord(const std::string& value);
// "host" of an advertised address: `configured` when set, else `bind_host`,
// or this machine's host name when `bind_host` is a wildcard ("", 0.0.0.0, ::).
std::string advertisedHost(const std::string& configured, const std::string& bind_host);

// morpheus_rm_ha_active: 1 on the active RM (a single RM is always active),
// 0 on a standby. Declared once; the standby front and the RM's main set it.
struct HaMetrics {
  explicit HaMetrics(MetricsRegistry& metrics);
  Gauge& active;
};

class StandbyFront {
 public:
  // Starts the standby's servers on opts' gRPC and HTTP ports (0 = any free).
  // UNAVAILABLE naming the address when a port is busy.
  static Result<std::unique_ptr<StandbyFront>> start(const DaemonOptions& opts,
                                                     MetricsRegistry& metrics);
  // Stops both servers and releases their ports.
  ~StandbyFront();
  // Thread-safe: the leader record (etcd value, "" = none) to name from now on.
  void setLeader(const std::string& record);
  int grpcPort() const { return server_->grpcPort(); }
  int httpPort() const { return server_->httpPort(); }

  struct Refusal;  // the gRPC side (standby_front.cc)

 private:
  StandbyFront(const DaemonOptions& opts, MetricsRegistry& metrics);
  void registerHttpRefusals();
  // "standby; active RM is <addr>" or "standby; no active RM yet".
  std::string message(bool http) const;

  HaMetrics metrics_;
  std::unique_ptr<Refusal> refusal_;
  std::unique_ptr<DaemonServer> server_;
  mutable Mutex mu_;
  LeaderRecord leader_ GUARDED_BY(mu_);
  std::string unmet_label_ GUARDED_BY(mu_);  // the readiness condition naming the leader
};

}  // namespace morpheus::rm
