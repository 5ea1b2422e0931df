#include "rm/core/rm_core.h"

#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <fstream>
#include <nlohmann/json.hpp>

namespace morpheus::rm {

namespace {
std::string newEpoch(const Clock& clock) {
  return std::to_string(toEpochMs(clock.now())) + "-" + std::to_string(::getpid());
}
}  // namespace

RmCore::RmCore(const RmOptions& opts, Clock& clock, MetricsRegistry& metrics,
               std::string token_secret)
    : opts_(opts),
      clock_(clock),
      epoch_(newEpoch(clock)),
      signer_(std::move(token_secret)),
      started_(clock.now()),
      latency_(metrics),
      node_metrics_(metrics),
      nodes_(opts.node_expiry) {
  updateNodeGauges();
}

bool hasSecret(const std::string& data_dir) {
  std::ifstream in(data_dir + "/token-secret");
  std::string secret;
  return in && std::getline(in, secret) && !secret.empty();
}

Result<std::string> loadOrCreateSecret(const std::string& data_dir) {
  std::string path = data_dir + "/token-secret";
  {
    std::ifstream in(path);
    std::string secret;
    if (in && std::getline(in, secret) && !secret.empty()) return secret;
  }
  std::string secret = randomHex(32);
  std::string tmp = path + ".tmp";
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return internalError("cannot create " + tmp);
  std::string line = secret + "\n";
  bool ok = ::write(fd, line.data(), line.size()) == static_cast<ssize_t>(line.size()) &&
            ::fsync(fd) == 0;
  ::close(fd);
  if (!ok || ::rename(tmp.c_str(), path.c_str()) != 0) return internalError("cannot write " + path);
  return secret;
}

RmCore::~RmCore() { stop(); }

std::string RmCore::nodeKey(const NodeId& node) const {
  return deriveNodeKey(signer_.secret(), node);
}

std::string RmCore::issueContainerToken(const ContainerTokenInfo& info) const {
  ContainerTokenInfo t = info;
  t.expires = clock_.now() + opts_.container_token_expiry;
  const TokenSigner* signer = nullptr;
  {
    MutexLock lk(keys_mu_);
    auto it = node_signers_.find(info.node);
    if (it == node_signers_.end()) {
      it = node_signers_.emplace(info.node, TokenSigner(nodeKey(info.node))).first;
    }
    signer = &it->second;  // entries are never erased: the address stays valid
  }
  return morpheus::issueContainerToken(*signer, t);
}

void RmCore::start() {
  MutexLock lk(mu_);
  running_ = true;
  liveness_timer_ = clock_.scheduleAfter(opts_.heartbeat_interval, [this] {
    checkLiveness();
    scheduleLiveness();
  });
}

void RmCore::scheduleLiveness() {
  MutexLock lk(mu_);
  if (!running_) return;
  liveness_timer_ = clock_.scheduleAfter(opts_.heartbeat_interval, [this] {
    checkLiveness();
    scheduleLiveness();
  });
}

void RmCore::stop() {
  TimerId timer;
  {
    MutexLock lk(mu_);
    if (!running_) return;
    running_ = false;
    timer = liveness_timer_;
  }
  // A liveness pass already running takes mu_ and must finish before the
  // caller may destroy the core; it does not reschedule (running_ is false).
  clock_.cancelAndWait(timer);
}

Status RmCore::registerNode(NodeInfo info) {
  MutexLock lk(mu_);
  NodeId id = info.id;
  Resource total = info.total;
  bool existed = nodes_.find(id).has_value();
  if (Status st = nodes_.registerNode(std::move(info), clock_.now()); !st.isOk()) {
    if (st.code() == StatusCode::kAlreadyExists || st.code() == StatusCode::kInfeasible)
      spdlog::warn("refused registration: {}", st.message());
    return st;
  }
  spdlog::info("node {} {} with {}", id.value(), existed ? "re-registered" : "registered",
               total.toString());
  node_metrics_.registrations.inc();
  updateNodeGauges();
  notifyCapacity();
  return Status::ok();
}

Status RmCore::nodeHeartbeat(const NodeId& id, int64_t sequence, const Resource& used,
                             int64_t rss_mib, double cpu_vcores, int32_t num_containers) {
  MutexLock lk(mu_);
  node_metrics_.heartbeats.inc();
  return nodes_.heartbeat(id, sequence, used, rss_mib, cpu_vcores, num_containers, clock_.now());
}

Status RmCore::unregisterNode(const NodeId& id) {
  NodeLostListener listener;
  {
    MutexLock lk(mu_);
    MORPHEUS_RETURN_IF_ERROR(nodes_.unregisterNode(id));
    spdlog::info("node {} unregistered", id.value());
    updateNodeGauges();
    notifyCapacity();
    listener = lost_listener_;
  }
  // A node that leaves takes its containers with it, as one that expires does:
  // otherwise the scheduler would keep counting them (and the node's capacity).
  if (listener) listener(id, "");
  return Status::ok();
}

void RmCore::checkLiveness() {
  std::vector<NodeId> lost;
  NodeLostListener listener;
  {
    MutexLock lk(mu_);
    lost = nodes_.expire(clock_.now());
    for (const auto& id : lost) {
      spdlog::warn("node {} lost: no heartbeat for more than {} ms", id.value(),
                   opts_.node_expiry.count());
      node_metrics_.lost_total.inc();
    }
    updateNodeGauges();
    notifyCapacity();
    listener = lost_listener_;
  }
  if (listener) {
    for (const auto& id : lost) listener(id, "");
  }
  checkDecommissions();
}

namespace {
constexpr const char* kAdminTable = "node-admin";
}  // namespace

void RmCore::setStore(store::StateStore* store) {
  MutexLock lk(mu_);
  store_ = store;
}

Status RmCore::recoverNodeAdmin() {
  store::StateStore* store = nullptr;
  {
    MutexLock lk(mu_);
    store = store_;
  }
  if (store == nullptr) return Status::ok();
  MORPHEUS_ASSIGN_OR_RETURN(auto rows, store->list(kAdminTable));
  std::vector<std::pair<NodeId, NodeAdmin>> recovered;
  for (const auto& [key, value] : rows) {
    auto j = nlohmann::json::parse(value, nullptr, false);
    std::optional<NodeAdminState> st;
    if (!j.is_discarded() && j.is_object() && j.value("state", "").size() > 0)
      st = parseNodeAdminState(j.value("state", ""));
    if (!st || !j.contains("deadline_ms") || !j["deadline_ms"].is_number_integer()) {
      return internalError("corrupt node admin record " + key + " in table " + kAdminTable);
    }
    recovered.emplace_back(NodeId(key),
                           NodeAdmin{*st, fromEpochMs(j["deadline_ms"].get<int64_t>())});
  }
  MutexLock lk(mu_);
  for (const auto& [id, a] : recovered) {
    nodes_.setAdmin(id, a);
    spdlog::info("node {} is {} (recovered)", id.value(), toString(a.state));
  }
  updateNodeGauges();
  notifyCapacity();
  return Status::ok();
}

Status RmCore::persistAdmin(const NodeId& id, const NodeAdmin& admin) {
  if (store_ == nullptr) return Status::ok();
  std::optional<std::string> value;
  if (admin.state != NodeAdminState::kInService) {
    value =
        nlohmann::json{{"state", toString(admin.state)}, {"deadline_ms", toEpochMs(admin.deadline)}}
            .dump();
  }
  Status st = store_->commit({{kAdminTable, id.value(), value}});
  if (!st.isOk()) {
    return unavailable("node " + id.value() + " stays " + toString(nodes_.admin(id).state) +
                       ": the state store refused the change: " + st.message());
  }
  return Status::ok();
}

Result<NodeInfo> RmCore::changeAdmin(const NodeId& id, NodeAdminOp op, TimePoint deadline) {
  AdminListener listener;
  NodeAdmin next;
  NodeInfo out;
  {
    MutexLock lk(mu_);
    MORPHEUS_ASSIGN_OR_RETURN(next, nodes_.planAdmin(id, op, deadline));
    NodeAdmin before = nodes_.admin(id);
    if (next.state != before.state || next.deadline != before.deadline) {
      MORPHEUS_RETURN_IF_ERROR(persistAdmin(id, next));
      nodes_.setAdmin(id, next);
      spdlog::info("node {}: {} -> {}", id.value(), toString(before.state), toString(next.state));
      updateNodeGauges();
      notifyCapacity();
    }
    listener = admin_listener_;
    if (auto n = nodes_.find(id)) {
      out = *n;
    } else {
      out.id = id;
      out.live = false;
      out.admin = next;
    }
  }
  if (listener) listener(id, next.state);
  return out;
}

Result<NodeInfo> RmCore::drainNode(const NodeId& id) {
  return changeAdmin(id, NodeAdminOp::kDrain, TimePoint());
}

Result<NodeInfo> RmCore::undrainNode(const NodeId& id) {
  return changeAdmin(id, NodeAdminOp::kUndrain, TimePoint());
}

Result<NodeInfo> RmCore::decommissionNode(const NodeId& id, Millis timeout) {
  if (timeout < Millis(0)) return invalidArgument("timeout", "must be >= 0");
  return changeAdmin(id, NodeAdminOp::kDecommission, clock_.now() + timeout);
}

NodeAdmin RmCore::nodeAdmin(const NodeId& id) const {
  MutexLock lk(mu_);
  return nodes_.admin(id);
}

void RmCore::setRunningContainers(RunningContainers probe) {
  MutexLock lk(mu_);
  running_probe_ = std::move(probe);
}

void RmCore::setAdminListener(AdminListener listener) {
  MutexLock lk(mu_);
  admin_listener_ = std::move(listener);
}

// A decommission ends once the RM runs nothing more on the node or at its
// deadline; the remaining containers are then lost, as on node loss.
void RmCore::checkDecommissions() {
  std::vector<std::pair<NodeId, TimePoint>> pending;
  RunningContainers probe;
  {
    MutexLock lk(mu_);
    pending = nodes_.decommissioning();
    probe = running_probe_;
  }
  if (pending.empty()) return;
  const TimePoint now = clock_.now();
  // After an RM restart the runtime learns of running containers only as the
  // NMs report them: during the start-up grace none seems to run yet.
  const bool settled = now - started_ >= opts_.node_expiry;
  std::vector<std::pair<NodeId, std::string>> done;
  for (const auto& [id, deadline] : pending) {
    if (!settled && now < deadline) continue;
    int running = 0;
    if (probe) {
      running = probe(id);
    } else {
      MutexLock lk(mu_);
      if (auto n = nodes_.find(id); n && n->live) running = n->num_containers;
    }
    if (running == 0) {
      done.emplace_back(id, "");
    } else if (now >= deadline) {
      done.emplace_back(id, "node " + id.value() + " decommissioned: " + std::to_string(running) +
                                " container(s) still running at the decommission timeout");
    }
  }
  for (const auto& [id, why] : done) {
    NodeLostListener lost;
    AdminListener admin;
    {
      MutexLock lk(mu_);
      NodeAdmin a = nodes_.admin(id);
      if (a.state != NodeAdminState::kDecommissioning) continue;  // undrained meanwhile
      a.state = NodeAdminState::kDecommissioned;
      if (Status st = persistAdmin(id, a); !st.isOk()) {
        spdlog::warn("decommission of {} not finished: {}", id.value(), st.message());
        continue;
      }
      nodes_.setAdmin(id, a);
      if (why.empty()) {
        spdlog::info("node {} decommissioned: no container runs there any more", id.value());
      } else {
        spdlog::warn("{}; they are reported lost", why);
      }
      updateNodeGauges();
      notifyCapacity();
      lost = lost_listener_;
      admin = admin_listener_;
    }
    if (lost) lost(id, why.empty() ? "node " + id.value() + " decommissioned" : why);
    if (admin) admin(id, NodeAdminState::kDecommissioned);
  }
}

void RmCore::setNodeLostListener(NodeLostListener listener) {
  MutexLock lk(mu_);
  lost_listener_ = std::move(listener);
}

void RmCore::setCapacityListener(CapacityListener listener) {
  MutexLock lk(mu_);
  capacity_listener_ = std::move(listener);
  notifyCapacity();
}

void RmCore::notifyCapacity() {
  if (!capacity_listener_) return;
  capacity_listener_(nodes_.liveCapacity(), clock_.now() - started_ >= opts_.node_expiry);
}

std::vector<NodeInfo> RmCore::nodes(bool include_lost) const {
  MutexLock lk(mu_);
  return nodes_.nodes(include_lost);
}

ClusterSummary RmCore::summary() const {
  MutexLock lk(mu_);
  ClusterSummary s;
  s.live_nodes = nodes_.liveCount();
  s.lost_nodes = nodes_.lostCount();
  s.decommissioning_nodes = nodes_.adminCount(NodeAdminState::kDecommissioning);
  s.decommissioned_nodes = nodes_.adminCount(NodeAdminState::kDecommissioned);
  s.total = nodes_.liveCapacity();
  for (const auto& n : nodes_.nodes(false)) s.used += n.used;
  return s;
}

void RmCore::updateNodeGauges() {
  node_metrics_.live.set(nodes_.liveCount());
  node_metrics_.lost.set(nodes_.lostCount());
  node_metrics_.drained.set(nodes_.adminCount(NodeAdminState::kDrained));
  node_metrics_.decommissioning.set(nodes_.adminCount(NodeAdminState::kDecommissioning));
  node_metrics_.decommissioned.set(nodes_.adminCount(NodeAdminState::kDecommissioned));
  Resource cap = nodes_.liveCapacity();
  node_metrics_.capacity_memory_bytes.set(static_cast<double>(cap.memoryMib()) * kBytesPerMib);
  node_metrics_.capacity_vcores.set(cap.vcores());
}

}  // namespace morpheus::rm
