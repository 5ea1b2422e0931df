#include "rm/scheduler/ordering_policy.h"

#include <string>

#include "rm/scheduler/phoenix_policy.h"

namespace morpheus::sched {

double DrfOrderingPolicy::score(const Resource& used, double weight,
                                const Resource& cluster) const {
  return used.dominantShare(cluster) / weight;
}

Result<std::shared_ptr<const QueueOrderingPolicy>> makeQueueOrderingPolicy(std::string_view name,
                                                                           std::string_view field) {
  if (name == "drf")
    return std::shared_ptr<const QueueOrderingPolicy>(std::make_shared<DrfOrderingPolicy>());
  if (name == "fifo")
    return std::shared_ptr<const QueueOrderingPolicy>(std::make_shared<FifoOrderingPolicy>());
  if (name == "phoenix")
    return std::shared_ptr<const QueueOrderingPolicy>(std::make_shared<PhoenixOrderingPolicy>());
  return invalidArgument(std::string(field), "unknown ordering policy '" + std::string(name) +
                                                 "' (drf, fifo, phoenix)");
}

}  // namespace morpheus::sched
