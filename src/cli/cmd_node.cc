#include "cli/cmd_node.h"

#include <chrono>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>
#include <thread>

#include "morpheus/v1/admin.grpc.pb.h"
#include "morpheus/v1/client.grpc.pb.h"

namespace morpheus::cli {

namespace {

constexpr Millis kRpcTimeout(10000);
// YARN's default graceful decommission timeout (one hour).
constexpr const char* kDefaultDecommissionTimeout = "1h";

void check(const grpc::Status& st, const CliContext& ctx) {
  checkCall(st, "RM at " + rmChannel(ctx).current());
}

nlohmann::json resourceJson(const v1::Resource& r) {
  nlohmann::json j = {{"memory_mib", r.memory_mib()}, {"vcores", r.vcores()}};
  for (const auto& [k, v] : r.extended()) j[k] = v;
  return j;
}

nlohmann::json nodeJson(const v1::NodeReport& n) {
  nlohmann::json attrs = nlohmann::json::object();
  for (const auto& a : n.attributes()) attrs[a.key()] = a.value();
  nlohmann::json j = {{"node_id", n.node_id()},
                      {"state", nodeStateName(n)},
                      {"drained", n.drained()},
                      {"address", n.container_manager_address()},
                      {"http_address", n.http_address()},
                      {"total", resourceJson(n.total())},
                      {"used", resourceJson(n.used())},
                      {"containers", n.num_containers()},
                      {"attributes", attrs},
                      {"harvest_class", n.harvest_class()}};
  setTime(j, "last_heartbeat", n.last_heartbeat_ms());
  setTime(j, "decommission_deadline", n.decommission_deadline_ms());
  return j;
}

v1::ListNodesResponse listAll(const CliContext& ctx) {
  v1::ListNodesRequest req;
  req.set_include_lost(true);
  v1::ListNodesResponse resp;
  check(callRm(ctx, &v1::ClientService::Stub::ListNodes, req, &resp, kRpcTimeout,
               CallKind::kIdempotent),
        ctx);
  return resp;
}

void listNodes(const CliContext& ctx) {
  v1::ListNodesResponse resp = listAll(ctx);
  if (ctx.json) {
    nlohmann::json arr = nlohmann::json::array();
    for (const auto& n : resp.nodes()) arr.push_back(nodeJson(n));
    printJson("nodes", arr);
    return;
  }
  const int64_t now = nowMs(ctx);
  Table t({"NODE", "STATE", "CONTAINERS", "USED", "TOTAL", "LAST HEARTBEAT", "DECOMMISSION BY"});
  for (const auto& n : resp.nodes()) {
    t.add({n.node_id(), nodeStateName(n), std::to_string(n.num_containers()),
           formatResource(n.used().memory_mib(), n.used().vcores()),
           formatResource(n.total().memory_mib(), n.total().vcores()),
           n.last_heartbeat_ms() > 0 ? formatRelative(n.last_heartbeat_ms(), now) : "-",
           n.decommission_deadline_ms() > 0 ? formatTime(n.decommission_deadline_ms()) : "-"});
  }
  t.print();
}

// What the change did, for people.
std::string describe(const v1::NodeReport& n, const CliContext& ctx) {
  const std::string state = nodeStateName(n);
  std::string out = "node " + n.node_id() + ": " + state;
  if (state == "DRAINED") {
    out += " (no new containers; its capacity is out of the plan; " +
           std::to_string(n.num_containers()) + " container(s) still running)";
  } else if (state == "DECOMMISSIONING") {
    out += " (waiting for " + std::to_string(n.num_containers()) +
           " running container(s); they are killed " +
           formatRelative(n.decommission_deadline_ms(), nowMs(ctx)) + ")";
  } else if (state == "DECOMMISSIONED") {
    out += " (told to stop; its registration is refused until 'morpheusctl node undrain " +
           n.node_id() + "')";
  }
  return out;
}

void printNode(const v1::NodeReport& n, const CliContext& ctx) {
  if (ctx.json) {
    printJson("nodes", nlohmann::json::array({nodeJson(n)}));
  } else {
    std::printf("%s\n", describe(n, ctx).c_str());
  }
}

void drain(const CliContext& ctx, const std::string& node) {
  v1::DrainNodeRequest req;
  req.set_node_id(node);
  v1::NodeAdminResponse resp;
  check(callRm(ctx, &v1::AdminService::Stub::DrainNode, req, &resp, kRpcTimeout,
               CallKind::kIdempotent),
        ctx);
  printNode(resp.node(), ctx);
}

void undrain(const CliContext& ctx, const std::string& node) {
  v1::UndrainNodeRequest req;
  req.set_node_id(node);
  v1::NodeAdminResponse resp;
  check(callRm(ctx, &v1::AdminService::Stub::UndrainNode, req, &resp, kRpcTimeout,
               CallKind::kIdempotent),
        ctx);
  printNode(resp.node(), ctx);
}

struct DecommissionArgs {
  std::string node;
  std::string timeout = kDefaultDecommissionTimeout;
  bool wait = false;
};

void decommission(const CliContext& ctx, const DecommissionArgs& a) {
  auto timeout = parseDurationArg(a.timeout, "--timeout", /*allow_zero=*/true);
  if (!timeout.isOk()) failWith(timeout.status());
  v1::DecommissionNodeRequest req;
  req.set_node_id(a.node);
  req.set_timeout_ms(timeout->count());
  v1::NodeAdminResponse resp;
  check(callRm(ctx, &v1::AdminService::Stub::DecommissionNode, req, &resp, kRpcTimeout,
               CallKind::kIdempotent),
        ctx);
  v1::NodeReport node = resp.node();
  if (a.wait) {
    // Until it is out: the RM ends the decommission at its deadline at the
    // latest (a liveness pass later).
    const auto give_up = std::chrono::steady_clock::now() + *timeout + std::chrono::minutes(1);
    while (nodeStateName(node) != "DECOMMISSIONED" && std::chrono::steady_clock::now() < give_up) {
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
      const v1::ListNodesResponse all = listAll(ctx);
      for (const auto& n : all.nodes()) {
        if (n.node_id() == a.node) node = n;
      }
    }
    if (nodeStateName(node) != "DECOMMISSIONED") {
      printNode(node, ctx);
      failWith(unavailable("node " + a.node + " is still " + nodeStateName(node) +
                           " a minute after its decommission timeout"));
    }
  }
  printNode(node, ctx);
}

}  // namespace

std::string nodeStateName(const v1::NodeReport& n) {
  switch (n.state()) {
    case v1::NodeReport::NODE_STATE_RUNNING:
      return n.drained() ? "DRAINED" : "RUNNING";
    case v1::NodeReport::NODE_STATE_DECOMMISSIONING:
      return "DECOMMISSIONING";
    case v1::NodeReport::NODE_STATE_DECOMMISSIONED:
      return "DECOMMISSIONED";
    case v1::NodeReport::NODE_STATE_LOST:
      return "LOST";
    default:
      return "UNKNOWN";
  }
}

void addNodeCommands(CLI::App& root, CliContext& ctx) {
  auto* node = root.add_subcommand("node", "Nodes: list them; drain or decommission one (admins)");
  node->require_subcommand(1);
  auto* list = node->add_subcommand(
      "list",
      "Every node the RM knows, with its state (RUNNING, DRAINED, DECOMMISSIONING, "
      "DECOMMISSIONED, LOST)");
  list->callback([&ctx] { listNodes(ctx); });

  auto drain_node = std::make_shared<std::string>();
  auto* drain_cmd = node->add_subcommand(
      "drain",
      "No new containers on NODE; its capacity leaves the plan (reservations are "
      "re-planned or reported at risk); running containers stay (admins)");
  drain_cmd->add_option("node", *drain_node, "Node id")->required();
  drain_cmd->callback([&ctx, drain_node] { drain(ctx, *drain_node); });

  auto undrain_node = std::make_shared<std::string>();
  auto* undrain_cmd = node->add_subcommand(
      "undrain",
      "Return NODE to service: cancels a drain or a decommission; a decommissioned "
      "node may register again (admins)");
  undrain_cmd->add_option("node", *undrain_node, "Node id")->required();
  undrain_cmd->callback([&ctx, undrain_node] { undrain(ctx, *undrain_node); });

  auto da = std::make_shared<DecommissionArgs>();
  auto* decom_cmd = node->add_subcommand(
      "decommission",
      "Drain NODE, wait for its containers to end (at most --timeout; then they are killed and "
      "reported lost), then take it out of the cluster: it is told to stop (admins)");
  decom_cmd->add_option("node", da->node, "Node id")->required();
  decom_cmd->add_option("--timeout", da->timeout,
                        "How long running containers may finish, e.g. 10m, 0s (default 1h)");
  decom_cmd->add_flag("--wait", da->wait, "Return only once the node is DECOMMISSIONED");
  decom_cmd->callback([&ctx, da] { decommission(ctx, *da); });
}

}  // namespace morpheus::cli
