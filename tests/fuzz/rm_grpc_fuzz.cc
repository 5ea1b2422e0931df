// Fuzz target: the RM's gRPC handlers (ResourceTracker, ClientService,
// ReservationService, ApplicationMaster) called in process on decoded
// messages, over a real RmCore, ReservationManager (LowCost planner),
// AppManager and RmRuntime on an in-memory SQLite state store and a
// VirtualClock, wired as src/rm/main.cc wires them (tests/support/inproc_rm.h).
// Fresh state per input, so every crash reproduces from its input alone.
//
// Input: a sequence of calls (at most kMaxCalls), each
//   [selector: 1 byte][length: 2 bytes little-endian][payload: length bytes]
// The selector (mod the number of calls) picks the RPC; the payload is the
// serialized request (an undecodable payload is skipped, as gRPC would refuse
// it). A short last record takes what is left. Two harness conveniences let
// the fuzzer get past checks it cannot forge:
//   - an am_token of "@am" is replaced by the valid AM token of the named
//     application's current attempt once it has one (attempt >= 1: the RM
//     never issues a token for attempt 0), so the fuzzer plays a genuine AM;
//   - selector kTick advances the virtual clock by the payload's first 4
//     bytes (ms, little-endian; at most one day per tick) and runs the
//     liveness check and plan expiry. The cap keeps an input's virtual time
//     to weeks: a finished app's telemetry skyline has one 60 s step per
//     minute it ran, so years of virtual time make one input run for minutes.
// tests/fuzz/make_rm_grpc_seeds.sh writes seeds in this format from text protos.
// MORPHEUS_FUZZ_TRACE=1 prints each call and its status (to check a seed does
// what it means to: build-fuzz/bin/fuzz_rm_grpc FILE).
//
// Properties (docs/design/conventions.md "Errors"): a rejected
// mutating request (register/unregister node, submit/kill application,
// submit/update/delete reservation) leaves the listed state unchanged.
#include <google/protobuf/stubs/logging.h>
#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <string>

#include "common/clock.h"
#include "fuzz_util.h"
#include "inproc_rm.h"
#include "rm/core/rm_options.h"

using namespace morpheus;

namespace {

constexpr size_t kMaxCalls = 48;
constexpr char kValidAmToken[] = "@am";
constexpr Millis kMaxTick{86400000};
const TimePoint kStart = fromEpochMs(1800000000000);

// One RM, wired as main.cc does (tests/support/inproc_rm.h: no network, no
// threads; the runtime's launcher and the core's liveness timer are not
// started).
class Rm {
 public:
  Rm() : clock_(kStart) {
    testing::InProcRmOptions o;
    ConfigSchema schema("morpheus-rm");
    rm::declareRmOptions(schema, &o.rm);  // the daemon's defaults
    o.rm.admins = {"admin"};
    o.token_secret = "fuzz-token-secret";
    rm::ReservationManagerOptions& rmo = o.reservations;
    rmo.reservable_queues = {o.rm.reservable_queues.begin(), o.rm.reservable_queues.end()};
    rmo.admins = {"admin"};
    // The daemon's request limits, but fewer containers per request: an
    // infeasible request of ~50k containers takes ~30 s to explain under
    // ASan, past the per-input timeout (planning cost, not a crash).
    rmo.limits.max_name_length = o.rm.max_name_length;
    rmo.limits.max_stages = o.rm.max_stages;
    rmo.limits.max_containers_per_stage = 5000;
    rmo.limits.max_containers_per_request = 5000;
    rmo.limits.max_reservations_per_user = o.rm.max_reservations_per_user;
    rmo.limits.max_planning_work = o.rm.max_planning_work;
    rmo.limits.max_planning_per_user = o.rm.max_planning_per_user;
    rmo.limits.max_planning_total = o.rm.max_planning_total;
    rmo.limits.max_unused_ids_per_user = o.rm.max_unused_reservation_ids;
    o.apps.queues = {"root.default", "root.a"};
    o.runtime.telemetry_step = o.rm.planner.step;
    // No token file: a ServerContext made outside a server carries no
    // metadata, so callers cannot present tokens; authentication is disabled
    // (every caller is the admin "anonymous") and the handlers' validation is
    // what is fuzzed.
    o.admins = {"admin"};
    auto rm = testing::InProcRm::start(clock_, std::move(o));
    FUZZ_CHECK(rm.isOk(), "wiring the RM failed: " + rm.status().toString());
    rm_ = std::move(rm).value();
  }

  // Runs one call; unknown payloads are skipped.
  void call(uint8_t selector, std::string_view payload);

 private:
  template <typename Req, typename Resp>
  using Handler = std::function<grpc::Status(grpc::ServerContext*, const Req*, Resp*)>;

