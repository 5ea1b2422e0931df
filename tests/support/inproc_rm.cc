#include "inproc_rm.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <utility>

#include "common/wire.h"

namespace morpheus::testing {

namespace {

// `text` in file `path`, readable by its owner only from the start (the mode
// loadRmAuthenticator's strict check wants of rm.token-file).
Status writeTokenFile(const std::string& path, const std::string& text) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return invalidArgument("token_file", path + ": " + std::strerror(errno));
  const bool written = ::fchmod(fd, 0600) == 0 &&
                       ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  const int err = errno;
  ::close(fd);
  if (!written) return invalidArgument("token_file", path + ": " + std::strerror(err));
  return Status::ok();
}

}  // namespace

InProcRm::InProcRm(Clock& clock, InProcRmOptions opts) : clock_(clock), opts_(std::move(opts)) {}

Result<std::unique_ptr<InProcRm>> InProcRm::start(Clock& clock, InProcRmOptions opts) {
  std::unique_ptr<InProcRm> rm(new InProcRm(clock, std::move(opts)));
  MORPHEUS_RETURN_IF_ERROR(rm->wire());
  return rm;
}

Status InProcRm::wire() {
  if (opts_.token_file.empty()) {
    auth_ = std::make_unique<Authenticator>(std::map<std::string, Principal>{}, /*open=*/true);
  } else {
    MORPHEUS_RETURN_IF_ERROR(writeTokenFile(opts_.token_file, opts_.tokens));
    MORPHEUS_ASSIGN_OR_RETURN(auth_, rm::loadRmAuthenticator(opts_.token_file, false));
  }
  access_ = std::make_unique<rm::RmAccess>(*auth_, opts_.admins, opts_.acls);
  MORPHEUS_ASSIGN_OR_RETURN(store_, store::openStateStore("sqlite", opts_.state_store));
  core_ = std::make_unique<rm::RmCore>(opts_.rm, clock_, metrics_, opts_.token_secret);
  if (opts_.scripted_plan) {
    plan_ = *opts_.scripted_plan;
  } else {
    MORPHEUS_ASSIGN_OR_RETURN(auto planner, planner::Planner::create(opts_.rm.planner, Resource()));
    reservations_ = std::make_unique<rm::ReservationManager>(opts_.reservations, std::move(planner),
                                                             *store_, clock_, metrics_);
    MORPHEUS_RETURN_IF_ERROR(reservations_->recover());
    core_->setCapacityListener([this](const Resource& live, bool allow_drop) {
      reservations_->onCapacity(live, allow_drop);
    });
    plan_.by_key = [this](const JobKey& k) { return rm::bindTargets(*reservations_, k); };
    plan_.reservation = [this](const ReservationId& r) {
      return rm::bindTarget(*reservations_, r);
    };
    plan_.periodic = [this](const ReservationId& r) { return reservations_->isPeriodic(r); };
    plan_.guaranteed_at = [this](const ReservationId& r, TimePoint t) {
      return reservations_->guaranteedAt(r, t);
    };
  }
  apps_ = makeAppManager();
  MORPHEUS_RETURN_IF_ERROR(apps_->recover());
  makeRuntime(opts_.runtime);
  core_->setNodeLostListener(
      [this](const NodeId& n, const std::string& why) { runtime_->onNodeLost(n, why); });
  MORPHEUS_RETURN_IF_ERROR(runtime_->recoverTelemetry());
  if (opts_.strand) {
    strand_ =
        std::make_unique<rm::Strand>(metrics_, static_cast<size_t>(opts_.rm.strand_max_queued));
    strand_->start();
    replies_ = std::make_unique<rm::ReplyQueue>();
    replies_->start();
  }
  makeServices();
  if (!opts_.serve) return Status::ok();
  grpc::ServerBuilder builder;
  if (!opts_.listen.empty()) {
    builder.AddListeningPort(opts_.listen, grpc::InsecureServerCredentials(), &port_);
  }
  builder.RegisterService(tracker_.get());
  builder.RegisterService(client_.get());
  builder.RegisterService(am_.get());
  if (reservation_service_) builder.RegisterService(reservation_service_.get());
  server_ = builder.BuildAndStart();
  if (server_ == nullptr || (!opts_.listen.empty() && port_ <= 0)) {
    return unavailable("listen: cannot serve gRPC on '" + opts_.listen + "'");
  }
  return Status::ok();
}

void InProcRm::makeRuntime(rm::RuntimeOptions opts) {
  runtime_ = std::make_unique<rm::RmRuntime>(std::move(opts), *core_, *apps_, clock_, metrics_,
                                             nullptr, plan_.periodic, plan_.guaranteed_at);
  runtime_->setStore(store_.get());
}

