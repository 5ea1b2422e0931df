// Scaffolding shared by morpheus-rm, morpheus-nm and morpheus-inference:
// config + flags, logging, data dir, gRPC server (health + reflection),
// HTTP (/healthz, /metrics), endpoints file, SIGTERM handling, and how a
// daemon's main() ends (daemonExit). A daemon's run function only wires its
// component's core objects into this and waits.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <grpcpp/generic/async_generic_service.h>
#include <grpcpp/grpcpp.h>

#include "common/auth.h"
#include "common/config.h"
#include "common/grpc_guard.h"
#include "common/http_server.h"
#include "common/logging.h"
#include "common/metrics.h"
#include "common/status.h"
#include "common/tls.h"
#include "common/token.h"

namespace morpheus {

// Options every daemon has. Declared into the component's schema by
// addDaemonOptions so they appear in the same YAML file and `--print-config`.
struct DaemonOptions {
  std::string grpc_host;
  int64_t grpc_port = 0;
  std::string http_host;
  int64_t http_port = 0;
  std::string data_dir;
  std::string log_level;
  std::string log_file;
  int64_t log_max_size = 0;   // log.max-size (bytes; 0 = no rotation by the daemon)
  int64_t log_max_files = 5;  // log.max-files
  // HTTP edge limits (http.*), documented in addDaemonOptions and HttpServerOptions.
  int64_t http_max_connections = 1000;
  int64_t http_max_connections_per_client = 100;
  int64_t http_max_connections_per_principal = 50;
  Millis http_header_timeout{10000};
  Millis http_idle_timeout{60000};
  int64_t http_max_body_bytes = 1 << 20;
  // gRPC edge limits (grpc.*), documented in addDaemonOptions and
  // GrpcGuardOptions (common/grpc_guard.h).
  int64_t grpc_max_connections = 1000;
  int64_t grpc_max_connections_per_client = 100;
  Millis grpc_handshake_timeout{10000};
  Millis grpc_idle_timeout{300000};
  int64_t grpc_max_receive_message_bytes = 16 << 20;
  int64_t grpc_default_max_message_bytes = 1 << 20;
  std::map<std::string, std::string>
      grpc_max_message_bytes_per_method;  // "/pkg.Svc/Method" -> bytes
  int64_t grpc_max_unauthenticated_message_bytes = 64 << 10;
  int64_t grpc_max_concurrent_streams = 100;
  int64_t grpc_memory_quota_bytes = 512LL << 20;
  int64_t grpc_max_threads = 256;
  // TLS of every gRPC server and channel of the daemon (common/tls.h):
  // tls_files as configured (tls.*), tls their content once loadDaemonTls()
  // has validated them. Plaintext while !tls.enabled().
  TlsFiles tls_files;
  TlsOptions tls;
  std::string token_file_check = "strict";  // token-file-check: strict | warn
};

// How this daemon checks its token files' owner and mode (token-file-check).
SecretFileCheck tokenFileCheck(const DaemonOptions& opts);

// `client_certs`: the daemon's default tls.client-certs (common/tls.h).
void addDaemonOptions(ConfigSchema& schema, DaemonOptions* opts, int64_t default_grpc_port,
                      int64_t default_http_port, const std::string& default_data_dir,
                      TlsClientCerts client_certs = TlsClientCerts::kRequire);

// Raises the soft RLIMIT_NOFILE to the hard limit (logged) and returns the
// soft limit now in force (the old one when raising fails).
int64_t raiseDescriptorLimit();

// The HttpServer limits of `opts`, with the connection caps kept to at most
// half of `descriptor_limit` (logged as a warning when lowered) so that gRPC,
// the store and the logs keep descriptors under an HTTP flood.
HttpServerOptions httpServerOptions(const DaemonOptions& opts, int64_t descriptor_limit);
// The gRPC connection guard's limits of `opts`. Each admitted gRPC connection
// costs three descriptors (the client's, and both ends towards gRPC), so the
// connection cap is kept within the half of `descriptor_limit` that HTTP does
// not use, less kGrpcDescriptorReserve (logged as a warning when lowered).
// The per-method message limits are builtinGrpcMethodLimits() with
// grpc.max-message-bytes-per-method over them; INVALID_ARGUMENT naming the
// option when an entry is not "/package.Service/Method" of a method this
// program knows, or its value not a byte count within
// [0, grpc.max-receive-message-bytes].
inline constexpr int64_t kGrpcDescriptorReserve = 64;
Result<GrpcGuardOptions> grpcGuardOptions(const DaemonOptions& opts, int64_t descriptor_limit);

// The methods of the Morpheus services whose requests may be larger than
// grpc.default-max-message-bytes, or whose callers authenticate inside the
// request (GrpcCredentials::kInMessage: the AM token of the RM's
// ApplicationMaster service, the container tokens of the NM's
// ContainerManager), by "/package.Service/Method". One table for every
// daemon (a method is served by one of them); kGrpcUpToMaxReceive = up to
// grpc.max-receive-message-bytes, kGrpcDefaultLimit = the default limit.
inline constexpr int64_t kGrpcUpToMaxReceive = INT64_MAX;
inline constexpr int64_t kGrpcDefaultLimit = -1;
const std::map<std::string, GrpcMethodLimit>& builtinGrpcMethodLimits();
// Loads and validates opts->tls_files into opts->tls. Call once after the
// command line is parsed, before any server or channel is made; on error
// (INVALID_ARGUMENT naming the tls.* option) the daemon must not start.
Status loadDaemonTls(DaemonOptions* opts);

// A dedicated flag that sets a config key (e.g. --rm sets nm.rm-address).
struct FlagAlias {
  std::string flag;  // "--grpc-port"
  std::string key;   // "grpc.port"
  std::string help;
};

// The logging options of `opts` (log.*) for setupLogging (common/logging.h).
LogOptions daemonLogOptions(const DaemonOptions& opts);

// Blocks SIGTERM/SIGINT/SIGHUP and ignores SIGPIPE in the calling thread; call
// first thing in main() so every thread created later inherits the mask and
// the signals are delivered only to waitForTerminationSignal(). (Container
// launchers reset the mask before exec: nodemanager/launch_main.cc.)
void blockTerminationSignals();
// Blocks until SIGTERM or SIGINT; returns the signal number. SIGHUP meanwhile
// reopens the log file (reopenLogFile: after logrotate moved it), then runs
// `on_hup` when set (the RM's config reload), and waits on. A daemon calls it
// once it serves; from its return on, daemonExit counts a failure as one
// after serving (exit 3).
int waitForTerminationSignal(const std::function<void()>& on_hup = nullptr);

// The systemd readiness protocol (sd_notify(3), libsystemd) for Type=notify
// units; each is a no-op when NOTIFY_SOCKET is unset (not under systemd).
// READY=1 with STATUS=`status`: call once the daemon serves (its servers
// listen and its components run), just before waitForTerminationSignal.
void notifyReady(const std::string& status);
// STOPPING=1: call as soon as the termination signal arrived.
void notifyStopping();

// Where a daemon's options came from, so it can read them again (the RM's
// config reload): the --config file ("" = none) and the command line's
// overrides (--set and the dedicated flags) as key/value, in order.
struct DaemonConfigSource {
  std::string file;
  std::vector<std::pair<std::string, std::string>> overrides;
};

// The metrics of the daemon itself, declared once (DaemonServer builds them):
//   morpheus_<component>_ready            gauge, 1 while /readyz answers 200
//   morpheus_<component>_uptime_seconds   gauge, seconds since the server started
//   morpheus_build_info{daemon,version,revision}   gauge, constant 1
// (Prometheus adds `up` to every scrape itself, so the daemon serves none.)
struct DaemonMetrics {
  DaemonMetrics(MetricsRegistry& metrics, const std::string& component);
  Gauge& ready;
  Gauge& uptime_seconds;
  Gauge& build_info;
};

// Declares in `metrics` everything a DaemonServer of `component` serves
// besides its components' metrics: DaemonMetrics, ProcessMetrics,
// HttpServerMetrics and GrpcGuardMetrics. For `--print-metrics`.
void declareDaemonMetrics(MetricsRegistry& metrics, const std::string& component);

// Declares a daemon's component metrics in a registry (for --print-metrics):
// constructs each component's metrics struct.
using MetricsDeclaration = std::function<void(MetricsRegistry&)>;

// How a daemon's main() is built and ends. main() parses the command line
// (parseDaemonCommandLine), then calls two functions of the daemon:
//   Result<XConfig> validateX(options): loads TLS, sets up logging (log.*),
//     checks every option and reads the files they name; starts nothing,
//     creates no data dir and opens no state.
//   Status runX(XConfig): prepares the data dir, opens state, starts the
//     servers, serves until SIGTERM/SIGINT, stops; OK after a clean stop.
// and hands each outcome to daemonExit, which prints any error once.
//
// Exit codes of morpheus-rm, morpheus-nm and morpheus-inference:
//   0  stopped by SIGTERM or SIGINT (an RM also when stopped while standby),
//      or after --help, --version, --print-config, --print-metrics
//   2  did not start: the command line or config was refused (the line
//      names the flag, key or file as given), or a start step failed (a
//      port taken, the data dir or state store locked or unusable)
//   3  stopped by a failure after it served (the RM: HA leadership lost,
//      docs/operator/ha.md); a supervisor restarts it
// A failed start step exits 2 like a refused config (the line, not the code,
// tells them apart: tests and scripts rely on 2 for both); the systemd units
// restart on 2 and 3 alike (Restart=on-failure).
inline constexpr int kExitStopped = 0;
inline constexpr int kExitNotStarted = 2;
inline constexpr int kExitFailedAfterServing = 3;

// Which of a daemon's functions a Status comes from (see above).
enum class DaemonPhase { kValidate, kRun };

// The one place a daemon reports how it ends; returns main()'s exit code.
// OK: 0, nothing printed. An error of kValidate: the line
// "<program>: config error: <message>" on stderr, 2. An error of kRun before
// the daemon served (waitForTerminationSignal had not returned): the line
// "<program>: <message>" on stderr, 2; after it served, logged as an error
// "<program> stopped: <message>" (stderr and log.file), 3.
int daemonExit(const std::string& program, DaemonPhase phase, const Status& status);

// Parses argv: --config FILE, the standard aliases (--grpc-port, --http-port,
// --data-dir, --log-level) plus `extra`, --set KEY=VALUE (repeatable),
// --print-config and --print-metrics. Loads the file, then applies flags in
// order. On error prints one line to stderr and returns the exit code to use
// (2): "<program>: <reason>" for a command line CLI11 refuses,
// "<program>: config error: <reason>" for a value the config file or a flag
// sets (daemonExit; a dedicated flag's error starts with the flag as given,
// "--grpc-port: grpc.port: ..."). Returns -1 when the daemon should start, 0 after
// --help, --print-config or --print-metrics. --print-metrics prints every
// metric the daemon serves (formatDescriptions: declareDaemonMetrics, then
// `declare_metrics`), one per line. `source` (optional) receives the file and
// overrides applied.
int parseDaemonCommandLine(int argc, char** argv, const std::string& program, ConfigSchema& schema,
                           const std::vector<FlagAlias>& extra,
                           const MetricsDeclaration& declare_metrics = nullptr,
                           DaemonConfigSource* source = nullptr);

// Creates the directory if needed, verifies it is writable and takes an
// exclusive lock (LOCK file) so two daemons never share one data dir.
// The lock is held for the life of the process.
Status prepareDataDir(const std::string& dir);

// Runs the network side of a daemon. Construct, register services, start().
class DaemonServer {
 public:
  // Raises the descriptor limit (raiseDescriptorLimit) and sizes the HTTP
  // server's caps under it (httpServerOptions).
  DaemonServer(std::string component, const DaemonOptions& opts, MetricsRegistry& metrics);
  ~DaemonServer();

