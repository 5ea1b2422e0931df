// morpheus-rm: the central resource manager daemon. validateRm checks the
// options, runRm wires the components and serves, main() reports how it
// ended (common/daemon.h: the pattern and the exit codes).
#include <spdlog/spdlog.h>

#include <unistd.h>

#include <atomic>
#include <csignal>
#include <functional>
#include <iostream>
#include <map>
#include <mutex>

#include "common/auth.h"
#include "common/daemon.h"
#include "common/ignore.h"
#include "common/logging.h"
#include "common/mutex.h"
#include "morpheus/v1/application_master.grpc.pb.h"
#include "morpheus/v1/reservation.grpc.pb.h"
#include "rm/core/access.h"
#include "rm/core/dra_monitor.h"
#include "rm/core/reservation_manager.h"
#include "rm/core/rm_core.h"
#include "rm/core/rm_metrics.h"
#include "rm/grpc/admin_service.h"
#include "rm/grpc/am_service.h"
#include "rm/grpc/client_service.h"
#include "rm/grpc/reservation_service.h"
#include "rm/grpc/resource_tracker_service.h"
#include "rm/ha/ha_session.h"
#include "rm/ha/standby_front.h"
#include "rm/http/cluster_rest.h"
#include "rm/http/rest.h"
#include "rm/http/web_ui.h"
#include "rm/runtime/config_reload.h"
#include "rm/runtime/queue_policies.h"
#include "rm/runtime/resource_collector.h"
#include "rm/runtime/telemetry.h"
#include "store/state/state_store.h"

using namespace morpheus;

