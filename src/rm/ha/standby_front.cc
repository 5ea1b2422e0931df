#include "rm/ha/standby_front.h"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "common/rm_failover.h"

namespace morpheus::rm {

namespace {

bool isWildcard(const std::string& host) {
  return host.empty() || host == "0.0.0.0" || host == "::" || host == "[::]";
}

}  // namespace

std::string encodeLeaderRecord(const LeaderRecord& r) {
  return nlohmann::json{{"grpc", r.grpc}, {"http", r.http}, {"pid", r.pid}}.dump();
}

LeaderRecord decodeLeaderRecord(const std::string& value) {
  LeaderRecord r;
  auto j = nlohmann::json::parse(value, nullptr, false);
  if (!j.is_discarded() && j.is_object()) {
    r.grpc = j.value("grpc", "");
    r.http = j.value("http", "");
    r.pid = j.value("pid", int64_t{0});
    return r;
  }
  r.grpc = value.substr(0, value.find(' '));
  return r;
}

std::string advertisedHost(const std::string& configured, const std::string& bind_host) {
  if (!configured.empty()) return configured;
  if (!isWildcard(bind_host)) return bind_host;
  char name[256] = {};
  if (::gethostname(name, sizeof(name) - 1) != 0) return "localhost";
  return name;
}

// Answers every gRPC method not otherwise registered: UNAVAILABLE naming the
// active RM, with its address as trailing metadata.
struct StandbyFront::Refusal : grpc::CallbackGenericService {
  explicit Refusal(const StandbyFront& f) : front(f) {}

  grpc::ServerGenericBidiReactor* CreateReactor(grpc::GenericCallbackServerContext* ctx) override {
    class Reactor : public grpc::ServerGenericBidiReactor {
     public:
      Reactor(grpc::GenericCallbackServerContext* ctx, const std::string& hint,
              const std::string& message) {
        ctx->AddTrailingMetadata(kLeaderMetadataKey, hint);
        Finish(grpc::Status(grpc::StatusCode::UNAVAILABLE, message));
      }
      void OnDone() override { delete this; }
    };
    std::string hint;
    {
      MutexLock lk(front.mu_);
      hint = front.leader_.grpc;
    }
    return new Reactor(ctx, hint, front.message(false));
  }

  const StandbyFront& front;
};

StandbyFront::StandbyFront(const DaemonOptions& opts, MetricsRegistry& metrics)
    : metrics_(metrics),
      refusal_(std::make_unique<Refusal>(*this)),
      server_(std::make_unique<DaemonServer>("rm", opts, metrics)) {}

StandbyFront::~StandbyFront() {
  server_->shutdown(Millis(500));
  server_.reset();  // the HTTP server's socket is closed only when it is destroyed
}

HaMetrics::HaMetrics(MetricsRegistry& m)
    : active(m.gauge("morpheus_rm_ha_active",
                     "1 on the active RM (a single RM is always active), 0 on an HA standby")) {}

Result<std::unique_ptr<StandbyFront>> StandbyFront::start(const DaemonOptions& opts,
                                                          MetricsRegistry& metrics) {
  std::unique_ptr<StandbyFront> f(new StandbyFront(opts, metrics));
  f->server_->setFallbackService(f->refusal_.get());
  f->setLeader("");
  f->registerHttpRefusals();
  f->metrics_.active.set(0);
  MORPHEUS_RETURN_IF_ERROR(f->server_->start());
  // The gRPC health service reports the standby as not serving.
  f->server_->grpcServer()->GetHealthCheckService()->SetServingStatus(false);
  spdlog::info("standby: answering clients UNAVAILABLE with the active RM's address");
  return f;
}

std::string StandbyFront::message(bool http) const {
  MutexLock lk(mu_);
  const std::string& addr = http ? leader_.http : leader_.grpc;
  if (addr.empty()) return "standby; no active RM yet";
  return "standby; active RM is " + addr;
}

void StandbyFront::setLeader(const std::string& record) {
  LeaderRecord r = record.empty() ? LeaderRecord{} : decodeLeaderRecord(record);
  std::string old_label;
  std::string label;
  {
    MutexLock lk(mu_);
    leader_ = r;
    old_label = unmet_label_;
    unmet_label_ = "active (" +
                   (r.http.empty() ? std::string("standby; no active RM yet")
                                   : "standby; active RM is " + r.http) +
                   ")";
    label = unmet_label_;
  }
  // /readyz lists the unmet conditions: the one naming the current leader.
  if (!old_label.empty() && old_label != label) server_->readiness().set(old_label, true);
  server_->readiness().set(label, false);
}

void StandbyFront::registerHttpRefusals() {
  HttpHandler refuse = [this](const HttpRequest&) {
    return HttpResponse{503, "text/plain; charset=utf-8", message(true) + "\n"};
  };
  for (const char* method : {"GET", "POST", "PUT", "DELETE", "PATCH"}) {
    for (const char* path : {"/", "/ui", "/ui/", "/ui/*", "/ws/*"}) {
      server_->http().route(method, path, refuse, HandlerThread::kIoThread);
    }
  }
}

}  // namespace morpheus::rm
