#include "rm/runtime/queue_policies.h"

#include <cmath>
#include <sstream>

#include "scheduler/policies/policy_factory.h"

namespace morpheus::rm {

Status validateCarbyneRmOptions(const CarbyneRmOptions& carbyne) {
  if (!(carbyne.reservable_nodes > 0 && carbyne.reservable_nodes <= 1)) {
    std::ostringstream v;
    v << carbyne.reservable_nodes;
    return invalidArgument("scheduler.carbyne.reservable-nodes",
                           v.str() +
                               " is out of range (0, 1] (to turn node reservations off, set "
                               "scheduler.carbyne.node-reservations: false)");
  }
  if (carbyne.node_reservation_timeout <= Millis(0))
    return invalidArgument("scheduler.carbyne.node-reservation-timeout", "must be > 0");
  return Status::ok();
}

Status validatePhoenixRmOptions(const PhoenixRmOptions& phoenix) {
  if (!(phoenix.long_share > 0 && phoenix.long_share <= 1))
    return invalidArgument("scheduler.phoenix.long-share", "must be in (0, 1]");
  if (!(phoenix.reserve_factor >= 0 && std::isfinite(phoenix.reserve_factor)))
    return invalidArgument("scheduler.phoenix.reserve-factor", "must be a number >= 0");
  return Status::ok();
}

Status resolveQueuePolicies(const std::map<std::string, std::string>& by_path,
                            const std::set<std::string>& leaves, const CarbyneRmOptions& carbyne,
                            RuntimeOptions* out, const PhoenixRmOptions& phoenix) {
  MORPHEUS_RETURN_IF_ERROR(validateCarbyneRmOptions(carbyne));
  MORPHEUS_RETURN_IF_ERROR(validatePhoenixRmOptions(phoenix));
  sched::PolicySettings settings;
  settings.phoenix.long_task = phoenix.long_task;
  settings.phoenix.long_share = phoenix.long_share;
  settings.phoenix.reserve_factor = phoenix.reserve_factor;
  settings.carbyne.reserve_nodes = carbyne.node_reservations;
  settings.carbyne.decline_slack = carbyne.decline_slack;
  settings.carbyne.count_needed = carbyne.count_needed_tasks;
  std::map<std::string, std::shared_ptr<const sched::QueueOrderingPolicy>> policies;
  for (const auto& [path, name] : by_path) {
    const std::string field = "scheduler.policy." + path;
    if (leaves.count(path) == 0)
      return invalidArgument(field, "'" + path + "' is not an ad-hoc leaf queue");
    MORPHEUS_ASSIGN_OR_RETURN(policies[path], sched::makeOrderingPolicy(name, field, settings));
  }
  out->queue_policies = std::move(policies);
  out->node_reservation.reservable_nodes = carbyne.reservable_nodes;
  out->node_reservation.timeout = carbyne.node_reservation_timeout;
  return Status::ok();
}

}  // namespace morpheus::rm
