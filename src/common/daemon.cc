#include "common/daemon.h"

#include "common/version.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include <google/protobuf/descriptor.h>
#include <grpcpp/ext/proto_server_reflection_plugin.h>
#include <grpcpp/health_check_service_interface.h>
#include <grpcpp/resource_quota.h>
#include <grpcpp/server_posix.h>
#include <spdlog/spdlog.h>
#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <cerrno>
#include <climits>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>

#include "common/hpack.h"
#include "common/logging.h"
#include "common/mutex_tuning.h"
#include "common/wire.h"

namespace morpheus {

namespace fs = std::filesystem;

void addDaemonOptions(ConfigSchema& schema, DaemonOptions* opts, int64_t default_grpc_port,
                      int64_t default_http_port, const std::string& default_data_dir,
                      TlsClientCerts client_certs) {
  schema.addString("grpc.host", &opts->grpc_host, "127.0.0.1",
                   "Address the gRPC server listens on.");
  schema.addInt("grpc.port", &opts->grpc_port, default_grpc_port, 0, 65535, "TCP port",
                "gRPC listen port; 0 picks a free port and logs it.");
  schema.addString("http.host", &opts->http_host, "127.0.0.1",
                   "Address the HTTP server (/healthz, /metrics, REST) listens on.");
  schema.addInt("http.port", &opts->http_port, default_http_port, 0, 65535, "TCP port",
                "HTTP listen port; 0 picks a free port and logs it.");
  schema.addString("data-dir", &opts->data_dir, default_data_dir,
                   "Directory for durable state; created if missing, locked while running.");
  schema.addString("log.level", &opts->log_level, "info", "Log level.",
                   {"trace", "debug", "info", "warn", "error"});
  schema.addString("log.file", &opts->log_file, "",
                   "Also append logs to this file (\"\" = stderr only, which systemd sends to "
                   "the journal). SIGHUP reopens it (for logrotate). Lines start with the UTC "
                   "time and offset, ISO 8601.");
  schema.addInt("log.max-size", &opts->log_max_size, 0, 0, 1LL << 40, "bytes",
                "Rotate log.file when it would grow past this size (spdlog's rotating sink: "
                "rm.log -> rm.1.log -> ... -> rm.<log.max-files>.log, the oldest dropped); 0 = "
                "never (rotate it outside and send SIGHUP).");
  schema.addInt("log.max-files", &opts->log_max_files, 5, 1, 10000, "files",
                "Rotated log files kept besides log.file when log.max-size > 0.");
  schema.addInt("http.max-connections", &opts->http_max_connections, 1000, 1, 1000000,
                "connections",
                "Open HTTP connections at most; an excess connection is answered 503 and "
                "closed at once. Lowered to half the process's descriptor limit if above it.");
  schema.addInt("http.max-connections-per-client", &opts->http_max_connections_per_client, 100, 1,
                1000000, "connections",
                "Open HTTP connections from one client IP address at most; the excess is "
                "answered 503 and closed at once.");
  schema.addInt("http.max-connections-per-principal", &opts->http_max_connections_per_principal, 50,
                1, 1000000, "connections",
                "Open HTTP connections of one authenticated user at most (counted from the "
                "connection's first request with a valid token); the request over it is "
                "answered 503 and its connection closed.");
  schema.addDuration("http.header-timeout", &opts->http_header_timeout, Millis(10000), Millis(100),
                     "A request's headers and body must arrive within this (slow senders are "
                     "closed); also the time a client has to read a response.");
  schema.addDuration("http.idle-timeout", &opts->http_idle_timeout, Millis(60000), Millis(100),
                     "A keep-alive HTTP connection with no new request for this long is closed.");
  schema.addInt("http.max-body-bytes", &opts->http_max_body_bytes, 1 << 20, 0, 1LL << 30, "bytes",
                "Largest HTTP request body; a larger one is answered 413 without being read.");
  schema.addInt("grpc.max-connections", &opts->grpc_max_connections, 1000, 1, 1000000,
                "connections",
                "Open gRPC connections at most (the connection guard owns the gRPC port); an "
                "excess connection is closed at once. Lowered to fit the descriptor limit: "
                "(half the limit - 64) / 3, as each costs three descriptors.");
  schema.addInt("grpc.max-connections-per-client", &opts->grpc_max_connections_per_client, 100, 1,
                1000000, "connections",
                "Open gRPC connections from one client IP address at most; the excess is closed "
                "at once.");
  schema.addDuration("grpc.handshake-timeout", &opts->grpc_handshake_timeout, Millis(10000),
                     Millis(100),
                     "A new gRPC connection must send the HTTP/2 preface (plaintext) or start "
                     "its TLS handshake within this, and complete the TLS handshake within "
                     "this again; else it is closed.");
  schema.addDuration("grpc.idle-timeout", &opts->grpc_idle_timeout, Millis(300000), Millis(1000),
                     "A gRPC connection without any call for this long is closed (HTTP/2 "
                     "GOAWAY; clients reconnect on their next call).");
  schema.addInt("grpc.max-receive-message-bytes", &opts->grpc_max_receive_message_bytes, 16 << 20,
                1024, 1LL << 30, "bytes",
                "Largest gRPC request message, and the ceiling of every per-method limit. On a "
                "plaintext port a larger message closes the connection as soon as its length "
                "prefix arrives, before its body is read; with TLS gRPC refuses it "
                "(RESOURCE_EXHAUSTED).");
  schema.addInt("grpc.default-max-message-bytes", &opts->grpc_default_max_message_bytes, 1 << 20,
                1024, 1LL << 30, "bytes",
                "Plaintext port: largest request message of a method without a limit of its own "
                "(most methods take small messages; the few that take large ones, such as node "
                "heartbeats, reservation submissions and run imports, may send up to "
                "grpc.max-receive-message-bytes). A larger message closes the connection before "
                "its body is read.");
  schema.addStringMap(
      "grpc.max-message-bytes-per-method", &opts->grpc_max_message_bytes_per_method,
      "Plaintext port: per-method request message limits over the built-in ones, "
      "\"/package.Service/Method\": bytes (YAML mapping; on the command line "
      "/package.Service/Method=bytes,...), at most grpc.max-receive-message-bytes, e.g. "
      "/morpheus.v1.ClientService/SubmitApplication: 1048576.");
  schema.addInt("grpc.max-unauthenticated-message-bytes",
                &opts->grpc_max_unauthenticated_message_bytes, 64 << 10, 1024, 1LL << 30, "bytes",
                "Plaintext port: largest request message of a call without valid "
                "\"authorization\" metadata to a method whose callers send it (all but the "
                "AM and container-manager methods, whose tokens travel in the request); a "
                "larger one closes the connection before its body is read, whatever the "
                "method's own limit.");
  schema.addInt("grpc.max-concurrent-streams", &opts->grpc_max_concurrent_streams, 100, 1, 100000,
                "calls", "Concurrent calls on one gRPC connection at most.");
  schema.addInt("grpc.memory-quota-bytes", &opts->grpc_memory_quota_bytes, 512LL << 20, 16 << 20,
                1LL << 40, "bytes",
                "Memory gRPC may use for connections and messages in flight (its resource "
                "quota); under pressure it shrinks flow-control windows and then closes "
                "connections.");
  schema.addInt("grpc.max-threads", &opts->grpc_max_threads, 256, 4, 100000, "threads",
                "Threads gRPC may use for calls at most (its resource quota); a call beyond "
                "is answered RESOURCE_EXHAUSTED.");
  addTlsOptions(schema, &opts->tls_files, client_certs);
  schema.addString("token-file-check", &opts->token_file_check, "strict",
                   "How the daemon's bearer-token files (its *.token-file options) must be "
                   "protected, as ssh checks key files. strict: a token file another account "
                   "may read or write (mode & 077), or owned by an account other than the "
                   "daemon's or root, is refused at start. warn: accepted with a warning.",
                   {"strict", "warn"});
}

SecretFileCheck tokenFileCheck(const DaemonOptions& opts) {
  return opts.token_file_check == "warn" ? SecretFileCheck::kWarn : SecretFileCheck::kStrict;
}

int64_t raiseDescriptorLimit() {
  struct rlimit lim {};
  if (::getrlimit(RLIMIT_NOFILE, &lim) != 0) {
    spdlog::warn("cannot read the descriptor limit (RLIMIT_NOFILE): {}", std::strerror(errno));
    return 1024;
  }
  rlim_t before = lim.rlim_cur;
  if (lim.rlim_cur < lim.rlim_max) {
    lim.rlim_cur = lim.rlim_max;
    if (::setrlimit(RLIMIT_NOFILE, &lim) != 0) {
      spdlog::warn("cannot raise the descriptor limit from {} to {}: {}", before, lim.rlim_max,
                   std::strerror(errno));
      lim.rlim_cur = before;
    }
  }
  int64_t now = lim.rlim_cur == RLIM_INFINITY ? INT64_MAX : static_cast<int64_t>(lim.rlim_cur);
  spdlog::info("descriptor limit (RLIMIT_NOFILE) {} (was {})", now, before);
  return now;
}

HttpServerOptions httpServerOptions(const DaemonOptions& opts, int64_t descriptor_limit) {
  HttpServerOptions h;
  int64_t cap = std::min(opts.http_max_connections, std::max<int64_t>(descriptor_limit / 2, 1));
  if (cap < opts.http_max_connections) {
    spdlog::warn("http.max-connections {} lowered to {}, half the descriptor limit {}",
                 opts.http_max_connections, cap, descriptor_limit);
  }
  h.max_connections = static_cast<int>(cap);
  h.max_connections_per_client =
      static_cast<int>(std::min(opts.http_max_connections_per_client, cap));
  h.max_connections_per_principal =
      static_cast<int>(std::min(opts.http_max_connections_per_principal, cap));
  h.header_timeout = opts.http_header_timeout;
  h.idle_timeout = opts.http_idle_timeout;
  h.max_body_bytes = opts.http_max_body_bytes;
  return h;
}

const std::map<std::string, GrpcMethodLimit>& builtinGrpcMethodLimits() {
  using C = GrpcCredentials;
  static const std::map<std::string, GrpcMethodLimit> table = {
      // RM: node managers report every container they run.
      {"/morpheus.v1.ResourceTracker/RegisterNode", {kGrpcUpToMaxReceive, C::kMetadata}},
      {"/morpheus.v1.ResourceTracker/NodeHeartbeat", {kGrpcUpToMaxReceive, C::kMetadata}},
      // RM: launch contexts (rm.max-launch-context-bytes) and reservations of many stages.
      {"/morpheus.v1.ClientService/SubmitApplication", {kGrpcUpToMaxReceive, C::kMetadata}},
      {"/morpheus.v1.ReservationService/SubmitReservation", {kGrpcUpToMaxReceive, C::kMetadata}},
      {"/morpheus.v1.ReservationService/UpdateReservation", {kGrpcUpToMaxReceive, C::kMetadata}},
      // RM: AMs send their AM token inside the request; Allocate carries the
      // job's stages and container releases.
      {"/morpheus.v1.ApplicationMaster/RegisterApplicationMaster",
       {kGrpcDefaultLimit, C::kInMessage}},
      {"/morpheus.v1.ApplicationMaster/Allocate", {kGrpcUpToMaxReceive, C::kInMessage}},
      {"/morpheus.v1.ApplicationMaster/FinishApplicationMaster",
       {kGrpcDefaultLimit, C::kInMessage}},
      // NM: container tokens inside the request; StartContainers carries
      // launch contexts of many containers.
      {"/morpheus.v1.ContainerManager/StartContainers", {kGrpcUpToMaxReceive, C::kInMessage}},
      {"/morpheus.v1.ContainerManager/StopContainers", {kGrpcDefaultLimit, C::kInMessage}},
      {"/morpheus.v1.ContainerManager/GetContainerStatuses", {kGrpcDefaultLimit, C::kInMessage}},
      {"/morpheus.v1.ContainerManager/GetContainerLogs", {kGrpcDefaultLimit, C::kInMessage}},
      // Inference: run and provenance imports, skyline fits.
      {"/morpheus.v1.InferenceService/IngestRuns", {kGrpcUpToMaxReceive, C::kMetadata}},
      {"/morpheus.v1.InferenceService/IngestProvenance", {kGrpcUpToMaxReceive, C::kMetadata}},
      {"/morpheus.v1.InferenceService/FitSkyline", {kGrpcUpToMaxReceive, C::kMetadata}},
      {"/morpheus.v1.InferenceService/Refit", {kGrpcUpToMaxReceive, C::kMetadata}},
  };
  return table;
}

namespace {

// Whether "/package.Service/Method" names a method of a service this program
// has the descriptor of (every service it registers).
bool knownGrpcMethod(const std::string& path) {
  if (path.size() < 4 || path[0] != '/') return false;
  auto slash = path.find('/', 1);
  if (slash == std::string::npos || slash == 1 || slash + 1 == path.size()) return false;
  std::string full = path.substr(1, slash - 1) + "." + path.substr(slash + 1);
  return google::protobuf::DescriptorPool::generated_pool()->FindMethodByName(full) != nullptr;
}

Result<std::map<std::string, GrpcMethodLimit>> grpcMethodLimits(const DaemonOptions& opts) {
  const std::string key = "grpc.max-message-bytes-per-method";
  std::map<std::string, GrpcMethodLimit> out;
  for (auto [method, limit] : builtinGrpcMethodLimits()) {
    if (limit.max_message_bytes == kGrpcDefaultLimit) {
      limit.max_message_bytes = opts.grpc_default_max_message_bytes;
    }
    limit.max_message_bytes =
        std::min(limit.max_message_bytes, opts.grpc_max_receive_message_bytes);
    out[method] = limit;
  }
  for (const auto& [method, text] : opts.grpc_max_message_bytes_per_method) {
    if (!knownGrpcMethod(method)) {
      return invalidArgument(key + "." + method,
                             "not a gRPC method of this daemon: write /package.Service/Method, "
                             "e.g. /morpheus.v1.ClientService/SubmitApplication");
    }
    int64_t bytes = -1;
    size_t pos = 0;
    try {
      bytes = std::stoll(text, &pos);
    } catch (const std::exception&) {
      pos = 0;
    }
    if (pos == 0 || pos != text.size() || bytes < 0) {
      return invalidArgument(key + "." + method, "'" + text + "' is not a byte count");
    }
    if (bytes > opts.grpc_max_receive_message_bytes) {
      return invalidArgument(key + "." + method,
                             std::to_string(bytes) + " is above grpc.max-receive-message-bytes " +
                                 std::to_string(opts.grpc_max_receive_message_bytes));
    }
    out[method].max_message_bytes = bytes;  // a new entry's callers send metadata
  }
  return out;
}

}  // namespace

Result<GrpcGuardOptions> grpcGuardOptions(const DaemonOptions& opts, int64_t descriptor_limit) {
  GrpcGuardOptions g;
  int64_t budget = std::max<int64_t>((descriptor_limit / 2 - kGrpcDescriptorReserve) / 3, 1);
  int64_t cap = std::min(opts.grpc_max_connections, budget);
  if (cap < opts.grpc_max_connections) {
    spdlog::warn("grpc.max-connections {} lowered to {} to fit the descriptor limit {}",
                 opts.grpc_max_connections, cap, descriptor_limit);
  }
  g.max_connections = static_cast<int>(cap);
  g.max_connections_per_client =
      static_cast<int>(std::min(opts.grpc_max_connections_per_client, cap));
  g.handshake_timeout = opts.grpc_handshake_timeout;
  g.tls = opts.tls.enabled();
  g.max_message_bytes = opts.grpc_max_receive_message_bytes;
  g.default_method_bytes =
      std::min(opts.grpc_default_max_message_bytes, opts.grpc_max_receive_message_bytes);
  g.max_unauthenticated_bytes = opts.grpc_max_unauthenticated_message_bytes;
  auto methods = grpcMethodLimits(opts);
  if (!methods.isOk()) return methods.status();
  g.methods = std::move(methods).value();
  return g;
}

Status loadDaemonTls(DaemonOptions* opts) {
  auto tls = loadTls(opts->tls_files);
  if (!tls.isOk()) return tls.status();
  opts->tls = std::move(tls).value();
  return Status::ok();
}

LogOptions daemonLogOptions(const DaemonOptions& opts) {
  LogOptions log;
  log.level = opts.log_level;
  log.file = opts.log_file;
  log.max_size_bytes = opts.log_max_size;
  log.max_files = opts.log_max_files;
  return log;
}

namespace {
// Set once waitForTerminationSignal returns: the daemon served (daemonExit).
std::atomic<bool> g_served{false};

sigset_t daemonSignals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGHUP);
  return set;
}
}  // namespace

