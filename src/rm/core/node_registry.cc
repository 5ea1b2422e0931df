#include "rm/core/node_registry.h"

#include "common/validate.h"

namespace morpheus::rm {

namespace {

Status checkNodeResources(const Resource& total) {
  if (total.anyNegative()) return invalidArgument("total", "resources must be >= 0");
  if (total.memoryMib() <= 0 || total.vcores() <= 0) {
    return invalidArgument("total", "a node must offer memory > 0 and vcores > 0");
  }
  if (total.memoryMib() > kMaxNodeMemoryMib) {
    return invalidArgument("total.memory_mib", std::to_string(total.memoryMib()) +
                                                   " MiB is above the per-node maximum of " +
                                                   std::to_string(kMaxNodeMemoryMib) +
                                                   " MiB (64 TiB)");
  }
  if (total.vcores() > kMaxNodeVcores) {
    return invalidArgument("total.vcores", std::to_string(total.vcores()) +
                                               " is above the per-node maximum of " +
                                               std::to_string(kMaxNodeVcores));
  }
  for (const auto& [name, v] : total.extended()) {
    if (v > kMaxNodeExtended) {
      return invalidArgument("total.extended." + name, std::to_string(v) +
                                                           " is above the per-node maximum of " +
                                                           std::to_string(kMaxNodeExtended));
    }
  }
  return Status::ok();
}

}  // namespace

const char* toString(NodeAdminState s) {
  switch (s) {
    case NodeAdminState::kInService:
      return "in-service";
    case NodeAdminState::kDrained:
      return "drained";
    case NodeAdminState::kDecommissioning:
      return "decommissioning";
    case NodeAdminState::kDecommissioned:
      return "decommissioned";
  }
  return "in-service";
}

std::optional<NodeAdminState> parseNodeAdminState(const std::string& s) {
  for (auto st : {NodeAdminState::kInService, NodeAdminState::kDrained,
                  NodeAdminState::kDecommissioning, NodeAdminState::kDecommissioned}) {
    if (s == toString(st)) return st;
  }
  return std::nullopt;
}

Result<NodeAdmin> nextAdminState(const std::string& node, const NodeAdmin& current, NodeAdminOp op,
                                 TimePoint deadline) {
  NodeAdmin next;
  switch (op) {
    case NodeAdminOp::kUndrain:
      return next;  // IN_SERVICE from anywhere
    case NodeAdminOp::kDrain:
      if (current.state == NodeAdminState::kInService ||
          current.state == NodeAdminState::kDrained) {
        next.state = NodeAdminState::kDrained;
        return next;
      }
      return infeasible("node " + node + " is " + toString(current.state) +
                        ": undrain it first to drain it instead");
    case NodeAdminOp::kDecommission:
      if (current.state == NodeAdminState::kDecommissioned) return current;
      next.state = NodeAdminState::kDecommissioning;
      next.deadline = deadline;
      return next;
  }
  return current;
}

NodeAdmin NodeRegistry::adminOf(const NodeId& id) const {
  auto it = admin_.find(id);
  return it == admin_.end() ? NodeAdmin{} : it->second;
}

bool NodeRegistry::inService(const NodeId& id) const { return admin_.find(id) == admin_.end(); }

NodeAdmin NodeRegistry::admin(const NodeId& id) const { return adminOf(id); }

Result<NodeAdmin> NodeRegistry::planAdmin(const NodeId& id, NodeAdminOp op,
                                          TimePoint deadline) const {
  if (nodes_.find(id) == nodes_.end() && admin_.find(id) == admin_.end()) {
    return notFound("node " + id.value() + " is not registered");
  }
  return nextAdminState(id.value(), adminOf(id), op, deadline);
}

void NodeRegistry::setAdmin(const NodeId& id, const NodeAdmin& admin) {
  if (admin.state == NodeAdminState::kInService) {
    admin_.erase(id);
    return;
  }
  admin_[id] = admin;
  if (admin.state == NodeAdminState::kDecommissioned) {
    if (auto it = nodes_.find(id); it != nodes_.end()) it->second.live = false;
  }
}

std::vector<std::pair<NodeId, TimePoint>> NodeRegistry::decommissioning() const {
  std::vector<std::pair<NodeId, TimePoint>> out;
  for (const auto& [id, a] : admin_) {
    if (a.state == NodeAdminState::kDecommissioning) out.emplace_back(id, a.deadline);
  }
  return out;
}

int NodeRegistry::adminCount(NodeAdminState s) const {
  int c = 0;
  for (const auto& [id, _] : nodes_) c += adminOf(id).state == s ? 1 : 0;
  return c;
}

Status NodeRegistry::registerNode(NodeInfo info, TimePoint now) {
  MORPHEUS_RETURN_IF_ERROR(validateNodeId(info.id.value(), "node_id"));
  if (info.container_manager_address.empty()) {
    return invalidArgument("container_manager_address", "must not be empty");
  }
  MORPHEUS_RETURN_IF_ERROR(checkNodeResources(info.total));
  if (adminOf(info.id).state == NodeAdminState::kDecommissioned) {
    return infeasible("node " + info.id.value() +
                      " is decommissioned: its registration is refused until an admin runs "
                      "'morpheusctl node undrain " +
                      info.id.value() + "'");
  }
  // The cluster's capacity with this node (replacing its old record) must not overflow.
  std::optional<Resource> sum = info.total;
  for (const auto& [id, n] : nodes_) {
    if (n.live && id != info.id && sum) sum = checkedSum(*sum, n.total);
  }
  if (!sum) return invalidArgument("total", "the cluster's capacity would overflow");
  if (auto it = nodes_.find(info.id);
      it != nodes_.end() && it->second.live &&
      it->second.container_manager_address != info.container_manager_address) {
    return alreadyExists("node " + info.id.value() + " is live at " +
                         it->second.container_manager_address + "; a registration from " +
                         info.container_manager_address +
                         " is refused until that node is lost or unregisters");
  }
  info.live = true;
  info.registered_at = now;
  info.last_heartbeat = now;
  info.last_sequence = 0;
  nodes_[info.id] = std::move(info);
  return Status::ok();
}

Status NodeRegistry::heartbeat(const NodeId& id, int64_t sequence, const Resource& used,
                               int64_t rss_mib, double cpu_vcores, int32_t num_containers,
                               TimePoint now) {
  if (adminOf(id).state == NodeAdminState::kDecommissioned) {
    return infeasible("node " + id.value() + " is decommissioned: stop it");
  }
  auto it = nodes_.find(id);
  if (it == nodes_.end() || !it->second.live) {
    return notFound("node " + id.value() + " is not registered");
  }
  // Reported usage is summed over nodes (cluster summary): keep it in the
  // per-node bounds so no sum can overflow.
  if (used.anyNegative() || used.memoryMib() > kMaxNodeMemoryMib ||
      used.vcores() > kMaxNodeVcores) {
    return invalidArgument("used", used.toString() + " is outside [0, per-node maximum]");
  }
  for (const auto& [name, v] : used.extended()) {
    if (v > kMaxNodeExtended) return invalidArgument("used.extended." + name, "too large");
  }
  NodeInfo& n = it->second;
  n.last_heartbeat = now;
  n.last_sequence = sequence;
  n.used = used;
  n.used_rss_mib = rss_mib;
  n.used_cpu_vcores = cpu_vcores;
  n.num_containers = num_containers;
  return Status::ok();
}

Status NodeRegistry::unregisterNode(const NodeId& id) {
  if (nodes_.erase(id) == 0) return notFound("node " + id.value() + " is not registered");
  return Status::ok();
}

std::vector<NodeId> NodeRegistry::expire(TimePoint now) {
  std::vector<NodeId> lost;
  for (auto& [id, n] : nodes_) {
    if (n.live && now - n.last_heartbeat > expiry_) {
      n.live = false;
      lost.push_back(id);
    }
  }
  return lost;
}

std::optional<NodeInfo> NodeRegistry::find(const NodeId& id) const {
  auto it = nodes_.find(id);
  if (it == nodes_.end()) return std::nullopt;
  NodeInfo n = it->second;
  n.admin = adminOf(id);
  return n;
}

std::vector<NodeInfo> NodeRegistry::nodes(bool include_lost) const {
  std::vector<NodeInfo> out;
  for (const auto& [id, n] : nodes_) {
    if (n.live || include_lost) {
      out.push_back(n);
      out.back().admin = adminOf(id);
    }
  }
  return out;
}

Resource NodeRegistry::liveCapacity() const {
  Resource r;
  for (const auto& [id, n] : nodes_) {
    if (!n.live || !inService(id)) continue;
    std::optional<Resource> sum = checkedSum(r, n.total);
    MORPHEUS_CHECK(sum.has_value(), "registration keeps the live capacity within int64");
    r = *sum;
  }
  return r;
}

int NodeRegistry::liveCount() const {
  int c = 0;
  for (const auto& [_, n] : nodes_) c += n.live ? 1 : 0;
  return c;
}

int NodeRegistry::lostCount() const {
  return static_cast<int>(nodes_.size()) - liveCount() -
         adminCount(NodeAdminState::kDecommissioned);
}

}  // namespace morpheus::rm
