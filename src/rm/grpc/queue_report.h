// Per-queue report of the RM (ListQueues; the REST scheduler view):
// the scheduler core's queues joined with the app records (running and
// pending apps) and the plan (reservation queues with no bound app yet, at
// their current guarantee). docs/design/scheduler.md: every admitted reservation is a
// queue whose guarantee is its plan allocation now.
#pragma once

#include <vector>

#include "morpheus/v1/client.pb.h"
#include "rm/core/app_manager.h"
#include "rm/core/reservation_manager.h"
#include "rm/runtime/runtime.h"

namespace morpheus::rm {

// The ad-hoc hierarchy in path order ("root" first; kind "adhoc" for
// leaves, "adhoc-parent" for parents, whose figures include their
// descendants), then every reservation queue in id order (kind
// "reservation-periodic" or "reservation-oneoff", named by the reservation
// id, weight 1). running_apps / pending_apps count apps RUNNING / SUBMITTED.
// Ad-hoc queues carry their scheduler.max-resources and
// scheduler.max-running-apps when set.
// Thread-safe: reads each source under its own lock (figures of different
// sources may be a few milliseconds apart). `reservations` null = only the
// reservation queues the scheduler knows (those with bound apps).
std::vector<v1::QueueReport> queueReports(const RmRuntime& runtime, const AppManager& apps,
                                          const ReservationManager* reservations, TimePoint now);

}  // namespace morpheus::rm
