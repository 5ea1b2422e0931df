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
    printJson("queues", arr);
    return;
  }
  auto res = [](const v1::Resource& r) { return formatResource(r.memory_mib(), r.vcores()); };
  Table t({"QUEUE", "KIND", "WEIGHT", "GUARANTEED", "USED", "PENDING", "RUNNING", "WAITING"});
  for (const auto& q : resp.queues()) {
    // A reservation queue gets its guarantee, not a share by weight.
    char weight[32] = "-";
    if (q.kind().rfind("reservation", 0) != 0)
      std::snprintf(weight, sizeof weight, "%.2f", q.weight());
    t.add({q.name(), q.kind().empty() ? "-" : q.kind(), weight, res(q.guaranteed()), res(q.used()),
           res(q.pending()), std::to_string(q.running_apps()), std::to_string(q.pending_apps())});
  }
  t.print();
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
