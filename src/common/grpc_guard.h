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
//  - Plaintext only: the HTTP/2 frames from the client are parsed as they
//    pass (GrpcRequestCheck below): each stream's HEADERS are decoded (HPACK,
//    common/hpack.h) for its method (":path") and credentials
//    ("authorization"), which fix the largest message the stream may send;
//    a gRPC message whose length prefix exceeds it closes the connection
//    before its body is relayed, so gRPC never buffers it. The limit of a
//    stream is its method's (`methods`, else `default_method_bytes`), never
//    above `max_message_bytes`; a stream of a method whose callers send
//    "authorization" metadata (GrpcCredentials::kMetadata) that has none, or
//    one `authenticates` refuses, may send `max_unauthenticated_bytes` at
//    most. Malformed framing or header compression also closes the
//    connection (a compression error is fatal in HTTP/2 anyway).
//  - TLS: the guard sees only ciphertext, so none of the message checks
//    apply and gRPC's own limit (grpc.max-receive-message-bytes) applies after
//    decryption. Every peer has passed the TLS handshake first, but under
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
#include <map>
#include <memory>
#include <string>
#include <thread>

#include "common/clock.h"
#include "common/metrics.h"
#include "common/status.h"

namespace morpheus {

// Where the callers of a method prove who they are.
enum class GrpcCredentials {
  kMetadata,   // "authorization: Bearer TOKEN" metadata (common/auth.h)
  kInMessage,  // a token inside the request (AM tokens, container tokens)
};

struct GrpcMethodLimit {
  int64_t max_message_bytes = 1 << 20;
  GrpcCredentials credentials = GrpcCredentials::kMetadata;
};

struct GrpcGuardOptions {
  int max_connections = 1000;            // grpc.max-connections
  int max_connections_per_client = 100;  // grpc.max-connections-per-client
  Millis handshake_timeout{10000};       // grpc.handshake-timeout
  bool tls = false;                      // peers speak TLS (no preface or message check)
  // Plaintext message checks (the contract above).
  int64_t max_message_bytes = 16 << 20;    // grpc.max-receive-message-bytes: caps every limit
  int64_t default_method_bytes = 1 << 20;  // grpc.default-max-message-bytes
  std::map<std::string, GrpcMethodLimit> methods;  // by "/package.Service/Method"
  int64_t max_unauthenticated_bytes = 64 << 10;    // grpc.max-unauthenticated-message-bytes
  // Whether a call's "authorization" value (nullptr: the call has none)
  // identifies a caller. Runs on the guard's thread, once per call; must be
  // cheap and thread-safe. Unset: any value counts as credentials.
  std::function<bool(const std::string* authorization)> authenticates;
};

// Follows the HTTP/2 frames of one plaintext connection (after the client
// preface) without buffering message payload, and says when a stream sends
// more than its limit (the guard's contract above). The stream bookkeeping
// ends with the client's END_STREAM or RST_STREAM or the server's
// RST_STREAM; DATA of a stream it does not track is not checked, as gRPC
// discards it (a closed stream). Bounded: at most 4096 open streams (gRPC
// allows GRPC_ARG_MAX_CONCURRENT_STREAMS), a header block of 64 KiB, the
// HPACK table of HpackDecoder::kDefaultTableSize (gRPC's advertised size,
// pinned by the daemon).
// Thread-safety: none; `opts` must outlive it.
class GrpcRequestCheck {
 public:
  explicit GrpcRequestCheck(const GrpcGuardOptions& opts);
  ~GrpcRequestCheck();
  GrpcRequestCheck(const GrpcRequestCheck&) = delete;
  GrpcRequestCheck& operator=(const GrpcRequestCheck&) = delete;

  // Bytes from the client; false once the connection must be closed (then
  // reason() and error() say why; later calls keep returning false).
  bool fromClient(const uint8_t* p, size_t n);
  // Bytes from gRPC to the client (its RST_STREAM frames end streams).
  void fromServer(const uint8_t* p, size_t n);
  // The refusal's metrics label: "message-size", "unauthenticated" or
  // "http2" (malformed frames or header compression).
  const char* reason() const { return reason_; }
  const std::string& error() const { return error_; }
  // Streams whose messages are followed now.
  size_t trackedStreams() const;
  // The limit that applies to `stream`, or -1 when it is not tracked.
  int64_t streamLimit(uint32_t stream) const;

 private:
  struct State;
  const GrpcGuardOptions& opts_;
  std::unique_ptr<State> s_;
  const char* reason_ = "";
  std::string error_;
};

// The guard's metrics, declared once (every counter present from start at 0):
//   morpheus_grpc_connections_open                    gauge
//   morpheus_grpc_connections_refused_total{reason}   counter, reason =
//       max-connections | max-connections-per-client | handshake |
//       message-size | unauthenticated | http2 | descriptors
//   morpheus_grpc_accept_errors_total                 counter
struct GrpcGuardMetrics {
  explicit GrpcGuardMetrics(MetricsRegistry& metrics);
  Gauge& open;
  Counter& refused_max_connections;
  Counter& refused_per_client;
  Counter& refused_handshake;
  Counter& refused_message_size;
  Counter& refused_unauthenticated;
  Counter& refused_http2;
  Counter& refused_descriptors;
  Counter& accept_errors;
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
  GrpcGuardMetrics metrics_;
  ConnectUpstream connect_upstream_;
  OnAccepting on_accepting_;
  int listen_fd_ = -1;
  int wake_fd_ = -1;  // eventfd: stop()
  std::atomic<bool> stopping_{false};
  std::thread thread_;
};

}  // namespace morpheus
