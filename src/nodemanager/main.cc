// morpheus-nm: the node agent on every machine. validateNm checks the
// options, runNm wires the components and serves, main() reports how it
// ended (common/daemon.h: the pattern and the exit codes).
#include <spdlog/spdlog.h>

#include <unistd.h>

#include <iostream>

#include "common/address_list.h"
#include "common/daemon.h"
#include "common/logging.h"
#include "common/validate.h"
#include "morpheus/v1/container_manager.grpc.pb.h"
#include "nodemanager/harvest_guard.h"
#include "nodemanager/log_retention.h"
#include "nodemanager/nm_metrics.h"
#include "nodemanager/node_agent.h"
#include "nodemanager/node_attributes_detect.h"

using namespace morpheus;

namespace {

constexpr const char* kProgram = "morpheus-nm";

// The options as validateNm accepted them, with what it read and built.
struct NmConfig {
  nm::NmOptions options;       // TLS loaded, node attributes detected, nm.local-dir defaulted
  nm::HarvestOptions harvest;  // nm.harvest.*; checked by validateHarvestOptions
  std::string rm_token;        // this node's credential towards the RM ("" = none)
  nm::RunAsPolicy run_as;
  std::string delegated_cgroup;  // nm.cgroup-parent: own: this process's cgroup ("" = not)
};

// The command line and config file into *opts and *harvest
// (parseDaemonCommandLine's return value).
int parseNmCommandLine(int argc, char** argv, nm::NmOptions* opts, nm::HarvestOptions* harvest) {
  ConfigSchema schema(kProgram);
  nm::declareNmOptions(schema, opts);
  nm::declareHarvestOptions(schema, harvest);
  std::vector<FlagAlias> extra = {
      {"--rm", "nm.rm-address", "RM gRPC address HOST:PORT (or a comma-separated list of HA RMs)"},
      {"--resources", "nm.resources", "Offered resources, memory=MIB,vcores=N"},
      {"--node-id", "nm.node-id", "Stable node id"},
  };
  return parseDaemonCommandLine(argc, argv, kProgram, schema, extra,
                                [](MetricsRegistry& m) { nm::declareNmMetrics(m); });
}

// Loads TLS, sets up logging, then checks every option and reads the token
// file; INVALID_ARGUMENT (or the file's error) naming the option. Starts no
// container runtime and creates no data dir.
Result<NmConfig> validateNm(const nm::NmOptions& parsed, const nm::HarvestOptions& harvest) {
  NmConfig config;
  config.options = parsed;
  config.harvest = harvest;
  nm::NmOptions& opts = config.options;
  MORPHEUS_RETURN_IF_ERROR(loadDaemonTls(&opts.daemon));
  MORPHEUS_RETURN_IF_ERROR(setupLogging("nm", daemonLogOptions(opts.daemon)));
  if (opts.daemon.tls.enabled() && opts.daemon.tls.client_certs == TlsClientCerts::kRequire) {
    spdlog::warn(
        "tls.client-certs: require: application masters hold no client certificate, so they "
        "cannot start containers on this node; set tls.client-certs: request (the default) for "
        "applications to run");
  }
  if (opts.resources.memoryMib() <= 0 || opts.resources.vcores() <= 0) {
    return invalidArgument("nm.resources", "memory and vcores must be > 0");
  }
  MORPHEUS_RETURN_IF_ERROR(nm::validateHarvestOptions(config.harvest));
  // Detected ISA, cores, memory, kernel, disks, network, GPUs under nm.attributes.
  opts.attributes = nm::mergeAttributes(
      nm::detectNodeAttributes(nm::DetectRoots{}, nm::hostUname()), opts.attributes);
  if (!opts.node_id.empty()) {
    MORPHEUS_RETURN_IF_ERROR(validateNodeId(opts.node_id, "nm.node-id"));
  }
  // This node's credential towards the RM.
  if (!opts.token_file.empty()) {
    MORPHEUS_RETURN_IF_ERROR(
        checkSecretFile(opts.token_file, "nm.token-file", tokenFileCheck(opts.daemon)));
    MORPHEUS_ASSIGN_OR_RETURN(config.rm_token, nm::readNodeToken(opts.token_file));
  } else if (!opts.auth_disabled) {
    return invalidArgument("nm.token-file",
                           "required (or set nm.auth-disabled: true for tests and single-user "
                           "development)");
  }
  if (opts.auth_disabled && config.rm_token.empty()) {
    spdlog::warn(
        "nm.auth-disabled: true: registering with the RM without credentials; for tests "
        "and single-user development only");
  }
  if (auto rms = splitAddressList(opts.rm_address, "nm.rm-address"); !rms.isOk()) {
    return rms.status();
  }
  if (opts.local_dir.empty()) opts.local_dir = opts.daemon.data_dir + "/local";
  MORPHEUS_ASSIGN_OR_RETURN(config.run_as, nm::RunAsPolicy::make(opts.run_as, ::geteuid()));
  if (opts.cgroup_parent == "own" && opts.memory_enforcement != "monitor") {
    MORPHEUS_ASSIGN_OR_RETURN(config.delegated_cgroup, nm::readOwnCgroupPath());
  }
  return config;
}

// Prepares the data dir, starts the container runtime (re-attaching to the
// containers of an earlier NM), the server and the node agent, serves until
// SIGTERM/SIGINT and stops; containers keep running. OK after a clean stop.
Status runNm(NmConfig config) {
  nm::NmOptions& opts = config.options;
  MORPHEUS_RETURN_IF_ERROR(prepareDataDir(opts.daemon.data_dir));
  MetricsRegistry metrics;
  nm::ContainerRuntime runtime(opts.local_dir, opts.monitor_interval, opts.kill_grace, metrics);
  runtime.setRunAs(config.run_as);
  runtime.setMemoryEnforcement(opts.memory_enforcement, opts.cgroup_root);
  if (opts.cgroup_parent == "own" && opts.memory_enforcement != "monitor") {
    runtime.setDelegatedCgroup(config.delegated_cgroup);
  }
  MORPHEUS_RETURN_IF_ERROR(runtime.init());
  nm::TokenKey token_key;
  RealClock clock;
  DaemonServer server("nm", opts.daemon, metrics);
  nm::ContainerServiceImpl container_manager(runtime, token_key, clock, opts.expired_token_grace);
  // An AM gets the CA bundle only, never this node's certificate or key
  // (common/tls.h); it reaches NMs with container tokens.
  container_manager.setAmCaBundle(opts.daemon.tls.ca_pem);
  server.addService(&container_manager);
  server.readiness().require("registered");
  MORPHEUS_RETURN_IF_ERROR(server.start());
  std::string cm_address = opts.daemon.grpc_host + ":" + std::to_string(server.grpcPort());
  std::string node_id = opts.node_id.empty() ? cm_address : opts.node_id;
  container_manager.setNodeId(node_id);
  nm::NodeAgent agent(opts, node_id, cm_address,
                      opts.daemon.http_host + ":" + std::to_string(server.httpPort()),
                      std::move(config.rm_token), metrics, runtime, token_key);
  agent.setRegistrationListener(
      [&server](bool registered) { server.readiness().set("registered", registered); });
  // Harvesting a primary tenant's spare resources (its options were checked
  // by validateNm). Built here: the monitor needs the runtime and the node
  // id, which is the gRPC address when nm.node-id is unset.
  auto harvest =
      nm::makeHarvestMonitor(config.harvest, node_id, opts.resources, runtime, metrics, clock);
  if (!harvest.isOk()) return harvest.status().withContext("config error");
  std::unique_ptr<nm::HarvestMonitor> harvester = std::move(harvest).value();
  if (harvester) {
    agent.setHeartbeatExtension(
        [&harvester](v1::NodeHeartbeatRequest* req) { harvester->fillHeartbeat(req); });
  }
  runtime.start();
  // Logs of finished containers older than nm.log-retention go (at once, then periodically).
  nm::LogRetention log_retention(runtime, opts.log_retention, clock);
  log_retention.start();
  if (harvester) harvester->start();
  agent.start();
  notifyReady("node " + node_id + " serving gRPC on port " + std::to_string(server.grpcPort()) +
              ", HTTP on port " + std::to_string(server.httpPort()));
  int sig = waitForTerminationSignal();
  notifyStopping();
  spdlog::info("morpheus-nm stopping on signal {}", sig);
  agent.stop();
  if (harvester) harvester->stop();
  log_retention.stop();
  // Containers keep running: their records in nm.local-dir let the next NM
  // process re-attach to them (ContainerRuntime::init).
  runtime.shutdown();
  server.shutdown();
  spdlog::info("morpheus-nm stopped");
  return Status::ok();
}

}  // namespace

int main(int argc, char** argv) {
  blockTerminationSignals();
  nm::NmOptions options;
  nm::HarvestOptions harvest;
  if (int rc = parseNmCommandLine(argc, argv, &options, &harvest); rc >= 0) return rc;
  Result<NmConfig> config = validateNm(options, harvest);
  if (!config.isOk()) return daemonExit(kProgram, DaemonPhase::kValidate, config.status());
  return daemonExit(kProgram, DaemonPhase::kRun, runNm(std::move(config).value()));
}
