// The plan (docs/design/planner.md): a periodic part over [0, LCM) and a one-off part
// over a rolling horizon, both run-length encoded in plan steps. Periodic
// offsets are epoch-aligned: the offset of absolute time t is
// (t ms since epoch) mod LCM. Periodic reservations have strict priority
// (Morpheus §6): one-off reservations are planned on the residual capacity.
//
// As in YARN, the plan has a read view (PlanView, handed to agents and
// sharing policies) and an edit interface (PlanEdit, used only by the owner,
// Planner). Pure data structure: no I/O, no threads, no clock. Not
// thread-safe; the RM's scheduler strand owns it.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <unordered_map>
#include <utility>
#include <vector>

#include "common/clock.h"
#include "common/ids.h"
#include "common/resource.h"
#include "common/status.h"
#include "planner/reservation.h"
#include "planner/rle.h"

namespace morpheus::planner {

struct PlanOptions {
  Millis step{60'000};     // plan step; default 60 s
  Millis lcm{86'400'000};  // periodic part length; default 1 day; multiple of step
  Millis one_off_horizon{7 *
                         86'400'000};  // one-off deadlines lie within now + horizon; default 7 days
};

// Extra capacity granted to a running instance by DRA (Morpheus §7), held over
// whole plan steps [start_step, end_step) in the one-off part.
struct Extra {
  int64_t start_step = 0;
  int64_t end_step = 0;
  Resource resource;
};

// An admitted reservation as the plan holds it.
struct PlannedReservation {
  ReservationId id;
  ReservationDefinition def;
  Placement placement;
  uint64_t accepted_seq = 0;  // acceptance order (capacity drops remove last-accepted first)
  std::vector<Extra> extras;
};

// A read-only snapshot of what an agent needs to place one definition, in
// window steps: step j is absolute plan step first_step + j of the first
// instance. For a periodic definition load[j] is, per dimension, the maximum
// over all instances in the LCM of the PERIODIC load at that offset (so every
// instance fits; Morpheus §6, multiple instances). One-offs are ignored:
// periodic jobs have strict priority, and the Planner re-plans the one-offs a
// new periodic placement displaces. For a one-off definition load[j] is
// periodic + one-off load (with extras) at that absolute step.
struct PlanningProblem {
  const ReservationDefinition* def = nullptr;  // not owned; outlives the problem
  Millis step{60'000};
  int64_t first_step = 0;
  int64_t window = 0;  // number of eligible steps (may be 0)
  Resource capacity;
  std::vector<Resource> load;     // size window
  std::vector<int64_t> duration;  // per stage, in steps (ceil)
  double center = 0;              // (arrival + deadline) / 2 in window steps
};

class PlanView {
 public:
  virtual ~PlanView() = default;
  virtual const PlanOptions& options() const = 0;
  virtual const Resource& capacity() const = 0;
  // Total load (periodic + one-off + extras) at absolute time t. O(log n).
  virtual Resource loadAt(TimePoint t) const = 0;
  // Periodic load at absolute time t (by its offset in the LCM).
  virtual Resource periodicLoadAt(TimePoint t) const = 0;
  // Total load over [from, to) as runs in absolute time (zero runs included).
  virtual std::vector<AllocationInterval> planLoad(TimePoint from, TimePoint to) const = 0;
  virtual const PlannedReservation* find(const ReservationId& id) const = 0;
  // All admitted reservations in acceptance order.
  virtual std::vector<const PlannedReservation*> reservations() const = 0;
  // What `id` is guaranteed at absolute time t (placement of the instance
  // containing t plus active extras); zero when unknown. O(log n).
  virtual Resource guaranteedAt(const ReservationId& id, TimePoint t) const = 0;
  // The instance of `id` whose period [arrival + k*period, arrival + (k+1)*period)
  // contains t (one-off: instance 0). nullopt when unknown.
  virtual std::optional<InstanceWindow> instanceAt(const ReservationId& id, TimePoint t) const = 0;
  // The problem an agent solves to place `def` at `now` on this plan. `def`
  // must be valid (validateDefinition) and must outlive the result.
  virtual PlanningProblem problemFor(const ReservationDefinition& def, TimePoint now) const = 0;
};

class PlanEdit : public PlanView {
 public:
  // Adds an admitted reservation without checking capacity (restore must
  // reproduce persisted state even before nodes re-register). Requires
  // step-aligned allocations inside [arrival, deadline) and a period matching
  // the definition: INVALID_ARGUMENT otherwise, ALREADY_EXISTS for a known id.
  virtual Status add(const ReservationId& id, const ReservationDefinition& def,
                     const Placement& placement, uint64_t accepted_seq) = 0;
  // Removes the reservation and its extras. NOT_FOUND when unknown.
  virtual Status remove(const ReservationId& id) = 0;
  virtual void setCapacity(const Resource& capacity) = 0;
  // Holds `extra` for `id` over the steps covering [from, to) without checks.
  virtual Status addExtra(const ReservationId& id, const Resource& extra, TimePoint from,
                          TimePoint to) = 0;
  // Releases the part of `id`'s extras from the step containing `from` on.
  virtual Status removeExtrasFrom(const ReservationId& id, TimePoint from) = 0;
};

// The admitted reservations by id, with their acceptance order (ties by id)
// kept as they are added and erased: Plan::reservations() reads it instead
// of sorting every reservation at each call (once per admission, quadratic
// over 10,000 admissions). A copy (Planner::clone) orders its own
// reservations, not the source's.
class ReservationTable {
 public:
  ReservationTable() = default;
  ReservationTable(const ReservationTable& other);
  ReservationTable& operator=(const ReservationTable& other);

