#include "cli/cmd_queue.h"

#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include "morpheus/v1/client.grpc.pb.h"

namespace morpheus::cli {

namespace {

nlohmann::json resourceJson(const v1::Resource& r) {
  return {{"memory_mib", r.memory_mib()}, {"vcores", r.vcores()}};
}

std::string shortResource(const v1::Resource& r) {
  return std::to_string(r.memory_mib()) + "M/" + std::to_string(r.vcores()) + "c";
}

void listQueues(const CliContext& ctx, bool json) {
  v1::ListQueuesResponse resp;
  checkCall(callRm(ctx, &v1::ClientService::Stub::ListQueues, v1::ListQueuesRequest(), &resp,
                   Millis(5000), CallKind::kIdempotent),
            "RM at " + rmChannel(ctx).current());
  if (json) {
    nlohmann::json arr = nlohmann::json::array();
    for (const auto& q : resp.queues()) {
      arr.push_back({{"name", q.name()},
                     {"kind", q.kind()},
                     {"weight", q.weight()},
                     {"guaranteed", resourceJson(q.guaranteed())},
                     {"used", resourceJson(q.used())},
                     {"pending", resourceJson(q.pending())},
                     {"running_apps", q.running_apps()},
                     {"pending_apps", q.pending_apps()}});
    }
    std::cout << nlohmann::json{{"queues", arr}}.dump(2) << "\n";
    return;
  }
  std::printf("%-34s %-21s %6s %-14s %-14s %-14s %7s %7s\n", "QUEUE", "KIND", "WEIGHT",
              "GUARANTEED", "USED", "PENDING", "RUNNING", "WAITING");
  for (const auto& q : resp.queues()) {
    std::printf("%-34s %-21s %6.2f %-14s %-14s %-14s %7d %7d\n", q.name().c_str(), q.kind().c_str(),
                q.weight(), shortResource(q.guaranteed()).c_str(), shortResource(q.used()).c_str(),
                shortResource(q.pending()).c_str(), q.running_apps(), q.pending_apps());
  }
}

}  // namespace

void addQueueCommands(CLI::App& root, CliContext& ctx) {
  auto* queue = root.add_subcommand("queue", "Scheduler queues (ad hoc and reservations)");
  queue->require_subcommand(1);
  auto* list = queue->add_subcommand(
      "list", "Every queue: weight, guarantee, usage, pending, running and waiting apps");
  list->callback([&ctx] { listQueues(ctx, ctx.json); });
}

}  // namespace morpheus::cli