  // Decodes `payload` as Req and calls `handler`; when `snapshot` is given and
  // the call fails, the snapshot after must equal the one before.
  template <typename Req, typename Resp>
  void invoke(std::string_view payload, const Handler<Req, Resp>& handler,
              const std::function<std::string()>& snapshot = nullptr,
              const std::function<void(Req*)>& prepare = nullptr) {
    Req req;
    if (!req.ParseFromArray(payload.data(), static_cast<int>(payload.size()))) return;
    if (prepare) prepare(&req);
    const std::string before = snapshot ? snapshot() : std::string();
    grpc::ServerContext ctx;
    Resp resp;
    grpc::Status st = handler(&ctx, &req, &resp);
    if (trace_) {
      std::fprintf(stderr, "%s -> %d %s\n", std::string(Req::descriptor()->name()).c_str(),
                   static_cast<int>(st.error_code()), st.error_message().c_str());
    }
    if (snapshot && !st.ok()) {
      FUZZ_CHECK(snapshot() == before,
                 std::string(Req::descriptor()->name()) + " rejected (" + st.error_message() +
                     ") but changed state\n  request: " + req.ShortDebugString());
    }
  }

  std::string reservationState();
  std::string appState();
  std::string nodeState();
  // Replaces the "@am" placeholder by the app's valid AM token.
  void fillAmToken(const std::string& app, std::string* token) const;
  void tick(std::string_view payload);