  const PlannedReservation* find(const ReservationId& id) const;
  PlannedReservation* find(const ReservationId& id);
  // Requires an id not in the table.
  void add(PlannedReservation r);
  // Requires an id in the table.
  void erase(const ReservationId& id);
  std::vector<const PlannedReservation*> inOrder() const;

 private:
  void reindex();
  std::unordered_map<ReservationId, PlannedReservation> by_id_;
  // Pointers into by_id_'s nodes, which a rehash does not move.
  std::map<std::pair<uint64_t, ReservationId>, const PlannedReservation*> order_;
};

class Plan final : public PlanEdit {
 public:
  // `options` must be valid (positive step dividing lcm); checked with MORPHEUS_CHECK.
  Plan(const PlanOptions& options, const Resource& capacity);

  const PlanOptions& options() const override { return options_; }
  const Resource& capacity() const override { return capacity_; }
  Resource loadAt(TimePoint t) const override;
  Resource periodicLoadAt(TimePoint t) const override;
  std::vector<AllocationInterval> planLoad(TimePoint from, TimePoint to) const override;
  const PlannedReservation* find(const ReservationId& id) const override;
  std::vector<const PlannedReservation*> reservations() const override;
  Resource guaranteedAt(const ReservationId& id, TimePoint t) const override;
  std::optional<InstanceWindow> instanceAt(const ReservationId& id, TimePoint t) const override;
  PlanningProblem problemFor(const ReservationDefinition& def, TimePoint now) const override;
  // guaranteedAt and instanceAt of a reservation already found (find), and
  // the two parts of its guarantee at t: its placement's (placedOf) and its
  // DRA extras' (extraOf). For a caller asking several times of one
  // reservation (the simulator's DRA review), without a lookup by id each.
  // `r` must be this plan's, unchanged since it was found. O(log n).
  Resource guaranteedOf(const PlannedReservation& r, TimePoint t) const;
  InstanceWindow instanceOf(const PlannedReservation& r, TimePoint t) const;
  Resource placedOf(const PlannedReservation& r, TimePoint t) const;
  Resource extraOf(const PlannedReservation& r, TimePoint t) const;

  Status add(const ReservationId& id, const ReservationDefinition& def, const Placement& placement,
             uint64_t accepted_seq) override;
  Status remove(const ReservationId& id) override;
  void setCapacity(const Resource& capacity) override { capacity_ = capacity; }
  Status addExtra(const ReservationId& id, const Resource& extra, TimePoint from,
                  TimePoint to) override;
  Status removeExtrasFrom(const ReservationId& id, TimePoint from) override;

  // Step arithmetic (floor / ceil of t in plan steps; offsets mod the LCM).
  int64_t stepFloor(TimePoint t) const;
  int64_t stepCeil(TimePoint t) const;
  TimePoint stepTime(int64_t step) const { return fromEpochMs(step * step_ms_); }
  int64_t lcmSteps() const { return lcm_steps_; }
  // Load at absolute plan step s (periodic + one-off + extras).
  Resource loadAtStep(int64_t s) const;
  Resource periodicAtStep(int64_t s) const;
  // Dense periodic load by LCM offset, and the one-off part over [from, to).
  std::vector<Resource> periodicDense() const;
  void oneOffDense(int64_t from, int64_t to, std::vector<Resource>& out) const;
  // Drops one-off load before step s (the rolling horizon moves on).
  void trimBefore(int64_t s);
  // Whether some reservation is a one-off or holds DRA extras (what a
  // periodic admission may displace), without a walk over the reservations
  // (Planner::displaceOneOffs asked at every admission). O(1).
  bool hasDisplaceable() const { return displaceable_ > 0; }
  // Counts the reservations added and removed: a pointer find gave stays
  // valid while this is unchanged (extras are changed in place), so a
  // caller may keep it instead of looking the id up again. Of this object
  // only (a copy's pointers are its own).
  uint64_t edits() const { return edits_; }

 private:
  // Adds (sign=+1) or removes (sign=-1) a placement's load.
  void apply(const ReservationDefinition& def, const Placement& placement, int sign);
  void applyPeriodic(int64_t start_step, int64_t end_step, const Resource& r);
  // One-off edits are clipped to steps >= trimmed_before_ (load before it is gone).
  void applyOneOff(int64_t start_step, int64_t end_step, const Resource& r);

  PlanOptions options_;
  int64_t step_ms_;
  int64_t lcm_steps_;
  Resource capacity_;
  RleResource periodic_;  // keys: offset steps in [0, lcm_steps_)
  RleResource one_off_;   // keys: absolute plan steps (one-off placements and extras)
  int64_t trimmed_before_ = INT64_MIN;
  ReservationTable reservations_;
  // The reservations that are one-offs or hold extras (hasDisplaceable).
  int64_t displaceable_ = 0;
  uint64_t edits_ = 0;  // edits()
};

}  // namespace morpheus::planner