void blockTerminationSignals() {
  sigset_t set = daemonSignals();
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  signal(SIGPIPE, SIG_IGN);
}

int waitForTerminationSignal(const std::function<void()>& on_hup) {
  sigset_t set = daemonSignals();
  while (true) {
    int sig = 0;
    if (sigwait(&set, &sig) != 0) continue;
    if (sig != SIGHUP) {
      g_served = true;
      return sig;
    }
    if (Status st = reopenLogFile(); st.isOk()) {
      spdlog::info("log file reopened on SIGHUP");
    } else {
      spdlog::error("SIGHUP: {}", st.message());
    }
    if (on_hup) on_hup();
  }
}

namespace {
void notifyServiceManager(const std::string& state) {
  int rc = sd_notify(0, state.c_str());
  if (rc < 0) {
    spdlog::warn("sd_notify({}) to the service manager failed: {}", state, std::strerror(-rc));
  } else if (rc > 0) {
    spdlog::debug("told the service manager {}", state);
  }
}
}  // namespace

void notifyReady(const std::string& status) { notifyServiceManager("READY=1\nSTATUS=" + status); }

void notifyStopping() { notifyServiceManager("STOPPING=1"); }

DaemonMetrics::DaemonMetrics(MetricsRegistry& m, const std::string& component)
    : ready(m.gauge("morpheus_" + component + "_ready", "1 while /readyz answers 200")),
      uptime_seconds(m.gauge("morpheus_" + component + "_uptime_seconds",
                             "Seconds since the daemon's servers started")),
      build_info(m.gauge(
          "morpheus_build_info",
          "Constant 1; the labels name the daemon, its version and git revision",
          {{"daemon", component}, {"version", projectVersion()}, {"revision", gitRevision()}})) {
  build_info.set(1);
}

