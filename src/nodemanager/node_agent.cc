#include "nodemanager/node_agent.h"

#include <functional>

#include <spdlog/spdlog.h>

#include <fstream>
#include <sstream>

#include "common/ignore.h"
#include "common/wire.h"

namespace morpheus::nm {

Result<std::string> readNodeToken(const std::string& path) {
  std::ifstream in(path);
  if (!in) return invalidArgument("nm.token-file", "cannot read '" + path + "'");
  std::string token, line;
  while (std::getline(in, line)) {
    if (auto hash = line.find('#'); hash != std::string::npos) line.resize(hash);
    std::istringstream words(line);
    std::string word;
    while (words >> word) {
      if (!token.empty()) {
        return invalidArgument("nm.token-file",
                               "'" + path + "' must hold one token only (one word on one line)");
      }
      token = word;
    }
  }
  if (token.empty()) return invalidArgument("nm.token-file", "'" + path + "' holds no token");
  if (token.size() < 16) {
    return invalidArgument("nm.token-file",
                           "the token in '" + path + "' is shorter than 16 characters");
  }
  return token;
}

NodeAgent::NodeAgent(const NmOptions& opts, std::string node_id,
                     std::string container_manager_address, std::string http_address,
                     std::string rm_token, MetricsRegistry& metrics, ContainerRuntime& runtime,
                     TokenKey& key)
    : opts_(opts),
      node_id_(std::move(node_id)),
      cm_address_(std::move(container_manager_address)),
      http_address_(std::move(http_address)),
      rm_token_(std::move(rm_token)),
      metrics_(metrics),
      runtime_(runtime),
      key_(key),
      rm_(FailoverChannel::create(opts.rm_address, opts.daemon.tls, "nm.rm-address").value()),
      interval_(opts.heartbeat_interval),
      // Each node at its own phase of the full reports (heartbeat_report.h).
      report_(static_cast<int>(opts.full_report_every), std::hash<std::string>{}(node_id_)) {}

NodeAgent::~NodeAgent() { stop(); }

void NodeAgent::start() {
  thread_ = std::thread([this] { run(); });
}

void NodeAgent::stop() {
  {
    MutexLock lk(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void NodeAgent::authorize(grpc::ClientContext* ctx) const {
  if (!rm_token_.empty()) ctx->AddMetadata("authorization", "Bearer " + rm_token_);
}

bool NodeAgent::registerOnce() {
  v1::RegisterNodeRequest req;
  req.set_node_id(node_id_);
  req.set_container_manager_address(cm_address_);
  req.set_http_address(http_address_);
  toProto(opts_.resources, req.mutable_total());
  for (const auto& [k, v] : opts_.attributes) {
    auto* a = req.add_attributes();
    a->set_key(k);
    a->set_value(v);
  }
  req.set_version("0.1.0");
  // Containers that survive an RM restart are reported so the RM re-adopts them.
  for (const auto& c : runtime_.snapshot()) toProto(c, req.add_running_containers());
  v1::RegisterNodeResponse resp;
  // Idempotent: a repeated registration replaces the node's record.
  grpc::Status st =
      rm_->unary(&v1::ResourceTracker::Stub::RegisterNode, req, &resp, Millis(5000),
                 CallKind::kIdempotent, [this](grpc::ClientContext* ctx) { authorize(ctx); });
  if (!st.ok()) {
    if (st.error_code() == grpc::StatusCode::INVALID_ARGUMENT ||
        st.error_code() == grpc::StatusCode::PERMISSION_DENIED ||
        st.error_code() == grpc::StatusCode::ALREADY_EXISTS) {
      spdlog::error("RM refused registration of node {}: {}", node_id_, fromGrpc(st).toString());
    } else {
      spdlog::warn("cannot register with RM at {}: {}", opts_.rm_address, st.error_message());
    }
    return false;
  }
  epoch_ = resp.rm_epoch();
  if (!resp.container_token_secret().empty()) key_.set(resp.container_token_secret());
  sequence_ = 0;
  report_.reset();
  if (resp.heartbeat_interval_ms() > 0) interval_ = Millis(resp.heartbeat_interval_ms());
  setRegistered(true);
  spdlog::info("node {} registered with RM {} (epoch {}) offering {}", node_id_, rm_->current(),
               epoch_, opts_.resources.toString());
  return true;
}

bool NodeAgent::heartbeatOnce() {
  v1::NodeHeartbeatRequest req;
  req.set_node_id(node_id_);
  req.set_sequence(++sequence_);
  req.set_rm_epoch(epoch_);
  report_.build(runtime_.snapshot(), &req);
  if (extend_heartbeat_) extend_heartbeat_(&req);
  v1::NodeHeartbeatResponse resp;
  // Idempotent: a heartbeat carries the node's full status.
  grpc::Status st =
      rm_->unary(&v1::ResourceTracker::Stub::NodeHeartbeat, req, &resp, Millis(5000),
                 CallKind::kIdempotent, [this](grpc::ClientContext* ctx) { authorize(ctx); });
  if (!st.ok()) {
    spdlog::warn("heartbeat to RM {} failed: {}", opts_.rm_address, st.error_message());
    metrics_.heartbeat_failures.inc();
    return true;  // keep trying; the RM may be restarting
  }
  metrics_.heartbeats.inc();
  report_.delivered();
  if (resp.next_heartbeat_interval_ms() > 0) interval_ = Millis(resp.next_heartbeat_interval_ms());
  for (const auto& id : resp.containers_to_kill()) {
    MORPHEUS_IGNORE_NOT_FOUND(
        runtime_.stop(ContainerId(id), ExitReason::kKilled, "killed by the RM"),
        "it ended, or the RM asks again for one this node reported gone");
  }
  std::vector<ContainerId> acked;
  for (const auto& id : resp.containers_to_acknowledge()) acked.emplace_back(id);
  runtime_.acknowledge(acked);
  if (resp.action() == v1::NodeHeartbeatResponse::ACTION_SHUTDOWN) {
    spdlog::warn("RM ordered shutdown of node {}: stopping all containers", node_id_);
    runtime_.stopAll(ExitReason::kKilled, "node decommissioned");
    // Registering again is refused (with the RM's reason, logged) until an
    // admin returns the node to service; then it rejoins by itself.
    setRegistered(false);
    return false;
  }
  if (resp.action() == v1::NodeHeartbeatResponse::ACTION_RESYNC) {
    spdlog::info("RM ordered resync: re-registering node {}", node_id_);
    setRegistered(false);
    return false;
  }
  return true;
}

void NodeAgent::setRegistered(bool registered) {
  registered_ = registered;
  if (on_registration_) on_registration_(registered);
}

void NodeAgent::run() {
  Millis backoff(200);
  for (;;) {
    Millis wait = interval_;
    if (!registered_) {
      if (registerOnce()) {
        backoff = Millis(200);
        wait = Millis(0);
      } else {
        wait = backoff;
        backoff = std::min(backoff * 2, Millis(5000));
      }
    } else if (!heartbeatOnce()) {
      wait = Millis(0);
    }
    MutexLock lk(mu_);
    if (cv_.waitFor(mu_, wait, [this]() REQUIRES(mu_) { return stopping_; })) return;
  }
}

}  // namespace morpheus::nm
