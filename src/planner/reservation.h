// Reservation definitions (YARN RDL, docs/design/planner.md) and placements.
//
// A ReservationDefinition is what a user (or morpheus-inference, for a
// signed-off skyline) asks for; a Placement is what the planner granted. Both
// are plain structs: the RM persists and serialises them itself and reloads
// them with Planner::restore().
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/ids.h"
#include "common/resource.h"
#include "common/status.h"

namespace morpheus::planner {

// How the stages of a definition combine (YARN ReservationRequestInterpreter).
enum class Interpreter {
  kAll,         // R_ALL: every stage, in any order, possibly overlapping
  kAny,         // R_ANY: any one stage is enough
  kOrder,       // R_ORDER: every stage, stage k+1 starts after stage k ends (gaps allowed)
  kOrderNoGap,  // R_ORDER_NO_GAP: as R_ORDER, and the whole allocation is contiguous
};

// "R_ALL", "R_ANY", "R_ORDER", "R_ORDER_NO_GAP".
const char* interpreterName(Interpreter i);
// Parses the names above; errors name `field`.
Result<Interpreter> parseInterpreter(const std::string& text, const std::string& field);

// One stage (YARN ReservationRequest): `num_containers` containers of
// `capability`, each for `duration`; at least `min_concurrency` of them (the
// gang) must run at the same time, so the stage is placed as gangs of
// `min_concurrency` containers x `duration` (plus one smaller gang for the
// remainder when min_concurrency does not divide num_containers).
struct ReservationStage {
  Resource capability;
  int64_t num_containers = 0;
  int64_t min_concurrency = 1;
  Millis duration{0};
};

// Accepted range of ReservationDefinition::priority; values outside are
// refused (validateDefinition), never clamped.
inline constexpr int kMinReservationPriority = 0;
inline constexpr int kMaxReservationPriority = 1000;

struct ReservationDefinition {
  UserId user;
  std::string queue;
  std::string name;
  JobKey recurrence_key;
  int priority = 0;  // [kMinReservationPriority, kMaxReservationPriority]
  // Window of the first instance: earliest start and deadline (absolute).
  TimePoint arrival;
  TimePoint deadline;
  // 0 = one-off; otherwise a divisor of the plan LCM and >= deadline - arrival.
  // Instance k has the window [arrival + k*period, deadline + k*period).
  Millis period{0};
  std::vector<ReservationStage> stages;
  Interpreter interpreter = Interpreter::kAll;
  // Morpheus §6: jobs whose runs drift get an alignment penalty steering the
  // allocation towards the middle of the window.
  bool problematic = false;
};

// How the steps of a skyline R* may be placed (Morpheus §5-§6; docs/design/planner.md:
// "min parallelism 1 unless overridden").
enum class SkylineSteps {
  // Default: each step is one gang of its height (min concurrency = its
  // containers), so the plan holds the shape the LP fitted, shifted within
  // the window, or refuses it. A stretched step gave a tight job a trickle of
  // containers it could not use across its stage barriers and the instance
  // missed anyway. In morpheus-sim whole steps give fewer violations, fewer
  // unreserved instances and a lower ad-hoc p95 than stretchable ones
  // (docs/experiments/simulator.md).
  kWhole,
  // Min concurrency 1: a step's demand may be stretched over later steps
  // when the plan is busy (the original rule).
  kStretchable,
};
// "whole", "stretchable".
const char* skylineStepsName(SkylineSteps s);
// Parses the names above; errors name `field`.
Result<SkylineSteps> parseSkylineSteps(const std::string& text, const std::string& field);

// A Morpheus skyline R* (containers per plan step, Morpheus §5) as
// R_ORDER_NO_GAP one-step stages, each placed as `steps` says. Zero steps
// carry no demand and are skipped (the order of the others is kept).
std::vector<ReservationStage> skylineStages(const std::vector<int64_t>& containers_per_step,
                                            const Resource& capability, Millis step,
                                            SkylineSteps steps);

// A periodic definition split into its instances over one LCM: instance i
// (0 <= i < lcm / period) keeps the stages and gets the window shifted by
// i x period and `lcm` as its period, so each recurs once per LCM at its own
// offset. Used when the plan cannot hold every instance of a recurring
// reservation: the instances it can hold are admitted one by one (the others
// run unreserved), instead of none of them. Empty unless `period`
// is positive and divides `lcm`.
std::vector<ReservationDefinition> instancesOverLcm(const ReservationDefinition& def, Millis lcm);

// Shortest time the definition can run in: the longest stage for R_ALL, the
// shortest for R_ANY, the sum for R_ORDER / R_ORDER_NO_GAP.
Millis minDuration(const ReservationDefinition& def);

// Input validation (docs/design/conventions.md "Errors"): INVALID_ARGUMENT whose message
// starts with the offending field ("deadline: ...", "stages[2].min_concurrency: ...").
// `capacity` is the cluster capacity (largest gang must fit), `lcm` the plan
// period, `horizon` the one-off planning horizon from `now`. Every product
// (capability x min_concurrency, capability x num_containers) and the sum of
// the stages is overflow-checked. Field names are the planner's own
// ("stages[i].duration"); the RM's API edges rename them to their wire paths.
Status validateDefinition(const ReservationDefinition& def, const Resource& capacity, Millis lcm,
                          Millis horizon, TimePoint now);

// The most a definition can hold at one instant: the sum over stages of
// capability x num_containers (R_ANY: the per-dimension max). nullopt on
// overflow.
std::optional<Resource> peakDemand(const ReservationDefinition& def);

// One YARN "resource-allocation": `resource` held over [start, end).
struct AllocationInterval {
  TimePoint start;
  TimePoint end;
  Resource resource;
  bool operator==(const AllocationInterval&) const = default;
};

struct StagePlacement {
  int stage = 0;  // index into ReservationDefinition::stages
  std::vector<AllocationInterval> allocations;
  bool operator==(const StagePlacement&) const = default;
};

// What the planner granted. Times are absolute and plan-step aligned, for the
// first instance (the one whose window is [arrival, deadline)); instance k of a
// periodic reservation holds the same allocation shifted by k*period.
struct Placement {
  Millis period{0};
  // Total allocation: sorted, non-overlapping, no zero runs.
  std::vector<AllocationInterval> allocations;
  // Per stage (stages that received nothing, e.g. unused R_ANY stages, are absent).
  std::vector<StagePlacement> stages;
  double cost = 0;    // agent's cost of the whole allocation (informational)
  std::string agent;  // which agent produced it
  bool operator==(const Placement&) const = default;
};

// Checks a stored placement against its definition (restore of persisted
// state, docs/design/ha.md): every allocation inside [arrival, deadline), none
// larger than peakDemand(def) at any instant, and the total area (resource x
// time) no larger than the stages need with each duration rounded up to
// `step`. INVALID_ARGUMENT naming the allocation otherwise.
Status checkPlacement(const ReservationDefinition& def, const Placement& placement, Millis step);

// Which instance of a reservation is current at some time.
struct InstanceWindow {
  int64_t index = 0;  // k; always 0 for one-off reservations
  TimePoint start;    // arrival + k*period
  TimePoint end;      // deadline + k*period
};

}  // namespace morpheus::planner
