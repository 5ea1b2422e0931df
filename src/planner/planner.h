// The planner the RM owns: a Plan plus the configured agent and
// sharing policy. Every call takes the current time as a parameter; nothing
// here reads a clock, blocks, or does I/O. Not thread-safe: one owner edits a
// Planner at a time. clone() gives a snapshot another thread may plan on
// (the RM plans off its lock on a clone and installs the clone when the plan
// did not change meanwhile).
//
// Admission (submit/update) is atomic: on any failure the plan is unchanged.
// Admitted reservations are never moved by later one-off submissions
// (Morpheus §6, incremental placement). Periodic reservations have strict
// priority: a periodic definition is planned on capacity minus periodic load
// only, and the one-offs it displaces are re-planned (DisplacementReport);
// otherwise only a capacity drop re-plans one-offs.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/ids.h"
#include "common/resource.h"
#include "common/status.h"
#include "planner/agent.h"
#include "planner/plan.h"
#include "planner/reservation.h"
#include "planner/sharing_policy.h"

namespace morpheus::planner {

struct PlannerOptions {
  Millis step{60'000};                           // plan step; default 60 s
  Millis lcm{86'400'000};                        // periodic part; default 1 day; multiple of step
  Millis one_off_horizon{7 * 86'400'000};        // one-off planning horizon; default 7 days
  std::string agent = "lowcost";                 // "lowcost" (Morpheus §6) or "greedy" (baseline)
  AgentOptions agent_options;                    // end points, alignment penalty weight
  std::string sharing_policy = "no-overcommit";  // or "capacity-over-time"
  SharingPolicyOptions sharing;                  // parameters of capacity-over-time
};

// Why a well-formed request could not be placed (returned with kInfeasible so
// the RM can expose it, e.g. in `reservation submit` errors).
struct InfeasibilityExplanation {
  int stage = -1;  // stage that could not be placed (-1 when not a stage problem)
  std::string reason;
  // Steps inside the window where not even one container of that stage fits
  // (absolute time, first instance), merged into ranges.
  std::vector<std::pair<TimePoint, TimePoint>> saturated;
  // Earliest deadline (same arrival, step granularity) at which the request
  // would fit; nullopt when none within the period (periodic) or horizon.
  std::optional<TimePoint> earliest_feasible_deadline;
  // How many containers of the failed stage would fit by the requested
  // deadline (the rest of the request unchanged); 0 when none.
  int64_t containers_fitting_by_deadline = 0;
  // One human-readable paragraph (also the Status message).
  std::string toString() const;
};

// What a capacity change did (Planner::setCapacity); the RM logs it and
// exports metrics.
struct CapacityChangeReport {
  std::vector<ReservationId> replanned;  // one-offs moved to a new placement
  // One-offs on overloaded steps that found no new placement: they keep their
  // placement (over capacity) until capacity returns or a later change
  // re-places them; never removed from the plan.
  std::vector<ReservationId> at_risk;
  std::vector<ReservationId> extras_released;  // reservations whose DRA extras were released
  // Periodic reservations holding allocation at an LCM offset where the
  // periodic load alone exceeds the new capacity (they keep their placement,
  // but the guarantee is no longer backed by capacity).
  std::vector<ReservationId> periodic_over_capacity;
  std::vector<std::pair<Millis, Millis>> over_capacity_offsets;  // [from, to) within the LCM
};

// What admitting a periodic reservation did to the one-offs it displaced
// (Morpheus §6, docs/design/planner.md: periodic jobs have strict priority, so a
// periodic definition is planned on capacity minus periodic load only).
struct DisplacementReport {
  // One-offs on steps where periodic + one-off load now exceeds capacity,
  // re-planned oldest first on the residual capacity.
  std::vector<ReservationId> replanned;
  // Displaced one-offs that fit nowhere else: they keep their placement (over
  // capacity) and are never removed; a later setCapacity re-tries them.
  std::vector<ReservationId> at_risk;
  // Reservations whose DRA extras on those steps were released first.
  std::vector<ReservationId> extras_released;
  // Every reservation changed above, as it was before (revertDisplacement).
  std::vector<PlannedReservation> before;
  bool empty() const { return before.empty(); }
};

// One row of `plan show` / YARN's reservation list.
struct PlacementSummary {
  ReservationId id;
  const ReservationDefinition* def = nullptr;  // owned by the planner; valid until the next edit
  const Placement* placement = nullptr;        // ditto
};

class Planner {
 public:
  // Validates the options (INVALID_ARGUMENT naming the option) and builds the
  // agent and sharing policy by name.
  static Result<std::unique_ptr<Planner>> create(const PlannerOptions& options,
                                                 const Resource& capacity);

