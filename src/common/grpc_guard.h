// The connection guard in front of a daemon's gRPC server.
//
// Why: gRPC's own acceptor stops accepting for good after one accept() fails
// with EMFILE (the process ran out of descriptors), and it has no cap on
// connections, so idle TCP connections from anyone could wedge the port while
// the process looked healthy. The guard owns the public listening socket
// instead; gRPC never accepts a public connection itself.
//
// Contract:
//  - Accepts on its own thread. A connection over `max_connections` in total
//    or over `max_connections_per_client` from one IP address is accepted and
//    closed at once (counted in morpheus_grpc_connections_refused_total).
//  - A spare descriptor is held in reserve: when accept() fails with EMFILE or
//    ENFILE the guard closes the spare, accepts and closes the pending
//    connection (so the backlog drains and the port never stops), then takes
//    the spare again. While that happens, or while a connection to gRPC cannot
//    be made, `on_accepting(false)` is reported (the daemon's /readyz fails);
//    `on_accepting(true)` once a connection was handed to gRPC again.
//  - A connection must send its first bytes within `handshake_timeout`: the
//    exact HTTP/2 client preface (plaintext) or a TLS handshake record (TLS).
//    Only then is a connection to gRPC opened (`connect_upstream`) and bytes
//    are relayed both ways, with bounded buffers (a reader that does not read
//    stops the sender, never grows memory).
//  - Plaintext only: the HTTP/2 DATA frames are parsed as they pass and a gRPC
//    message whose length prefix exceeds `max_message_bytes` closes the
//    connection before its body is relayed, so gRPC never buffers it. With
//    TLS the guard cannot read messages and gRPC's own limit applies after
//    decryption; every peer has passed the TLS handshake first, but under
//    tls.client-certs: request (common/tls.h) a peer without a client
//    certificate passes it too and is unauthenticated until its call's token
//    is checked.
//  - Idle connections are closed by gRPC (max connection idle, daemon.cc); the
//    guard closes the client side when gRPC closes its side.
// Thread-safety: start() and stop() from one thread; the callbacks run on the
// guard's thread.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "common/clock.h"
#include "common/metrics.h"
#include "common/status.h"

namespace morpheus {

struct GrpcGuardOptions {
  int max_connections = 1000;            // grpc.max-connections
  int max_connections_per_client = 100;  // grpc.max-connections-per-client
  Millis handshake_timeout{10000};       // grpc.handshake-timeout
  int64_t max_message_bytes = 16 << 20;  // grpc.max-receive-message-bytes (plaintext check)
  bool tls = false;                      // peers speak TLS (no preface or message check)
};

class GrpcGuard {
 public:
  // Returns a new descriptor connected to the gRPC server (owned by the
  // guard), or -1 with errno set.
  using ConnectUpstream = std::function<int()>;
  using OnAccepting = std::function<void(bool accepting)>;

  GrpcGuard(GrpcGuardOptions opts, MetricsRegistry& metrics, ConnectUpstream connect_upstream,
            OnAccepting on_accepting);
  ~GrpcGuard();
  GrpcGuard(const GrpcGuard&) = delete;
  GrpcGuard& operator=(const GrpcGuard&) = delete;

  // Binds host:port (0 = a free port; no SO_REUSEPORT, so a busy port is an
  // error) and starts the guard's thread. The bound port, or UNAVAILABLE.
  Result<int> start(const std::string& host, int port);
  // Stops accepting and closes every connection; idempotent.
  void stop();

 private:
  void run();

  GrpcGuardOptions opts_;
  MetricsRegistry& metrics_;
  ConnectUpstream connect_upstream_;
  OnAccepting on_accepting_;
  int listen_fd_ = -1;
  int wake_fd_ = -1;  // eventfd: stop()
  std::atomic<bool> stopping_{false};
  std::thread thread_;
};

}  // namespace morpheus
