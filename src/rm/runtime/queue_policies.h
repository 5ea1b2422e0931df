// scheduler.policy: the configured ordering policy of each ad-hoc
// leaf queue, resolved once at start-up into RuntimeOptions::queue_policies.
#pragma once

#include <map>
#include <set>
#include <string>

#include "common/status.h"
#include "rm/runtime/runtime.h"

namespace morpheus::rm {

// `by_path`: leaf path -> policy name (sched::makeOrderingPolicy's names);
// `leaves`: the configured leaf queues. INVALID_ARGUMENT naming
// "scheduler.policy.<path>" for an unknown policy or a path that is not a
// leaf; `out` is then unchanged.
Status resolveQueuePolicies(const std::map<std::string, std::string>& by_path,
                            const std::set<std::string>& leaves, RuntimeOptions* out);

}  // namespace morpheus::rm
