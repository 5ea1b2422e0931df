// morpheus-nm: the node agent on every machine. main() only wires.
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

int main(int argc, char** argv) {
  blockTerminationSignals();
  nm::NmOptions opts;
  ConfigSchema schema("morpheus-nm");
  nm::declareNmOptions(schema, &opts);
  nm::HarvestOptions harvest_opts;
  nm::declareHarvestOptions(schema, &harvest_opts);
  std::vector<FlagAlias> extra = {
      {"--rm", "nm.rm-address", "RM gRPC address HOST:PORT (or a comma-separated list of HA RMs)"},
      {"--resources", "nm.resources", "Offered resources, memory=MIB,vcores=N"},
      {"--node-id", "nm.node-id", "Stable node id"},
  };
  if (int rc = parseDaemonCommandLine(argc, argv, "morpheus-nm", schema, extra,
                                      [](MetricsRegistry& m) { nm::declareNmMetrics(m); });
      rc >= 0)
    return rc;
  if (Status st = loadDaemonTls(&opts.daemon); !st.isOk()) {
    std::cerr << "morpheus-nm: config error: " << st.message() << "\n";
    return 2;
  }
  if (Status st = setupLogging("nm", daemonLogOptions(opts.daemon)); !st.isOk()) {
    std::cerr << "morpheus-nm: " << st.message() << "\n";
    return 2;
  }
  if (opts.resources.memoryMib() <= 0 || opts.resources.vcores() <= 0) {
    std::cerr << "morpheus-nm: config error: nm.resources: memory and vcores must be > 0\n";
    return 2;
  }
  // Detected ISA, cores, memory, kernel, disks, network, GPUs under nm.attributes.
  opts.attributes = nm::mergeAttributes(
      nm::detectNodeAttributes(nm::DetectRoots{}, nm::hostUname()), opts.attributes);
  if (!opts.node_id.empty()) {
    if (Status st = validateNodeId(opts.node_id, "nm.node-id"); !st.isOk()) {
      std::cerr << "morpheus-nm: config error: " << st.message() << "\n";
      return 2;
    }
  }
  // This node's credential towards the RM.
  std::string rm_token;
  if (!opts.token_file.empty()) {
    if (Status st = checkSecretFile(opts.token_file, "nm.token-file", tokenFileCheck(opts.daemon));
        !st.isOk()) {
      std::cerr << "morpheus-nm: config error: " << st.message() << "\n";
      return 2;
    }
    auto t = nm::readNodeToken(opts.token_file);
    if (!t.isOk()) {
      std::cerr << "morpheus-nm: config error: " << t.status().message() << "\n";
      return 2;
    }
    rm_token = std::move(t).value();
  } else if (!opts.auth_disabled) {
    std::cerr << "morpheus-nm: config error: nm.token-file: required (or set nm.auth-disabled: "
                 "true for tests and single-user development)\n";
    return 2;
  }
  if (opts.auth_disabled && rm_token.empty()) {
    spdlog::warn(
        "nm.auth-disabled: true: registering with the RM without credentials; for tests "
        "and single-user development only");
  }
  if (auto rms = splitAddressList(opts.rm_address, "nm.rm-address"); !rms.isOk()) {
    std::cerr << "morpheus-nm: config error: " << rms.status().message() << "\n";
    return 2;
  }
  if (Status st = prepareDataDir(opts.daemon.data_dir); !st.isOk()) {
    std::cerr << "morpheus-nm: " << st.message() << "\n";
    return 2;
  }
  if (opts.local_dir.empty()) opts.local_dir = opts.daemon.data_dir + "/local";
  auto run_as = nm::RunAsPolicy::make(opts.run_as, ::geteuid());
  if (!run_as.isOk()) {
    std::cerr << "morpheus-nm: config error: " << run_as.status().message() << "\n";
    return 2;
  }
  MetricsRegistry metrics;
  nm::ContainerRuntime runtime(opts.local_dir, opts.monitor_interval, opts.kill_grace, metrics);
  runtime.setRunAs(*run_as);
  runtime.setMemoryEnforcement(opts.memory_enforcement, opts.cgroup_root);
  if (opts.cgroup_parent == "own" && opts.memory_enforcement != "monitor") {
    auto own = nm::readOwnCgroupPath();
    if (!own.isOk()) {
      std::cerr << "morpheus-nm: config error: " << own.status().message() << "\n";
      return 2;
    }
    runtime.setDelegatedCgroup(*own);
  }
  if (Status st = runtime.init(); !st.isOk()) {
    std::cerr << "morpheus-nm: " << st.message() << "\n";
    return 2;
  }
  nm::TokenKey token_key;
  RealClock clock;
  DaemonServer server("nm", opts.daemon, metrics);
  nm::ContainerServiceImpl container_manager(runtime, token_key, clock, opts.expired_token_grace);
  // An AM gets the CA bundle only, never this node's certificate or key
  // (common/tls.h); it reaches NMs with container tokens.
  container_manager.setAmCaBundle(opts.daemon.tls.ca_pem);
  if (opts.daemon.tls.enabled() && opts.daemon.tls.client_certs == TlsClientCerts::kRequire) {
    spdlog::warn(
        "tls.client-certs: require: application masters hold no client certificate, so they "
        "cannot start containers on this node; set tls.client-certs: request (the default) for "
        "applications to run");
  }
  server.addService(&container_manager);
  server.readiness().require("registered");
  if (Status st = server.start(); !st.isOk()) {
    std::cerr << "morpheus-nm: " << st.message() << "\n";
    return 2;
  }
  std::string cm_address = opts.daemon.grpc_host + ":" + std::to_string(server.grpcPort());
  std::string node_id = opts.node_id.empty() ? cm_address : opts.node_id;
  container_manager.setNodeId(node_id);
  nm::NodeAgent agent(opts, node_id, cm_address,
                      opts.daemon.http_host + ":" + std::to_string(server.httpPort()),
                      std::move(rm_token), metrics, runtime, token_key);
  agent.setRegistrationListener(
      [&server](bool registered) { server.readiness().set("registered", registered); });
  // Harvesting a primary tenant's spare resources.
  auto harvest =
      nm::makeHarvestMonitor(harvest_opts, node_id, opts.resources, runtime, metrics, clock);
  if (!harvest.isOk()) {
    std::cerr << "morpheus-nm: config error: " << harvest.status().message() << "\n";
    return 2;
  }
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
  return 0;
}
