// Admission-time sharing policies (YARN SharingPolicy): after an agent has
// proposed a placement and before it is committed, the configured policy may
// refuse it. Stateless and re-entrant; chosen by name (docs/design/conventions.md "Shape").
//
//  - "no-overcommit": the proposal plus the plan's load fits the capacity at
//    every step of every instance (YARN NoOverCommitPolicy); for a periodic
//    definition the periodic load only (strict priority, Morpheus §6).
//  - "capacity-over-time": per user, the user's reservations (including the
//    proposal) may hold at most `instantaneous_max_share` of the cluster at
//    any step, and at most `average_share` on average over any window of
//    `average_window` (YARN CapacityOverTimePolicy).
#pragma once

#include <memory>
#include <string>

#include "common/status.h"
#include "planner/plan.h"

namespace morpheus::planner {

struct SharingPolicyOptions {
  double instantaneous_max_share = 1.0;  // fraction of capacity (dominant share); default 1.0
  double average_share = 1.0;         // fraction of capacity averaged over the window; default 1.0
  Millis average_window{86'400'000};  // averaging window; default 1 day
};

class SharingPolicy {
 public:
  virtual ~SharingPolicy() = default;
  virtual std::string name() const = 0;
  // OK to admit `proposal` for `id` (which is not in `plan`; an update removes
  // the old placement first). kInfeasible with a message starting with the
  // policy name otherwise.
  virtual Status check(const PlanView& plan, const ReservationId& id,
                       const ReservationDefinition& def, const Placement& proposal,
                       TimePoint now) const = 0;
};

// "no-overcommit" or "capacity-over-time"; INVALID_ARGUMENT naming the field otherwise.
Result<std::unique_ptr<SharingPolicy>> makeSharingPolicy(const std::string& name,
                                                         const SharingPolicyOptions& options = {});

}  // namespace morpheus::planner