  // An independent copy of the plan and its reservations, sharing the agent
  // and the sharing policy (stateless and re-entrant, so both copies may be
  // used from different threads). O(plan size). Every later call on the copy
  // decides exactly as the same call on the original would.
  std::unique_ptr<Planner> clone() const { return std::unique_ptr<Planner>(new Planner(*this)); }

  // Admits a new reservation. INVALID_ARGUMENT (field-named) for a bad
  // definition, ALREADY_EXISTS for a known id, kInfeasible when it cannot be
  // placed (then *explanation, if given, is filled) or the sharing policy
  // refuses it. On success the placement is committed and returned.
  // A periodic definition ignores one-off load; the one-offs it displaces
  // are re-planned or kept at risk, and *displaced (if given) says which.
  Result<Placement> submit(const ReservationId& id, const ReservationDefinition& def, TimePoint now,
                           InfeasibilityExplanation* explanation = nullptr,
                           DisplacementReport* displaced = nullptr);
  // Try-and-swap: re-plans `id` with `def` as if the old placement were gone;
  // on any failure the old placement stays and the plan is unchanged. A
  // periodic `def` displaces one-offs as in submit.
  Result<Placement> update(const ReservationId& id, const ReservationDefinition& def, TimePoint now,
                           InfeasibilityExplanation* explanation = nullptr,
                           DisplacementReport* displaced = nullptr);
  // Puts every reservation of `report.before` back as it was (placement,
  // acceptance order, extras): the caller's rollback of a periodic admission
  // it could not persist (after removing or restoring the periodic one).
  void revertDisplacement(const DisplacementReport& report);
  // Frees the reservation's capacity (placement and extras). NOT_FOUND when unknown.
  Status remove(const ReservationId& id);
  // Reloads a persisted reservation without re-planning; the allocations are
  // reproduced exactly. Capacity is not checked (nodes may not have
  // re-registered yet); call setCapacity afterwards to reconcile. A placement
  // that exceeds its definition (checkPlacement) is INVALID_ARGUMENT.
  Status restore(const ReservationId& id, const ReservationDefinition& def,
                 const Placement& placement);
  // Changes the cluster capacity. While some step of the horizon is
  // overloaded, DRA extras on overloaded steps are released, then one-off
  // reservations on overloaded steps are taken out last-accepted-first until
  // the one-off part fits, and re-planned oldest-first on the new capacity;
  // those that fit nowhere keep their old placement and are reported at_risk
  // (nothing is ever removed). Called again when capacity returns, the same
  // pass re-places at-risk one-offs (new placement) or finds their steps
  // backed again (absent from the report: no longer at risk). Periodic
  // reservations are never moved; those on overloaded offsets are reported.
  CapacityChangeReport setCapacity(const Resource& capacity, TimePoint now);
  // Sets the capacity without re-planning or releasing anything (the RM's
  // start-up grace, while nodes re-register).
  void setCapacityOnly(const Resource& capacity) { plan_.setCapacity(capacity); }

  // Releases `id`'s extras from the step containing `from` on.
  Status removeExtra(const ReservationId& id, TimePoint from);
  // DRA grant as a swap (Morpheus §7: a grant lasts T, then is re-evaluated):
  // releases `id`'s extras from the step containing `from` on, then holds
  // n x `unit` over [from, to), n the largest count <= max_count for which the
  // plan has room at every step (what was just released counts as room).
  // Returns n (0: nothing fits, no extra is held from `from` on); when
  // n < max_count, *limit (if given) names the step and load that capped it.
  // INVALID_ARGUMENT for a zero/negative unit or count, or a bad interval
  // (now <= from < to <= now + horizon), NOT_FOUND for an unknown id.
  Result<int64_t> setExtra(const ReservationId& id, const Resource& unit, int64_t max_count,
                           TimePoint from, TimePoint to, TimePoint now, std::string* limit);
  // DRA extras `id` holds at absolute time t (on top of its placement).
  Resource extraAt(const ReservationId& id, TimePoint t) const;
  // Rolling horizon: drops one-off reservations whose deadline is <= now and
  // one-off load before now; returns the removed ids.
  std::vector<ReservationId> expire(TimePoint now);