namespace {

// HA options from the config. The identity other RMs read for
// the active one: its advertised client addresses (the standby front's ports,
// which the real servers take over) and this process.
rm::HaOptions haOptions(const rm::RmOptions& opts, rm::StandbyFront& standby) {
  rm::HaOptions ha;
  ha.endpoints = opts.state_store_location;
  ha.election.key = opts.ha_leader_key;
  ha.election.lease_ttl = opts.ha_lease_ttl;
  ha.max_txn_ops = static_cast<size_t>(opts.etcd_max_txn_ops);
  ha.election.identity =
      rm::encodeLeaderRecord({rm::advertisedHost(opts.ha_advertise_host, opts.daemon.grpc_host) +
                                  ":" + std::to_string(standby.grpcPort()),
                              rm::advertisedHost(opts.ha_advertise_host, opts.daemon.http_host) +
                                  ":" + std::to_string(standby.httpPort()),
                              ::getpid()});
  ha.on_leader_change = [&standby](const std::string& leader) { standby.setLeader(leader); };
  return ha;
}

constexpr const char* kProgram = "morpheus-rm";

// The options as validateRm accepted them, with what it built from them:
// everything that can refuse a config, made before anything starts.
struct RmConfig {
  rm::RmOptions options;      // TLS loaded (options.daemon.tls)
  rm::RmOptions configured;   // as parsed: what a config reload compares with
  DaemonConfigSource source;  // read again by a config reload
  std::unique_ptr<Authenticator> authenticator;
  rm::QueueAcls acls;
  std::string inference_token;
  std::unique_ptr<planner::Planner> planner;
  rm::ReservationManagerOptions reservations;
  rm::AppManagerOptions apps;
  rm::RuntimeOptions runtime;
  rm::DraOptions dra;
  std::unique_ptr<reprovision::ReprovisionPolicy> dra_policy;
};

// The command line and config file into *opts (parseDaemonCommandLine's
// return value).
int parseRmCommandLine(int argc, char** argv, rm::RmOptions* opts, DaemonConfigSource* source) {
  ConfigSchema schema(kProgram);
  rm::declareRmOptions(schema, opts);
  auto declare_metrics = [](MetricsRegistry& m) {
    rm::declareRmMetrics(m);
    rm::TelemetryMetrics telemetry(m);
    rm::HaMetrics ha(m);
  };
  return parseDaemonCommandLine(argc, argv, kProgram, schema, {}, declare_metrics, source);
}

// Loads TLS, sets up logging, then checks every option and reads the token
// files; INVALID_ARGUMENT (or the file's error) naming the option. Opens no
// state and creates no data dir.
Result<RmConfig> validateRm(const rm::RmOptions& parsed, const DaemonConfigSource& source) {
  RmConfig config;
  config.configured = parsed;  // before TLS is loaded and the HA ports replace the configured ones
  config.source = source;
  config.options = parsed;
  rm::RmOptions& opts = config.options;
  MORPHEUS_RETURN_IF_ERROR(loadDaemonTls(&opts.daemon));
  MORPHEUS_RETURN_IF_ERROR(setupLogging("rm", daemonLogOptions(opts.daemon)));
  if (opts.daemon.tls.enabled() && opts.daemon.tls.client_certs == TlsClientCerts::kRequire) {
    spdlog::warn(
        "tls.client-certs: require: application masters hold no client certificate (NMs give "
        "them the CA bundle only), so no AM can reach this RM; set tls.client-certs: request "
        "(the default) for applications to run");
  }
  // Caller identity and queue ACLs of the client surfaces (docs/operator/security.md).
  MORPHEUS_ASSIGN_OR_RETURN(
      config.authenticator,
      rm::loadRmAuthenticator(opts.token_file, opts.auth_disabled, tokenFileCheck(opts.daemon)));
  MORPHEUS_ASSIGN_OR_RETURN(
      config.acls, rm::QueueAcls::parse(opts.queue_acls_submit, opts.queue_acls_administer));
  MORPHEUS_ASSIGN_OR_RETURN(
      config.inference_token,
      rm::readBearerToken(opts.inference_token_file, "rm.inference-token-file",
                          tokenFileCheck(opts.daemon)));
  opts.planner.agent_options.end_points = static_cast<int>(opts.planner_end_points);
  opts.planner.agent_options.tie_break = planner::parseTieBreak(opts.planner_tie_break).value();
  MORPHEUS_ASSIGN_OR_RETURN(config.planner, planner::Planner::create(opts.planner, Resource()));
  rm::ReservationManagerOptions& rmo = config.reservations;
  rmo.reservable_queues = {opts.reservable_queues.begin(), opts.reservable_queues.end()};
  rmo.admins = {opts.admins.begin(), opts.admins.end()};
  rmo.limits.max_name_length = opts.max_name_length;
  rmo.limits.max_stages = opts.max_stages;
  rmo.limits.max_containers_per_stage = opts.max_containers_per_stage;
  rmo.limits.max_containers_per_request = opts.max_containers_per_request;
  rmo.limits.max_reservations_per_user = opts.max_reservations_per_user;
  rmo.limits.max_planning_work = opts.max_planning_work;
  rmo.limits.max_planning_per_user = opts.max_planning_per_user;
  rmo.limits.max_planning_total = opts.max_planning_total;
  rmo.limits.max_unused_ids_per_user = opts.max_unused_reservation_ids;
  rm::AppManagerOptions& amo = config.apps;
  amo.max_am_attempts = static_cast<int>(opts.max_am_attempts);
  amo.max_pending_apps_per_user = opts.max_pending_apps_per_user;
  amo.max_apps_per_user = opts.max_apps_per_user;
  amo.max_launch_context_bytes = opts.max_launch_context_bytes;
  amo.max_name_length = opts.max_name_length;
  // Leaves accept apps; a path that prefixes another is a parent (weight only).
  amo.queues = rm::leafQueues(opts.queues);
  amo.default_queue = amo.queues.count("root.default") ? "root.default" : *amo.queues.begin();
  // Queue and user limits over every ad-hoc path (parents, leaves, root).
  MORPHEUS_ASSIGN_OR_RETURN(
      amo.limits,
      rm::parseQueueLimits(opts.queue_max_running_apps, opts.queue_max_resources,
                           opts.user_max_running_apps, rm::adhocQueuePaths(opts.queues)));
  amo.history_max_apps = opts.app_history_max_apps;
  amo.history_max_age = opts.app_history_max_age;
  rm::RuntimeOptions& rto = config.runtime;
  rto.telemetry_step = opts.planner.step;
  rto.preemption_grace = opts.preemption_grace;
  rto.preemption_interval = opts.preemption_interval;
  rto.tls = opts.daemon.tls;
  rto.launch.max_in_flight = static_cast<int>(opts.am_launch_max_in_flight);
  rto.launch.per_node_in_flight = static_cast<int>(opts.am_launch_per_node);
  rto.launch.timeout = opts.am_launch_timeout;
  rto.launch.max_channels = static_cast<size_t>(opts.am_launch_max_channels);
  rto.harvest = opts.harvest;
  rto.queue_max_resources = amo.limits.max_resources;
  MORPHEUS_RETURN_IF_ERROR(rm::validateHarvestRmOptions(rto.harvest));
  MORPHEUS_ASSIGN_OR_RETURN(rto.queue_weights, rm::parseQueueWeights(opts.queues));
  MORPHEUS_RETURN_IF_ERROR(
      rm::resolveQueuePolicies(opts.queue_policies, amo.queues, opts.carbyne, &rto, opts.phoenix));
  // Dynamic reprovisioning (Morpheus §7): the monitoring thread's policy.
  rm::DraOptions& dra = config.dra;
  dra = opts.dra;
  if (dra.interval <= Millis(0)) dra.interval = opts.planner.step;
  dra.jockey.extension = dra.dra.extension;
  MORPHEUS_ASSIGN_OR_RETURN(config.dra_policy,
                            reprovision::makePolicy(dra.policy, dra.dra, dra.jockey, "dra.policy"));
  return config;
}

// Prepares the data dir, opens the state (or campaigns for the leader key
// first, with etcd), starts the components and servers, serves until
// SIGTERM/SIGINT and stops. OK after a clean stop or a stop while standby;
// the error once leadership is lost (daemonExit: exit 3).
Status runRm(RmConfig config) {
  rm::RmOptions& opts = config.options;
  MORPHEUS_RETURN_IF_ERROR(prepareDataDir(opts.daemon.data_dir));
  const bool ran_before = rm::hasSecret(opts.daemon.data_dir);  // then its state DB must exist
  auto secret = rm::loadOrCreateSecret(opts.daemon.data_dir);
  if (!secret.isOk()) return secret.status();
  RealClock clock;
  MetricsRegistry metrics;
  rm::HaMetrics ha_metrics(metrics);  // 0 until this RM serves as the active one
  // With etcd the RM is one of an active/standby pair: a standby
  // listens from the start but only answers UNAVAILABLE naming the active RM
  // (rm/ha/standby_front.h) until it wins the leader key.
  std::unique_ptr<rm::HaSession> ha;
  std::unique_ptr<rm::StandbyFront> standby;
  Result<std::unique_ptr<store::StateStore>> store = std::unique_ptr<store::StateStore>();
  if (opts.state_store == "etcd") {
    auto front = rm::StandbyFront::start(opts.daemon, metrics);
    if (!front.isOk()) return front.status();
    standby = std::move(*front);
    opts.daemon.grpc_port = standby->grpcPort();  // the real servers take these over
    opts.daemon.http_port = standby->httpPort();
    // Under systemd (Type=notify) a standby is a started service doing its
    // job; without READY=1 here it would hit TimeoutStartSec while it waits.
    // READY=1 is sent again with the serving status once it is active.
    notifyReady("standby: campaigning for the RM leader key");
    rm::HaOptions ha_opts = haOptions(opts, *standby);
    auto active = rm::HaSession::becomeActive(ha_opts, clock);
    if (!active.isOk()) return active.status().withContext("state store");
    if (!active->has_value()) return Status::ok();  // stopped while standby
    ha = std::move(**active);
    standby->setLeader(ha_opts.election.identity);  // clients wait here while it recovers
    secret = ha->sharedTokenSecret(*secret);
    if (!secret.isOk()) return secret.status().withContext("HA token key");
  } else {
    std::string store_location = opts.state_store_location;
    if (store_location.empty()) store_location = opts.daemon.data_dir + "/rm-state.db";
    store = store::openStateStore(opts.state_store, store_location,
                                  {opts.state_store_init, ran_before});
    if (!store.isOk()) return store.status().withContext("state store");
  }
  store::StateStore& state = ha ? ha->store() : **store;
  // Made before the components so /readyz can name what is not ready yet.
  DaemonServer server("rm", opts.daemon, metrics);
  server.readiness().require("state-store");
  server.readiness().require("plan");
  rm::RmCore core(opts, clock, metrics, *secret);
  core.setStore(&state);  // drained and decommissioned nodes (node_registry.h)
  MORPHEUS_RETURN_IF_ERROR(core.recoverNodeAdmin());
  server.readiness().set("state-store", true);
  rm::ReservationManager reservations(config.reservations, std::move(config.planner), state, clock,
                                      metrics);
  MORPHEUS_RETURN_IF_ERROR(reservations.recover());
  server.readiness().set("plan", true);
  core.setCapacityListener([&reservations](const Resource& live, bool allow_drop) {
    reservations.onCapacity(live, allow_drop);
  });
  const rm::AppManagerOptions& amo = config.apps;
  rm::AppManager apps(
      amo, state, clock, metrics, core.signer(),
      [&reservations](const JobKey& k) { return rm::bindTargets(reservations, k); },
      [&reservations](const ReservationId& r) { return rm::bindTarget(reservations, r); });
  MORPHEUS_RETURN_IF_ERROR(apps.recover());
  // Telemetry of finished applications to morpheus-inference (Morpheus §4 input).
  rm::TelemetryForwarder telemetry(opts.inference_address, opts.daemon.tls, metrics, 10000,
                                   config.inference_token);
  rm::RmRuntime runtime(
      config.runtime, core, apps, clock, metrics, &telemetry,
      [&reservations](const ReservationId& r) { return reservations.isPeriodic(r); },
      [&reservations](const ReservationId& r, TimePoint t) {
        return reservations.guaranteedAt(r, t);
      });
  core.setNodeLostListener(
      [&runtime](const NodeId& n, const std::string& why) { runtime.onNodeLost(n, why); });
  core.setRunningContainers([&runtime](const NodeId& n) { return runtime.runningOn(n); });
  core.setAdminListener([&runtime](const NodeId& n, rm::NodeAdminState s) {
    runtime.setNodeDrained(n, s != rm::NodeAdminState::kInService);
  });
  runtime.setStore(&state);
  MORPHEUS_RETURN_IF_ERROR(runtime.recoverTelemetry());
  // Dynamic reprovisioning (Morpheus §7): the monitoring thread.
  const rm::DraOptions& dra = config.dra;
  // Cluster, queue and reservation resources, read at each scrape of /metrics.
  rm::ResourceCollector resource_collector(metrics, core, runtime, reservations, clock);
  rm::DraMonitor dra_monitor(
      dra, std::move(config.dra_policy), reservations,
      [&runtime] { return runtime.reservationDemand(); }, clock, metrics);
  const std::unique_ptr<Authenticator>& authenticator = config.authenticator;
  rm::RmAccess access(*authenticator, {opts.admins.begin(), opts.admins.end()}, config.acls);
  rm::ReservationServiceImpl reservation_service(reservations, access);
  // Node heartbeats' and AM allocates' scheduling runs on one strand
  // (strand.h); up to rm.strand.max-queued calls may wait before the RM answers
  // UNAVAILABLE instead of queueing more.
  rm::Strand strand(metrics, static_cast<size_t>(opts.strand_max_queued));
  strand.start();
  rm::ResourceTrackerService tracker(core, *authenticator, &runtime, &strand);
  rm::ReplyQueue replies;  // heartbeat replies written off the strand (reply_queue.h)
  replies.start();
  tracker.setReplyQueue(&replies);
  rm::ClientServiceImpl client(core, access, &apps, &runtime);
  client.setQueueSources(&reservations, &clock);
  rm::ApplicationMasterServiceImpl am_service(runtime, core, &strand);
  server.addService(&tracker);
  server.addService(&client);
  server.addService(&am_service);
  server.addService(&reservation_service);
  // Operator controls (admin.proto): node drain/decommission, config reload.
  rm::ConfigReloader reloader(config.configured, config.source,
                              {authenticator.get(), &access, &runtime, &apps}, metrics);
  rm::AdminServiceImpl admin_service(core, access, &reloader, &runtime);
  server.addService(&admin_service);
  server.setAuthenticator(authenticator.get());
  if (!authenticator->open()) {
    // HTTP connections count per user once authenticated (http.max-connections-per-principal).
    const Authenticator* auth = authenticator.get();
    server.http().setPrincipalOf([auth](const HttpRequest& req) {
      auto who = auth->identify(req);
      return who.isOk() ? who->user : std::string();
    });
  }
  rm::registerReservationRest(server.http(), reservation_service, access);
  // The operator's web page and its JSON, at / and /ui/.
  rm::registerWebUi(
      server.http(),
      {&core, &apps, &runtime, &reservations, &access, &clock, amo.queues, opts.planner.lcm,
       opts.planner.step, opts.inference_address, opts.daemon.tls, config.inference_token});
  rm::registerClusterRest(server.http(),
                          {core, apps, runtime, reservations, access, clock, clock.now()});
  standby.reset();  // frees the ports the real servers bind now
  MORPHEUS_RETURN_IF_ERROR(server.start());
  ha_metrics.active.set(1);
  runtime.setAmAddress(!opts.ha_rm_addresses.empty()
                           ? opts.ha_rm_addresses
                           : opts.daemon.grpc_host + ":" + std::to_string(server.grpcPort()));
  std::atomic<bool> leadership_lost{false};
  if (ha) {
    // Step down: stop serving at once (the store is fenced regardless).
    ha->keepLeadership([&leadership_lost] {
      leadership_lost = true;
      ::kill(::getpid(), SIGTERM);
    });
  }
  runtime.start();
  apps.start();  // usage written and finished apps trimmed periodically
  core.start();
  telemetry.start();
  if (dra.enabled) {
    dra_monitor.start();
  } else {
    spdlog::info("dynamic reprovisioning off (dra.enabled: false)");
  }
  if (!opts.inference_address.empty()) {
    spdlog::info("forwarding application telemetry to inference at {}", opts.inference_address);
  }
  // Plan maintenance every plan step: the one-off horizon rolls forward.
  Mutex maintain_mu;
  bool maintain_stopped = false;  // under maintain_mu (a local: not checked)
  std::function<void()> maintain = [&] {
    MutexLock lk(maintain_mu);
    if (maintain_stopped) return;
    reservations.expire();
    clock.scheduleAfter(opts.planner.step, maintain);
  };
  clock.scheduleAfter(opts.planner.step, maintain);
  spdlog::info("morpheus-rm started (epoch {})", core.epoch());
  notifyReady("serving gRPC on port " + std::to_string(server.grpcPort()) + ", HTTP on port " +
              std::to_string(server.httpPort()));
  // SIGHUP: reopen the log file, then reload the config (config_reload.h).
  int sig = waitForTerminationSignal(
      [&reloader] { ignoreError(reloader.reload(), "the reloader logs a refusal"); });
  notifyStopping();
  spdlog::info("morpheus-rm stopping on signal {}", sig);
  {
    MutexLock lk(maintain_mu);
    maintain_stopped = true;
  }
  dra_monitor.stop();
  core.stop();
  core.setNodeLostListener(nullptr);
  core.setRunningContainers(nullptr);
  core.setAdminListener(nullptr);
  runtime.stop();
  apps.stop();  // after the runtime: the last containers' usage is written
  telemetry.stop();
  core.setCapacityListener(nullptr);
  server.shutdown();
  strand.stop();   // after the server: pending heartbeats finish their calls
  replies.stop();  // after the strand: its last replies are written
  if (leadership_lost) {
    return unavailable("leadership lost (restart it to rejoin as standby)");
  }
  if (ha) {
    if (Status st = ha->resign(); !st.isOk()) spdlog::warn("HA resign: {}", st.message());
  }
  spdlog::info("morpheus-rm stopped");
  return Status::ok();
}

}  // namespace

int main(int argc, char** argv) {
  blockTerminationSignals();
  rm::RmOptions options;
  DaemonConfigSource source;
  if (int rc = parseRmCommandLine(argc, argv, &options, &source); rc >= 0) return rc;
  Result<RmConfig> config = validateRm(options, source);
  if (!config.isOk()) return daemonExit(kProgram, DaemonPhase::kValidate, config.status());
  return daemonExit(kProgram, DaemonPhase::kRun, runRm(std::move(config).value()));
}