  void addService(grpc::Service* service) { services_.push_back(service); }
  // The daemon's judge of gRPC callers' "authorization" metadata, so a call
  // with a token it does not accept counts as unauthenticated at the
  // connection guard (grpc.max-unauthenticated-message-bytes), not only a
  // call without one. Call before start(); `auth` must outlive the server.
  void setAuthenticator(const Authenticator* auth) { auth_ = auth; }
  // Answers every method no added service has (a standby RM's refusal,
  // standby_front.h). Call before start(); `service` must outlive the server.
  void setFallbackService(grpc::CallbackGenericService* service) { fallback_ = service; }
  HttpServer& http() { return http_; }
  // What /readyz reports (registerHealthRoutes). The daemon itself requires
  // "serving" (set by start(), cleared when shutdown() begins); components
  // add their own conditions (RM: state-store, plan; NM: registered).
  Readiness& readiness() { return readiness_; }

  // Starts gRPC (health + reflection enabled, SO_REUSEPORT off so a busy port
  // is an error) behind its connection guard (common/grpc_guard.h: the guard
  // owns the public port; plaintext connections reach gRPC through a socket
  // pair, TLS ones through a Unix socket in a private 0700 directory; /readyz
  // requires "grpc-accepting") and HTTP (/healthz liveness, /readyz readiness, /metrics
  // with the process_* metrics and morpheus_<component>_ready), logs the bound addresses and writes
  // them to <data_dir>/<component>.endpoints.json. UNAVAILABLE when a port is busy. gRPC uses
  // TLS when opts.tls is enabled (client certificates as tls.client-certs says), else plaintext.
  Status start();
  // Marks NOT_SERVING, stops accepting, waits at most `grace` for in-flight RPCs.
  void shutdown(Millis grace = Millis(2000));

  int grpcPort() const { return grpc_port_; }
  int httpPort() const { return http_port_; }
  grpc::Server* grpcServer() { return server_.get(); }

 private:
  // A new descriptor connected to the gRPC server, or -1 (errno set).
  int connectGrpc();

  std::string component_;
  DaemonOptions opts_;
  MetricsRegistry& metrics_;
  DaemonMetrics daemon_metrics_;
  int64_t descriptor_limit_;
  std::unique_ptr<GrpcGuard> guard_;
  std::string internal_dir_;  // TLS: the private directory of the internal socket
  std::string internal_socket_;
  std::vector<grpc::Service*> services_;
  grpc::CallbackGenericService* fallback_ = nullptr;
  const Authenticator* auth_ = nullptr;
  std::unique_ptr<grpc::Server> server_;
  Readiness readiness_;
  HttpServer http_;
  int grpc_port_ = 0;
  int http_port_ = 0;
  bool stopped_ = false;
};

}  // namespace morpheus
