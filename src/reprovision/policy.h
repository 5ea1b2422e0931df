// Dynamic reprovisioning (DRA) policies, Morpheus §7. Pure: no I/O, no
// threads, no clock — the RM's monitoring thread gathers a ReprovisionInput
// for each running reservation once per step and asks the configured policy
// for a decision. The RM then asks the planner for room (current instance
// only) and charges the owner's budget; the policy never sees the plan.
//
// Policies are stateless and re-entrant (CONVENTIONS.md "Shape"): anything
// that must persist between steps (e.g. Jockey's dead-zone reference) comes
// in through the input.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/ids.h"
#include "common/status.h"

namespace morpheus::reprovision {

// What the RM knows about one running reservation at the current step.
// Container counts are in units of the reservation's container size.
struct ReprovisionInput {
  ReservationId reservation;
  TimePoint now;
  Millis step{60000};
  int64_t used_containers = 0;     // containers of the bound apps in use now
  int64_t pending_containers = 0;  // outstanding asks of the bound apps
  int64_t skyline_now = 0;         // planned containers (guarantee) at the current step,
                                   // excluding extra already granted
  int64_t extra_now = 0;           // extra containers granted earlier and still active
  // Planned containers over the last R_recent, oldest first (current step last).
  std::vector<int64_t> skyline_recent;
  int64_t budget_remaining_container_ms = 0;  // what is left of the owner's signed-off budget

  // Progress (Jockey): AM-reported progress in [0,1] and the instance timing.
  double progress = 0;
  TimePoint instance_start;
  TimePoint deadline;
  // Total work of one instance in container-ms (the skyline's area unless the
  // AM reports better), and the remaining critical path (longest chain of
  // unfinished work that cannot be parallelised), duration.
  int64_t total_work_container_ms = 0;
  Millis critical_path_remaining{0};
  // Work done so far in this instance (containers in use integrated over
  // time). With progress p it gives the observed total work done / p, which
  // Jockey takes when it exceeds the history's: a slowed run (longer tasks,
  // bigger input) is predicted from what it actually does.
  int64_t work_done_container_ms = 0;
};

// A proposal: hold `extra_containers` on top of the plan for `duration`,
// starting now. It replaces any earlier grant (grants are re-evaluated every
// step and lapse after their duration); nullopt means "no extra needed".
struct ReprovisionDecision {
  int64_t extra_containers = 0;
  Millis duration{0};
  std::string rationale;  // for logs and `reservation show`
};

class ReprovisionPolicy {
 public:
  virtual ~ReprovisionPolicy() = default;
  virtual std::string name() const = 0;
  // nullopt: no change needed. A decision never exceeds what the job asks for
  // (demand above the plan) nor the remaining budget.
  virtual std::optional<ReprovisionDecision> decide(const ReprovisionInput& in) const = 0;
};

// Morpheus §7: rho, T and R_recent as in the paper (defaults rho = 2, T = 60 s,
// R_recent = 2 min; R_recent is applied by the caller when it fills
// skyline_recent, and kept here for documentation and validation).
struct MorpheusDraOptions {
  double rho = 2.0;
  Millis extension{60000};  // T: how long a grant lasts before re-evaluation
  Millis recent{120000};    // R_recent
};

// Jockey (EuroSys'12) style: smallest allocation a with
// now + (S + P/a) * (1 + slack) <= deadline, P = remaining work, S = remaining
// critical path; no change while the needed allocation is within `dead_zone`
// (fraction) of the current one (an active extra is then renewed as it is).
struct JockeyOptions {
  double slack = 0.2;
  double dead_zone = 0.1;
  Millis extension{60000};
  int64_t max_extra_containers = 1 << 30;
};

std::unique_ptr<ReprovisionPolicy> makeMorpheusDra(const MorpheusDraOptions& opts);
std::unique_ptr<ReprovisionPolicy> makeJockey(const JockeyOptions& opts);

// Chooses by name: "morpheus-dra" or "jockey". INVALID_ARGUMENT naming
// `field` otherwise.
Result<std::unique_ptr<ReprovisionPolicy>> makePolicy(const std::string& name,
                                                      const MorpheusDraOptions& dra,
                                                      const JockeyOptions& jockey,
                                                      const std::string& field);

}  // namespace morpheus::reprovision
