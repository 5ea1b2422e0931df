// Ordering policies by config name (scheduler.policy per ad-hoc
// queue). One line per policy in policy_factory.cc; the list of names in the
// error message and in policyNames() comes from the same table. The factory
// knows nothing of extension points: a policy is returned as its
// QueueOrderingPolicy, and the scheduler finds the points it provides when
// it installs it (ordering_policy.h, extensionPoints). Stateless and
// thread-safe; the returned policies are immutable and may be shared.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "scheduler/ordering_policy.h"

namespace morpheus::sched {

// Every accepted name, in table order ("drf", "fifo", "carbyne", ...).
std::vector<std::string> policyNames();

// The policy called `name`; INVALID_ARGUMENT naming `field` (e.g.
// "scheduler.policy.root.default") for an unknown name, listing the known ones.
Result<std::shared_ptr<const QueueOrderingPolicy>> makeOrderingPolicy(std::string_view name,
                                                                      std::string_view field);

}  // namespace morpheus::sched
