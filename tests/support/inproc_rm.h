// An in-process RM for unit tests and fuzz targets: the RM's real components
// wired as src/rm/main.cc wires them, without a daemon, a config file or
// (unless asked) a port. Free of gtest, so a fuzz target can use it: errors
// come back as Status.
//
// What it wires, as main.cc does, on the caller's clock (a VirtualClock makes
// every time the RM reports follow from what the test did):
//   - a SQLite state store (a file, or ":memory:");
//   - RmCore;
//   - the planner (RmOptions::planner) under a ReservationManager that the
//     core tells the live capacity;
//   - an AppManager binding apps through the ReservationManager;
//   - an RmRuntime (no telemetry forwarder) that the core tells of lost
//     nodes, keeping telemetry in the store;
//   - the plan, the apps and the telemetry recovered from the store;
//   - an Authenticator loaded from a real token file (written with mode 0600
//     and checked as the daemon checks rm.token-file), or, without one,
//     authentication disabled (every caller is the admin "anonymous");
//   - RmAccess, and the gRPC services: ResourceTracker, ClientService (with
//     its queue sources), ReservationService, ApplicationMaster;
//   - with `strand`: the Strand and ReplyQueue that heartbeats and allocates
//     run on;
//   - with `serve`: a gRPC server with those services, reached through an
//     in-process channel (and, with `listen`, on a loopback port).
// With a ScriptedPlan, the test's lookups stand in for the ReservationManager
// towards the AppManager and the runtime: no ReservationManager (and so no
// ReservationService and no queue sources) is built.
//
// What it does not start: the runtime (no AM is launched: an AM container
// that a heartbeat places stays unlaunched until runtime().start()), the
// core's liveness timer (call core().checkLiveness()), plan maintenance (call
// reservations().expire()), the DRA monitor, the telemetry forwarder, HTTP
// (a test registers the handlers on its own HttpServer over these
// components). Nodes and AMs are played by the caller: through the services,
// or by direct calls with the wire messages (registerNode, nodeHeartbeat,
// registerAm, allocate, finishAm, nodeRegistration, taskAsk).
//
// Thread-safety: start, replaceRuntime and the destructor run on one thread,
// with no call in flight. The components lock for themselves as in the
// daemon, so served RPCs may run while a test calls them directly. With
// `strand`, NodeHeartbeat and Allocate answer before their scheduling ran on
// the strand thread. The destructor stops what runs in main.cc's order:
// server, strand, reply queue, runtime; then it drops the core's listeners.
#pragma once

#include <grpcpp/grpcpp.h>

#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>

#include "common/auth.h"
#include "common/clock.h"
#include "common/metrics.h"
#include "common/status.h"
#include "rm/core/access.h"
#include "rm/core/app_manager.h"
#include "rm/core/reservation_manager.h"
#include "rm/core/rm_core.h"
#include "rm/core/rm_options.h"
#include "rm/grpc/am_service.h"
#include "rm/grpc/client_service.h"
#include "rm/grpc/reservation_service.h"
#include "rm/grpc/resource_tracker_service.h"
#include "rm/runtime/reply_queue.h"
#include "rm/runtime/runtime.h"
#include "rm/runtime/strand.h"
#include "store/state/state_store.h"

namespace morpheus::testing {

// A plan the test scripts instead of a ReservationManager: the AppManager's
// binding lookups and the runtime's view of reservations. Every field is set.
struct ScriptedPlan {
  rm::AppManager::RecurrenceLookup by_key;
  rm::AppManager::ReservationLookup reservation;
  rm::RmRuntime::ReservationKind periodic;
  rm::RmRuntime::Guarantee guaranteed_at;
};

struct InProcRmOptions {
  // RmCore's options; `planner` configures the planner and `strand_max_queued`
  // the strand. RmOptions{} here; declareRmOptions gives the daemon's defaults.
  rm::RmOptions rm;
  std::string token_secret = "in-process-rm-token-secret";  // the RM's master secret
  std::string state_store = ":memory:";                     // SQLite location
  rm::ReservationManagerOptions reservations;
  rm::AppManagerOptions apps;
  rm::RuntimeOptions runtime;
  std::optional<ScriptedPlan> scripted_plan;
  // rm.token-file: `tokens` (lines "TOKEN USER [ROLE] [expires=DATE]") written
  // to `token_file` and loaded as the daemon loads it. No token_file:
  // authentication disabled.
  std::string token_file;
  std::string tokens;
  std::set<std::string> admins;  // rm.admins as RmAccess sees them
  rm::QueueAcls acls;
  bool strand = false;
  bool serve = false;
  std::string listen;  // with `serve`, e.g. "127.0.0.1:0"; "" = in-process channel only
};

class InProcRm {
 public:
  // Wires the RM. Errors name what failed (token file, state store, planner,
  // recovery, server); nothing is left running then. `clock` outlives the RM.
  static Result<std::unique_ptr<InProcRm>> start(Clock& clock, InProcRmOptions opts);
  ~InProcRm();
  InProcRm(const InProcRm&) = delete;
  InProcRm& operator=(const InProcRm&) = delete;