void declareDaemonMetrics(MetricsRegistry& metrics, const std::string& component) {
  DaemonMetrics daemon(metrics, component);
  ProcessMetrics process(metrics);
  HttpServerMetrics http(metrics);
  GrpcGuardMetrics grpc(metrics);
}

int daemonExit(const std::string& program, DaemonPhase phase, const Status& status) {
  if (status.isOk()) return kExitStopped;
  if (phase == DaemonPhase::kValidate) {
    std::cerr << program << ": config error: " << status.message() << "\n";
    return kExitNotStarted;
  }
  if (!g_served) {
    std::cerr << program << ": " << status.message() << "\n";
    return kExitNotStarted;
  }
  spdlog::error("{} stopped: {}", program, status.message());
  return kExitFailedAfterServing;
}

int parseDaemonCommandLine(int argc, char** argv, const std::string& program, ConfigSchema& schema,
                           const std::vector<FlagAlias>& extra,
                           const MetricsDeclaration& declare_metrics, DaemonConfigSource* source) {
  disableAbseilDeadlockDetection();  // before any gRPC object exists (mutex_tuning.h)
  CLI::App app{"Morpheus " + program};
  std::string config_file;
  bool print_config = false;
  app.add_option("--config", config_file, "YAML config file (see deploy/ for commented examples)");
  app.add_flag("--print-config", print_config, "Print every option with its meaning and default");
  bool print_metrics = false;
  app.add_flag(
      "--print-metrics", print_metrics,
      "Print every metric served at /metrics: name, type, labels, meaning (tab-separated)");
  app.set_version_flag("--version", versionLine(program), "Print the version and git revision");
  std::vector<FlagAlias> aliases = {
      {"--grpc-port", "grpc.port", "gRPC port (0 = pick a free one)"},
      {"--http-port", "http.port", "HTTP port (0 = pick a free one)"},
      {"--data-dir", "data-dir", "Directory for durable state"},
      {"--log-level", "log.level", "trace|debug|info|warn|error"},
      {"--log-file", "log.file", "Append logs to this file"},
  };
  aliases.insert(aliases.end(), extra.begin(), extra.end());
  // Overrides are applied in command-line order after the file. `flags`: the
  // dedicated flag that set each one ("" = --set), for its error.
  std::vector<std::pair<std::string, std::string>> overrides;
  std::vector<std::string> flags;
  for (const auto& a : aliases) {
    app.add_option_function<std::string>(
        a.flag,
        [&overrides, &flags, key = a.key, flag = a.flag](const std::string& v) {
          overrides.emplace_back(key, v);
          flags.push_back(flag);
        },
        a.help + " [config key " + a.key + "]");
  }
  app.add_option_function<std::vector<std::string>>(
      "--set",
      [&overrides, &flags](const std::vector<std::string>& kvs) {
        for (const auto& kv : kvs) {
          auto eq = kv.find('=');
          overrides.emplace_back(kv.substr(0, eq),
                                 eq == std::string::npos ? "" : kv.substr(eq + 1));
          flags.emplace_back();
        }
      },
      "Override any config key: --set key=value (repeatable)");
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::cerr << program << ": " << e.what() << "\n";
    return kExitNotStarted;
  }
  if (print_config) {
    std::cout << schema.describe();
    return 0;
  }
  if (print_metrics) {
    MetricsRegistry declared;
    std::string component = program.rfind("morpheus-", 0) == 0 ? program.substr(9) : program;
    declareDaemonMetrics(declared, component);
    if (declare_metrics) declare_metrics(declared);
    std::cout << formatDescriptions(declared.describe());
    return 0;
  }
  if (!config_file.empty()) {
    Status st = schema.loadYamlFile(config_file);
    if (!st.isOk()) return daemonExit(program, DaemonPhase::kValidate, st);
  }
  for (size_t i = 0; i < overrides.size(); ++i) {
    Status st = schema.set(overrides[i].first, overrides[i].second);
    if (!st.isOk() && !flags[i].empty()) st = st.withContext(flags[i]);
    if (!st.isOk()) return daemonExit(program, DaemonPhase::kValidate, st);
  }
  if (source != nullptr) *source = {config_file, overrides};
  return -1;
}

