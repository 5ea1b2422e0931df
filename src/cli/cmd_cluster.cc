#include "cli/cmd_cluster.h"

#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

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
  std::printf("%-16s %-14s %-8s %-8s %s\n", "CLASS", "PATTERN", "AVERAGE", "PEAK", "NODES");
  for (const auto& c : nodes.harvest_classes()) {
    std::printf("%-16s %-14s %-8.2f %-8.2f %d\n", c.id().c_str(), c.pattern().c_str(), c.average(),
                c.peak(), c.node_ids_size());
  }
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
      j["nodes"].push_back(
          {{"node_id", n.node_id()},
           {"state", n.state() == v1::NodeReport::NODE_STATE_RUNNING ? "RUNNING" : "LOST"},
           {"address", n.container_manager_address()},
           {"http_address", n.http_address()},
           {"total", resourceJson(n.total())},
           {"used", resourceJson(n.used())},
           {"containers", n.num_containers()},
           {"attributes", attrs},
           {"harvest_class", n.harvest_class()},
           {"last_heartbeat_ms", n.last_heartbeat_ms()}});
    }
    j["harvest_classes"] = harvestClassesJson(nodes);
    std::cout << j.dump(2) << "\n";
    return;
  }
  std::printf(
      "RM %s: %d live node(s), %d lost; capacity memory %lld MiB, vcores %lld; used memory "
      "%lld MiB, vcores %lld\n",
      ctx.rm_address.c_str(), metrics.live_nodes(), metrics.lost_nodes(),
      static_cast<long long>(metrics.total().memory_mib()),
      static_cast<long long>(metrics.total().vcores()),
      static_cast<long long>(metrics.used().memory_mib()),
      static_cast<long long>(metrics.used().vcores()));
  std::printf("%-24s %-8s %-20s %-12s %-10s %-16s %s\n", "NODE", "STATE", "MEMORY MiB (used/total)",
              "VCORES", "CONTAINERS", "HARVEST CLASS", "ATTRIBUTES");
  for (const auto& n : nodes.nodes()) {
    char mem[64], cpu[32];
    std::snprintf(mem, sizeof mem, "%lld/%lld", static_cast<long long>(n.used().memory_mib()),
                  static_cast<long long>(n.total().memory_mib()));
    std::snprintf(cpu, sizeof cpu, "%lld/%lld", static_cast<long long>(n.used().vcores()),
                  static_cast<long long>(n.total().vcores()));
    std::string attrs;  // The resource kinds constraints match
    for (const auto& a : n.attributes())
      attrs += (attrs.empty() ? "" : ",") + a.key() + "=" + a.value();
    std::printf("%-24s %-8s %-20s %-12s %-10d %-16s %s\n", n.node_id().c_str(),
                n.state() == v1::NodeReport::NODE_STATE_RUNNING ? "RUNNING" : "LOST", mem, cpu,
                n.num_containers(), n.harvest_class().empty() ? "-" : n.harvest_class().c_str(),
                attrs.empty() ? "-" : attrs.c_str());
  }
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