  // A new runtime with `opts` over the same core, apps and store, as a
  // restarted RM builds it (telemetry recovered); the old one is stopped and
  // destroyed first, and the core's node-lost listener follows. Only while
  // nothing is served (the services are rebuilt over the new runtime).
  Status replaceRuntime(rm::RuntimeOptions opts);
  // Another AppManager wired as apps() is, over the same store: what a
  // restarted RM would recover (call recover() on it).
  std::unique_ptr<rm::AppManager> makeAppManager();

  // Node `req` registers, as ResourceTrackerService::RegisterNode does it
  // without the RPC's authorization: parsed by the edge, with the core, then
  // the runtime.
  Status registerNode(const v1::RegisterNodeRequest& req);
  // The runtime's part of a node's heartbeat as ResourceTrackerService runs
  // it once the heartbeat is admitted: parsed by the edge
  // (rm::parseNodeHeartbeat), RmRuntime::onNodeHeartbeat (report, then the
  // node's scheduling), the answer into `resp`. No liveness in the core
  // (call core().nodeHeartbeat for that), no authorization. The parse's
  // INVALID_ARGUMENT, nothing changed then.
  Status nodeHeartbeat(const v1::NodeHeartbeatRequest& req, v1::NodeHeartbeatResponse* resp);
  // The AM of `app`'s attempt `attempt` registers with the token the RM
  // hands it.
  Status registerAm(const AppId& app, int attempt = 1);
  // An AM's Allocate and FinishApplicationMaster as the AM service's
  // handlers run them without the RPC (am_service.h: parsing into the
  // runtime's calls, the reply, container tokens), on the caller's thread.
  Status allocate(const v1::AllocateRequest& req, v1::AllocateResponse* resp);
  Status finishAm(const v1::FinishApplicationMasterRequest& req);

  Clock& clock() { return clock_; }
  MetricsRegistry& metrics() { return metrics_; }
  const InProcRmOptions& options() const { return opts_; }
  store::StateStore& store() { return *store_; }
  rm::RmCore& core() { return *core_; }
  rm::ReservationManager& reservations();  // not with a ScriptedPlan
  rm::AppManager& apps() { return *apps_; }
  rm::RmRuntime& runtime() { return *runtime_; }
  const Authenticator& authenticator() const { return *auth_; }
  const rm::RmAccess& access() const { return *access_; }
  rm::ResourceTrackerService& tracker() { return *tracker_; }
  rm::ClientServiceImpl& client() { return *client_; }
  rm::ReservationServiceImpl& reservationService();  // not with a ScriptedPlan
  rm::ApplicationMasterServiceImpl& amService() { return *am_; }
  rm::Strand* strand() { return strand_.get(); }  // null without `strand`
  // With `serve`: the server's in-process channel, and the port it listens
  // on (0 without `listen`).
  std::shared_ptr<grpc::Channel> channel();
  int port() const { return port_; }

 private:
  InProcRm(Clock& clock, InProcRmOptions opts);
  Status wire();
  void makeRuntime(rm::RuntimeOptions opts);
  void makeServices();

  Clock& clock_;
  InProcRmOptions opts_;
  ScriptedPlan plan_;  // opts_.scripted_plan, or lookups into reservations_
  MetricsRegistry metrics_;
  std::unique_ptr<Authenticator> auth_;
  std::unique_ptr<rm::RmAccess> access_;
  std::unique_ptr<store::StateStore> store_;
  std::unique_ptr<rm::RmCore> core_;
  std::unique_ptr<rm::ReservationManager> reservations_;
  std::unique_ptr<rm::AppManager> apps_;
  std::unique_ptr<rm::RmRuntime> runtime_;
  std::unique_ptr<rm::Strand> strand_;
  std::unique_ptr<rm::ReplyQueue> replies_;
  std::unique_ptr<rm::ResourceTrackerService> tracker_;
  std::unique_ptr<rm::ClientServiceImpl> client_;
  std::unique_ptr<rm::ReservationServiceImpl> reservation_service_;
  std::unique_ptr<rm::ApplicationMasterServiceImpl> am_;
  std::unique_ptr<grpc::Server> server_;
  int port_ = 0;
};

// Node `id` as its NM's RegisterNode describes it: `vcores` vcores and 1 GiB
// per vcore, `attributes`, its ContainerManager at `cm_address` (nothing
// listens at the default) and its web server at `http_address`.
v1::RegisterNodeRequest nodeRegistration(const std::string& id, int vcores,
                                         const std::map<std::string, std::string>& attributes = {},
                                         const std::string& cm_address = "127.0.0.1:1",
                                         const std::string& http_address = "");

// An AM's allocate: `count` task containers of (1024 MiB, 1 vcore) under
// request id "tasks", priority 1 (replacing the app's previous ask).
v1::AllocateRequest taskAsk(const AppId& app, const std::string& am_token, int count);

}  // namespace morpheus::testing