Status prepareDataDir(const std::string& dir) {
  if (dir.empty()) return invalidArgument("data-dir", "must not be empty");
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return invalidArgument("data-dir", "'" + dir + "' cannot be created: " + ec.message());
  if (!fs::is_directory(dir, ec))
    return invalidArgument("data-dir", "'" + dir + "' is not a directory");
  std::string probe = dir + "/.write-probe";
  {
    std::ofstream out(probe);
    if (!out || !(out << "ok") || !out.flush()) {
      return invalidArgument("data-dir", "'" + dir + "' is not writable");
    }
  }
  fs::remove(probe, ec);
  std::string lock = dir + "/LOCK";
  int fd = ::open(lock.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return invalidArgument("data-dir", "cannot open lock file '" + lock + "'");
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    ::close(fd);
    return unavailable("data-dir '" + dir + "' is locked by another running daemon");
  }
  // fd intentionally kept open: the lock lives as long as the process.
  return Status::ok();
}

DaemonServer::DaemonServer(std::string component, const DaemonOptions& opts,
                           MetricsRegistry& metrics)
    : component_(std::move(component)),
      opts_(opts),
      metrics_(metrics),
      daemon_metrics_(metrics, component_),
      descriptor_limit_(raiseDescriptorLimit()),
      http_(httpServerOptions(opts, descriptor_limit_), metrics) {}

