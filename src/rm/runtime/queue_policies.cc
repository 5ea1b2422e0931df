#include "rm/runtime/queue_policies.h"

#include "scheduler/policies/policy_factory.h"

namespace morpheus::rm {

Status resolveQueuePolicies(const std::map<std::string, std::string>& by_path,
                            const std::set<std::string>& leaves, RuntimeOptions* out) {
  std::map<std::string, std::shared_ptr<const sched::QueueOrderingPolicy>> policies;
  for (const auto& [path, name] : by_path) {
    const std::string field = "scheduler.policy." + path;
    if (leaves.count(path) == 0)
      return invalidArgument(field, "'" + path + "' is not an ad-hoc leaf queue");
    MORPHEUS_ASSIGN_OR_RETURN(policies[path], sched::makeOrderingPolicy(name, field));
  }
  out->queue_policies = std::move(policies);
  return Status::ok();
}

}  // namespace morpheus::rm