void InProcRm::makeServices() {
  tracker_ =
      std::make_unique<rm::ResourceTrackerService>(*core_, *auth_, runtime_.get(), strand_.get());
  if (replies_) tracker_->setReplyQueue(replies_.get());
  client_ = std::make_unique<rm::ClientServiceImpl>(*core_, *access_, apps_.get(), runtime_.get());
  client_->setQueueSources(reservations_.get(), &clock_);
  if (reservations_) {
    reservation_service_ = std::make_unique<rm::ReservationServiceImpl>(*reservations_, *access_);
  }
  am_ = std::make_unique<rm::ApplicationMasterServiceImpl>(*runtime_, *core_, strand_.get());
}

InProcRm::~InProcRm() {
  if (server_) server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
  if (strand_) strand_->stop();    // after the server: pending heartbeats finish their calls
  if (replies_) replies_->stop();  // after the strand: its last replies are written
  if (runtime_) runtime_->stop();
  if (core_) {
    core_->setNodeLostListener(nullptr);
    core_->setCapacityListener(nullptr);
  }
}

Status InProcRm::replaceRuntime(rm::RuntimeOptions opts) {
  MORPHEUS_CHECK(server_ == nullptr, "replaceRuntime while serving");
  tracker_.reset();
  client_.reset();
  am_.reset();
  runtime_->stop();
  runtime_.reset();
  makeRuntime(std::move(opts));
  makeServices();
  return runtime_->recoverTelemetry();
}

std::unique_ptr<rm::AppManager> InProcRm::makeAppManager() {
  return std::make_unique<rm::AppManager>(opts_.apps, *store_, clock_, metrics_, core_->signer(),
                                          plan_.by_key, plan_.reservation);
}

Status InProcRm::registerNode(const v1::RegisterNodeRequest& req) {
  MORPHEUS_ASSIGN_OR_RETURN(rm::NodeRegistration reg, rm::parseNodeRegistration(req));
  MORPHEUS_RETURN_IF_ERROR(core_->registerNode(rm::nodeInfoOf(reg)));
  runtime_->onNodeRegistered(reg);
  return Status::ok();
}

Status InProcRm::nodeHeartbeat(const v1::NodeHeartbeatRequest& req,
                               v1::NodeHeartbeatResponse* resp) {
  MORPHEUS_ASSIGN_OR_RETURN(rm::NodeHeartbeatCall call, rm::parseNodeHeartbeat(req));
  rm::heartbeatReply(runtime_->onNodeHeartbeat(std::move(call)), resp);
  return Status::ok();
}

Status InProcRm::registerAm(const AppId& app, int attempt) {
  v1::RegisterApplicationMasterRequest req;
  req.set_application_id(app.value());
  req.set_am_token(apps_->amToken(app, attempt));
  v1::RegisterApplicationMasterResponse resp;
  return rm::serveRegisterAm(*runtime_, req, &resp);
}

Status InProcRm::allocate(const v1::AllocateRequest& req, v1::AllocateResponse* resp) {
  return rm::serveAllocate(*runtime_, *core_, req, resp);
}

Status InProcRm::finishAm(const v1::FinishApplicationMasterRequest& req) {
  return rm::serveFinishAm(*runtime_, req);
}

rm::ReservationManager& InProcRm::reservations() {
  MORPHEUS_CHECK(reservations_ != nullptr, "no ReservationManager under a ScriptedPlan");
  return *reservations_;
}

rm::ReservationServiceImpl& InProcRm::reservationService() {
  MORPHEUS_CHECK(reservation_service_ != nullptr, "no ReservationService under a ScriptedPlan");
  return *reservation_service_;
}

std::shared_ptr<grpc::Channel> InProcRm::channel() {
  MORPHEUS_CHECK(server_ != nullptr, "channel() without serve");
  return server_->InProcessChannel(grpc::ChannelArguments());
}

v1::RegisterNodeRequest nodeRegistration(const std::string& id, int vcores,
                                         const std::map<std::string, std::string>& attributes,
                                         const std::string& cm_address,
                                         const std::string& http_address) {
  v1::RegisterNodeRequest r;
  r.set_node_id(id);
  r.set_container_manager_address(cm_address);
  r.set_http_address(http_address);
  toProto(Resource(1024 * vcores, vcores), r.mutable_total());
  for (const auto& [k, v] : attributes) {
    auto* a = r.add_attributes();
    a->set_key(k);
    a->set_value(v);
  }
  return r;
}

v1::AllocateRequest taskAsk(const AppId& app, const std::string& am_token, int count) {
  v1::AllocateRequest req;
  req.set_application_id(app.value());
  req.set_am_token(am_token);
  auto* a = req.add_asks();
  a->set_request_id("tasks");
  a->set_priority(1);
  toProto(Resource(1024, 1), a->mutable_capability());
  a->set_count(count);
  return req;
}

}  // namespace morpheus::testing