  // What `id` is guaranteed at absolute time t (plan follower, every step). O(log n).
  Resource guaranteedAt(const ReservationId& id, TimePoint t) const {
    return plan_.guaranteedAt(id, t);
  }
  std::optional<InstanceWindow> instanceAt(const ReservationId& id, TimePoint t) const {
    return plan_.instanceAt(id, t);
  }
  // The admitted reservation `id` (nullptr when unknown), for the by-reference
  // queries below; valid until the next change to the plan.
  const PlannedReservation* find(const ReservationId& id) const { return plan_.find(id); }
  // Changes whenever a reservation is added or removed (Plan::edits): find's
  // answer stays valid, and the same, while this is unchanged.
  uint64_t planEdits() const { return plan_.edits(); }
  Resource guaranteedOf(const PlannedReservation& r, TimePoint t) const {
    return plan_.guaranteedOf(r, t);
  }
  InstanceWindow instanceOf(const PlannedReservation& r, TimePoint t) const {
    return plan_.instanceOf(r, t);
  }
  Resource placedOf(const PlannedReservation& r, TimePoint t) const { return plan_.placedOf(r, t); }
  Resource extraOf(const PlannedReservation& r, TimePoint t) const { return plan_.extraOf(r, t); }
  Resource loadAt(TimePoint t) const { return plan_.loadAt(t); }
  std::vector<AllocationInterval> planLoad(TimePoint from, TimePoint to) const {
    return plan_.planLoad(from, to);
  }
  const Placement* placement(const ReservationId& id) const;
  std::vector<PlacementSummary> placements() const;  // acceptance order

  const PlanView& view() const { return plan_; }
  const Resource& capacity() const { return plan_.capacity(); }
  const PlannerOptions& options() const { return options_; }
  const ReservationAgent& agent() const { return *agent_; }

 private:
  Planner(const PlannerOptions& options, const Resource& capacity,
          std::unique_ptr<ReservationAgent> agent, std::unique_ptr<SharingPolicy> sharing);

  // Validates, proposes and checks the sharing policy (plan not modified).
  Result<Placement> propose(const ReservationId& id, const ReservationDefinition& def,
                            TimePoint now, InfeasibilityExplanation* explanation) const;
  InfeasibilityExplanation explain(const ReservationDefinition& def, const AgentFailure& failure,
                                   TimePoint now) const;
  bool fits(const ReservationDefinition& def, TimePoint now) const;
  // Resolves overloaded steps of the one-off part within the horizon (steps
  // where periodic + one-off load exceeds capacity; with a non-empty
  // `offsets` mask only steps whose LCM offset is set): releases DRA extras
  // there, takes one-offs there out last-accepted-first until none is
  // overloaded and re-plans them oldest first; those that fit nowhere keep
  // their old placement (at_risk). Never removes a reservation.
  DisplacementReport repairOneOffs(TimePoint now, const std::vector<bool>& offsets);
  // LCM offsets where `id` (periodic) holds allocation in some instance.
  std::vector<bool> periodicOffsets(const PlannedReservation& r) const;
  // After `id` was added: the one-offs a periodic `id` displaced.
  DisplacementReport displaceOneOffs(const ReservationId& id, TimePoint now);

  PlannerOptions options_;
  Planner(const Planner&) = default;  // clone()

  std::shared_ptr<const ReservationAgent> agent_;  // stateless: shared by clones
  std::shared_ptr<const SharingPolicy> sharing_;   // ditto
  Plan plan_;
  uint64_t next_seq_ = 1;
};

}  // namespace morpheus::planner
