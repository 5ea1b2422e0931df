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
#include "scheduler/policies/carbyne_policy.h"
#include "scheduler/policies/phoenix_policy.h"

namespace morpheus::sched {

// Settings of the policies that take any, applied to every policy of that
// name the factory makes (the RM's scheduler.carbyne.* keys).
struct PolicySettings {
  LeftoverPacking carbyne;  // carbyne: the leftover's SRTF weight, node reservations
  PhoenixLongWork phoenix;  // phoenix: long work on scarce constraint kinds
};

// Every accepted name, in table order ("drf", "fifo", "carbyne", ...).
std::vector<std::string> policyNames();

// The policy called `name`, built with `settings`; INVALID_ARGUMENT naming
// `field` (e.g. "scheduler.policy.root.default") for an unknown name, listing
// the known ones. `settings` is not validated (LeftoverPacking has no
// invalid value).
Result<std::shared_ptr<const QueueOrderingPolicy>> makeOrderingPolicy(
    std::string_view name, std::string_view field, const PolicySettings& settings = {});

}  // namespace morpheus::sched
