#include "cli/cmd_cluster.h"

#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>
#include "cli/cmd_node.h"

#include "common/wire.h"
#include "morpheus/v1/client.grpc.pb.h"

namespace morpheus::cli {

namespace {

nlohmann::json resourceJson(const v1::Resource& r) {
  nlohmann::json j = {{"memory_mib", r.memory_mib()}, {"vcores", r.vcores()}};
  for (const auto& [k, v] : r.extended()) j[k] = v;
  return j;
}

// The primary-tenant classes of the RM's last clustering.
nlohmann::json harvestClassesJson(const v1::ListNodesResponse& nodes) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& c : nodes.harvest_classes()) {
    out.push_back(
        {{"id", c.id()},
         {"pattern", c.pattern()},
         {"average", c.average()},
         {"peak", c.peak()},
         {"tenants", std::vector<std::string>(c.tenants().begin(), c.tenants().end())},
         {"nodes", c.node_ids_size()},
         {"node_ids", std::vector<std::string>(c.node_ids().begin(), c.node_ids().end())}});
  }
  return out;
}

void printHarvestClasses(const v1::ListNodesResponse& nodes) {
  if (nodes.harvest_classes().empty()) return;
  std::printf("\nHarvesting classes (primary tenants' CPU utilisation):\n");
  Table t({"CLASS", "PATTERN", "AVERAGE", "PEAK", "NODES"});
  for (const auto& c : nodes.harvest_classes()) {
    char avg[32], peak[32];
    std::snprintf(avg, sizeof avg, "%.2f", c.average());
    std::snprintf(peak, sizeof peak, "%.2f", c.peak());
    t.add({c.id(), c.pattern(), avg, peak, std::to_string(c.node_ids_size())});
  }
  t.print();
}

void clusterStatus(const CliContext& ctx, bool json, bool include_lost) {
  v1::ListNodesRequest req;
  req.set_include_lost(include_lost);
  v1::ListNodesResponse nodes;
  grpc::Status st = callRm(ctx, &v1::ClientService::Stub::ListNodes, req, &nodes, Millis(5000),
                           CallKind::kIdempotent);
  checkCall(st, "RM at " + rmChannel(ctx).current());
  v1::ClusterMetrics metrics;
  st = callRm(ctx, &v1::ClientService::Stub::GetClusterMetrics, v1::GetClusterMetricsRequest(),
              &metrics, Millis(5000), CallKind::kIdempotent);
  checkCall(st, "RM at " + rmChannel(ctx).current());

  if (json) {
    nlohmann::json j;
    j["rm"] = ctx.rm_address;
    j["live_nodes"] = metrics.live_nodes();
    j["lost_nodes"] = metrics.lost_nodes();
    j["capacity"] = resourceJson(metrics.total());
    j["used"] = resourceJson(metrics.used());
    j["nodes"] = nlohmann::json::array();
    for (const auto& n : nodes.nodes()) {
      nlohmann::json attrs = nlohmann::json::object();
      for (const auto& a : n.attributes()) attrs[a.key()] = a.value();
      j["nodes"].push_back({{"node_id", n.node_id()},
                            {"state", nodeStateName(n)},
                            {"address", n.container_manager_address()},
                            {"http_address", n.http_address()},
                            {"total", resourceJson(n.total())},
                            {"used", resourceJson(n.used())},
                            {"containers", n.num_containers()},
                            {"attributes", attrs},
                            {"harvest_class", n.harvest_class()}});
      setTime(j["nodes"].back(), "last_heartbeat", n.last_heartbeat_ms());
    }
    j["harvest_classes"] = harvestClassesJson(nodes);
    std::cout << j.dump(2) << "\n";
    return;
  }
  std::printf("RM %s: %d live node(s), %d lost; capacity %s; used %s\n", ctx.rm_address.c_str(),
              metrics.live_nodes(), metrics.lost_nodes(),
              formatResource(metrics.total().memory_mib(), metrics.total().vcores()).c_str(),
              formatResource(metrics.used().memory_mib(), metrics.used().vcores()).c_str());
  Table t({"NODE", "STATE", "USED", "TOTAL", "CONTAINERS", "HARVEST CLASS", "LAST HEARTBEAT",
           "ATTRIBUTES"});
  const int64_t now = nowMs(ctx);
  for (const auto& n : nodes.nodes()) {
    std::string attrs;  // The resource kinds constraints match
    for (const auto& a : n.attributes()) {
      attrs += (attrs.empty() ? "" : ",") + a.key() + "=" + a.value();
    }
    t.add({n.node_id(), nodeStateName(n), formatResource(n.used().memory_mib(), n.used().vcores()),
           formatResource(n.total().memory_mib(), n.total().vcores()),
           std::to_string(n.num_containers()), n.harvest_class().empty() ? "-" : n.harvest_class(),
           n.last_heartbeat_ms() > 0 ? formatRelative(n.last_heartbeat_ms(), now) : "-",
           attrs.empty() ? "-" : attrs});
  }
  t.print();
  printHarvestClasses(nodes);
}

}  // namespace

void addClusterCommands(CLI::App& root, CliContext& ctx) {
  auto* cluster = root.add_subcommand("cluster", "Cluster-wide views");
  cluster->require_subcommand(1);
  auto* status = cluster->add_subcommand("status", "Live nodes with their resources");
  auto lost = std::make_shared<bool>(false);
  status->add_flag("--include-lost", *lost, "Also list nodes declared lost");
  status->callback([&ctx, lost] { clusterStatus(ctx, ctx.json, *lost); });
}

}  // namespace morpheus::cli
