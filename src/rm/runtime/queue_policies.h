// scheduler.policy, scheduler.carbyne.* and scheduler.phoenix.*: the configured ordering policy of
// each ad-hoc leaf queue and the node reservations of its Carbyne leaves,
// resolved once at start-up into RuntimeOptions.
#pragma once

#include <map>
#include <set>
#include <string>

#include "common/status.h"
#include "rm/core/rm_options.h"
#include "rm/runtime/runtime.h"

namespace morpheus::rm {

// INVALID_ARGUMENT naming the scheduler.carbyne.* key of a value out of
// range (beyond the schema's own bounds: reservable-nodes 0, a timeout of 0).
Status validateCarbyneRmOptions(const CarbyneRmOptions& carbyne);
// The same for scheduler.phoenix.* (long-share 0).
Status validatePhoenixRmOptions(const PhoenixRmOptions& phoenix);

// `by_path`: leaf path -> policy name (sched::makeOrderingPolicy's names);
// `leaves`: the configured leaf queues; `carbyne`: the settings of every
// carbyne leaf (its policy's node reservations) and the bounds of node
// reservations (out->node_reservation). INVALID_ARGUMENT naming
// "scheduler.policy.<path>" for an unknown policy or a path that is not a
// leaf, or validateCarbyneRmOptions's error; `out` is then unchanged.
// `phoenix`: the long-work cap of every phoenix leaf (validatePhoenixRmOptions).
Status resolveQueuePolicies(const std::map<std::string, std::string>& by_path,
                            const std::set<std::string>& leaves, const CarbyneRmOptions& carbyne,
                            RuntimeOptions* out, const PhoenixRmOptions& phoenix = {});

}  // namespace morpheus::rm