DaemonServer::~DaemonServer() { shutdown(Millis(0)); }

int DaemonServer::connectGrpc() {
  if (internal_socket_.empty()) {
    int sv[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv) != 0) return -1;
    grpc::AddInsecureChannelFromFd(server_.get(), sv[1]);  // gRPC owns sv[1] now
    return sv[0];
  }
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, internal_socket_.c_str(), internal_socket_.size() + 1);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 && errno != EINPROGRESS) {
    int e = errno;
    ::close(fd);
    errno = e;
    return -1;
  }
  return fd;
}

Status DaemonServer::start() {
  auto guard_opts = grpcGuardOptions(opts_, descriptor_limit_);
  if (!guard_opts.isOk()) return guard_opts.status();
  if (auth_ != nullptr) {
    const Authenticator* auth = auth_;
    guard_opts->authenticates = [auth](const std::string* authorization) {
      return auth->identifyHeader(authorization).isOk();
    };
  }
  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  grpc::ServerBuilder builder;
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  builder.SetMaxReceiveMessageSize(static_cast<int>(opts_.grpc_max_receive_message_bytes));
  builder.AddChannelArgument(GRPC_ARG_MAX_CONNECTION_IDLE_MS,
                             static_cast<int>(opts_.grpc_idle_timeout.count()));
  builder.AddChannelArgument(GRPC_ARG_SERVER_HANDSHAKE_TIMEOUT_MS,
                             static_cast<int>(opts_.grpc_handshake_timeout.count()));
  builder.AddChannelArgument(GRPC_ARG_MAX_CONCURRENT_STREAMS,
                             static_cast<int>(opts_.grpc_max_concurrent_streams));
  // The HPACK table size gRPC advertises is the one the guard decodes with.
  builder.AddChannelArgument(GRPC_ARG_HTTP2_HPACK_TABLE_SIZE_DECODER,
                             static_cast<int>(HpackDecoder::kDefaultTableSize));
  grpc::ResourceQuota quota("morpheus-" + component_ + "-grpc");
  quota.Resize(static_cast<size_t>(opts_.grpc_memory_quota_bytes));
  quota.SetMaxThreads(static_cast<int>(opts_.grpc_max_threads));
  builder.SetResourceQuota(quota);
  if (opts_.tls.enabled()) {
    // gRPC's TLS needs a listener of its own: a Unix socket only this user can
    // reach, fed by the guard. Its accept() never sees more connections than
    // the guard admitted within the descriptor budget.
    std::string tmpl = opts_.data_dir + "/.grpc-XXXXXX";
    if (tmpl.size() + 3 > sizeof(sockaddr_un::sun_path)) tmpl = "/tmp/morpheus-grpc-XXXXXX";
    if (::mkdtemp(tmpl.data()) == nullptr) {
      return unavailable("cannot create the gRPC server's private directory " + tmpl + ": " +
                         std::strerror(errno));
    }
    internal_dir_ = tmpl;
    internal_socket_ = internal_dir_ + "/s";
    int internal_port = 0;
    builder.AddListeningPort("unix:" + internal_socket_, makeServerCredentials(opts_.tls),
                             &internal_port);
  }
  for (auto* s : services_) builder.RegisterService(s);
  if (fallback_) builder.RegisterCallbackGenericService(fallback_);
  server_ = builder.BuildAndStart();
  if (!server_) return unavailable("cannot start the gRPC server (see the log above)");
  readiness_.require("grpc-accepting");
  guard_ = std::make_unique<GrpcGuard>(
      std::move(guard_opts).value(), metrics_, [this] { return connectGrpc(); },
      [this](bool accepting) { readiness_.set("grpc-accepting", accepting); });
  std::string addr = opts_.grpc_host + ":" + std::to_string(opts_.grpc_port);
  auto gp = guard_->start(opts_.grpc_host, static_cast<int>(opts_.grpc_port));
  if (!gp.isOk()) {
    guard_.reset();
    server_->Shutdown();
    server_.reset();
    return unavailable("cannot listen on gRPC address " + addr +
                       " (port busy or address invalid): " + gp.status().message());
  }
  grpc_port_ = *gp;
  readiness_.set("grpc-accepting", true);
  server_->GetHealthCheckService()->SetServingStatus(true);

  // All on the I/O thread: cheap, and never queued behind a slow REST handler.
  readiness_.require("serving");
  registerHealthRoutes(http_, readiness_);
  auto started = std::chrono::steady_clock::now();
  // On the I/O thread, so a scrape never waits behind a slow REST handler.
  // render() runs the registry's collectors first (the RM's resource gauges):
  // each takes its component's lock for one pass over its state, so a scrape
  // may wait for one heartbeat's scheduling (the RM runtime's lock).
  http_.route(
      "GET", "/metrics",
      [this, started](const HttpRequest&) {
        double up =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
        daemon_metrics_.uptime_seconds.set(up);
        daemon_metrics_.ready.set(readiness_.unmet().empty() ? 1 : 0);
        if (Status st = updateProcessMetrics(metrics_); !st.isOk()) {
          spdlog::warn("process metrics: {}", st.message());
        }
        return HttpResponse{200, "text/plain; version=0.0.4", metrics_.render()};
      },
      HandlerThread::kIoThread);
  auto hp = http_.start(opts_.http_host, static_cast<int>(opts_.http_port));
  if (!hp.isOk()) {
    server_->Shutdown();
    server_.reset();
    return hp.status();
  }
  http_port_ = *hp;
  readiness_.set("serving", true);
  std::string grpc_ep = opts_.grpc_host + ":" + std::to_string(grpc_port_);
  std::string http_ep = opts_.http_host + ":" + std::to_string(http_port_);
  std::string transport = "plaintext";
  if (opts_.tls.enabled()) {
    transport = opts_.tls.client_certs == TlsClientCerts::kRequest
                    ? "TLS, client certificates verified when presented (tls.client-certs: request)"
                    : "mutual TLS, client certificates required (tls.client-certs: require)";
  }
  spdlog::info("{} listening grpc={} ({}) http={}", component_, grpc_ep, transport, http_ep);
  nlohmann::json j = {{"grpc", grpc_ep}, {"http", http_ep}, {"pid", ::getpid()}};
  std::string path = opts_.data_dir + "/" + component_ + ".endpoints.json";
  std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << j.dump() << "\n";
    if (!out.flush()) return internalError("cannot write " + tmp);
  }
  std::error_code ec;
  fs::rename(tmp, path, ec);
  if (ec) return internalError("cannot write " + path + ": " + ec.message());
  return Status::ok();
}

void DaemonServer::shutdown(Millis grace) {
  if (stopped_) return;
  stopped_ = true;
  readiness_.set("serving", false);
  if (guard_) guard_->stop();
  if (server_) {
    server_->GetHealthCheckService()->SetServingStatus(false);
    server_->Shutdown(std::chrono::system_clock::now() + grace);
    server_->Wait();
  }
  http_.stop();
  std::error_code ec;
  fs::remove(opts_.data_dir + "/" + component_ + ".endpoints.json", ec);
  if (!internal_dir_.empty()) fs::remove_all(internal_dir_, ec);
}

}  // namespace morpheus