  const bool trace_ = std::getenv("MORPHEUS_FUZZ_TRACE") != nullptr;
  VirtualClock clock_;
  std::unique_ptr<testing::InProcRm> rm_;
};

std::string Rm::reservationState() {
  v1::ListReservationsRequest req;
  req.set_include_allocations(true);
  v1::ListReservationsResponse resp;
  grpc::ServerContext ctx;
  grpc::Status st = rm_->reservationService().ListReservations(&ctx, &req, &resp);
  FUZZ_CHECK(st.ok(), "listing every reservation failed: " + st.error_message());
  return resp.SerializeAsString();
}

std::string Rm::appState() {
  v1::ListApplicationsRequest req;
  v1::ListApplicationsResponse resp;
  grpc::ServerContext ctx;
  grpc::Status st = rm_->client().ListApplications(&ctx, &req, &resp);
  FUZZ_CHECK(st.ok(), "listing every application failed: " + st.error_message());
  return resp.SerializeAsString();
}

std::string Rm::nodeState() {
  v1::ListNodesRequest req;
  req.set_include_lost(true);
  v1::ListNodesResponse resp;
  grpc::ServerContext ctx;
  grpc::Status st = rm_->client().ListNodes(&ctx, &req, &resp);
  FUZZ_CHECK(st.ok(), "listing every node failed: " + st.error_message());
  return resp.SerializeAsString() + reservationState();
}

void Rm::fillAmToken(const std::string& app, std::string* token) const {
  if (*token != kValidAmToken) return;
  auto rec = rm_->apps().get(AppId(app));
  const bool issued = rec.isOk() && rec->attempt >= 1;
  *token = issued ? rm_->apps().amToken(AppId(app), rec->attempt) : std::string();
}

void Rm::tick(std::string_view payload) {
  uint32_t ms = 0;
  for (size_t i = 0; i < 4 && i < payload.size(); i++) {
    ms |= static_cast<uint32_t>(static_cast<uint8_t>(payload[i])) << (8 * i);
  }
  clock_.advance(std::min(Millis(ms), kMaxTick));
  rm_->core().checkLiveness();
  rm_->reservations().expire();
}

// The RPCs in selector order; kTick is the clock pseudo-call.
enum Call : uint8_t {
  kRegisterNode,
  kNodeHeartbeat,
  kUnregisterNode,
  kSubmitApplication,
  kGetApplication,
  kListApplications,
  kKillApplication,
  kListAppTelemetry,
  kListNodes,
  kGetClusterMetrics,
  kNewReservation,
  kSubmitReservation,
  kUpdateReservation,
  kDeleteReservation,
  kListReservations,
  kGetPlan,
  kRegisterApplicationMaster,
  kAllocate,
  kFinishApplicationMaster,
  kTick,
  kNumCalls
};

void Rm::call(uint8_t selector, std::string_view p) {
  using std::placeholders::_1, std::placeholders::_2, std::placeholders::_3;
  auto* t = &rm_->tracker();
  auto* c = &rm_->client();
  auto* r = &rm_->reservationService();
  auto* a = &rm_->amService();
  auto nodes = [this] { return nodeState(); };
  auto apps = [this] { return appState(); };
  auto reservations = [this] { return reservationState(); };
  switch (static_cast<Call>(selector % kNumCalls)) {
    case kRegisterNode:
      return invoke<v1::RegisterNodeRequest, v1::RegisterNodeResponse>(
          p, std::bind(&rm::ResourceTrackerService::RegisterNode, t, _1, _2, _3), nodes);
    case kNodeHeartbeat:
      return invoke<v1::NodeHeartbeatRequest, v1::NodeHeartbeatResponse>(
          p, [t](grpc::ServerContext* ctx, const v1::NodeHeartbeatRequest* q,
                 v1::NodeHeartbeatResponse* r) { return t->heartbeat(*ctx, *q, r); });
    case kUnregisterNode:
      return invoke<v1::UnregisterNodeRequest, v1::UnregisterNodeResponse>(
          p, std::bind(&rm::ResourceTrackerService::UnregisterNode, t, _1, _2, _3), nodes);
    case kSubmitApplication:
      return invoke<v1::SubmitApplicationRequest, v1::SubmitApplicationResponse>(
          p, std::bind(&rm::ClientServiceImpl::SubmitApplication, c, _1, _2, _3), apps);
    case kGetApplication:
      return invoke<v1::GetApplicationRequest, v1::ApplicationReport>(
          p, std::bind(&rm::ClientServiceImpl::GetApplication, c, _1, _2, _3));
    case kListApplications:
      return invoke<v1::ListApplicationsRequest, v1::ListApplicationsResponse>(
          p, std::bind(&rm::ClientServiceImpl::ListApplications, c, _1, _2, _3));
    case kKillApplication:
      return invoke<v1::KillApplicationRequest, v1::KillApplicationResponse>(
          p, std::bind(&rm::ClientServiceImpl::KillApplication, c, _1, _2, _3), apps);
    case kListAppTelemetry:
      return invoke<v1::ListAppTelemetryRequest, v1::ListAppTelemetryResponse>(
          p, std::bind(&rm::ClientServiceImpl::ListAppTelemetry, c, _1, _2, _3));
    case kListNodes:
      return invoke<v1::ListNodesRequest, v1::ListNodesResponse>(
          p, std::bind(&rm::ClientServiceImpl::ListNodes, c, _1, _2, _3));
    case kGetClusterMetrics:
      return invoke<v1::GetClusterMetricsRequest, v1::ClusterMetrics>(
          p, std::bind(&rm::ClientServiceImpl::GetClusterMetrics, c, _1, _2, _3));
    case kNewReservation:
      return invoke<v1::NewReservationRequest, v1::NewReservationResponse>(
          p, std::bind(&rm::ReservationServiceImpl::NewReservation, r, _1, _2, _3));
    case kSubmitReservation:
      return invoke<v1::SubmitReservationRequest, v1::SubmitReservationResponse>(
          p, std::bind(&rm::ReservationServiceImpl::SubmitReservation, r, _1, _2, _3),
          reservations);
    case kUpdateReservation:
      return invoke<v1::UpdateReservationRequest, v1::UpdateReservationResponse>(
          p, std::bind(&rm::ReservationServiceImpl::UpdateReservation, r, _1, _2, _3),
          reservations);
    case kDeleteReservation:
      return invoke<v1::DeleteReservationRequest, v1::DeleteReservationResponse>(
          p, std::bind(&rm::ReservationServiceImpl::DeleteReservation, r, _1, _2, _3),
          reservations);
    case kListReservations:
      return invoke<v1::ListReservationsRequest, v1::ListReservationsResponse>(
          p, std::bind(&rm::ReservationServiceImpl::ListReservations, r, _1, _2, _3));
    case kGetPlan:
      return invoke<v1::GetPlanRequest, v1::GetPlanResponse>(
          p, std::bind(&rm::ReservationServiceImpl::GetPlan, r, _1, _2, _3));
    case kRegisterApplicationMaster:
      return invoke<v1::RegisterApplicationMasterRequest, v1::RegisterApplicationMasterResponse>(
          p, std::bind(&rm::ApplicationMasterServiceImpl::RegisterApplicationMaster, a, _1, _2, _3),
          nullptr, [this](auto* q) { fillAmToken(q->application_id(), q->mutable_am_token()); });
    case kAllocate:
      return invoke<v1::AllocateRequest, v1::AllocateResponse>(
          p,
          [this](grpc::ServerContext*, const v1::AllocateRequest* q, v1::AllocateResponse* r) {
            return toGrpc(rm_->allocate(*q, r));  // what the callback handler runs
          },
          nullptr, [this](auto* q) { fillAmToken(q->application_id(), q->mutable_am_token()); });
    case kFinishApplicationMaster:
      return invoke<v1::FinishApplicationMasterRequest, v1::FinishApplicationMasterResponse>(
          p, std::bind(&rm::ApplicationMasterServiceImpl::FinishApplicationMaster, a, _1, _2, _3),
          nullptr, [this](auto* q) { fillAmToken(q->application_id(), q->mutable_am_token()); });
    case kTick:
    case kNumCalls:
      return tick(p);
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  fuzz::quietLogs();
  // Undecodable payloads are expected; protobuf would log each one.
  google::protobuf::SetLogHandler(nullptr);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Rm rm;
  size_t pos = 0;
  for (size_t calls = 0; pos < size && calls < kMaxCalls; calls++) {
    const uint8_t selector = data[pos++];
    size_t len = 0;
    if (pos + 2 <= size) {
      len = static_cast<size_t>(data[pos]) | static_cast<size_t>(data[pos + 1]) << 8;
      pos += 2;
    } else {
      pos = size;
    }
    len = std::min(len, size - pos);
    rm.call(selector, fuzz::asText(data + pos, len));
    pos += len;
  }
  return 0;
}
