// One DRA review of a reservation (Morpheus §7), the part the RM and the
// simulator share: the policy's input from what the plan and the bound apps
// show now, the per-instance state kept between reviews (progress against
// the plan, Jockey's previous allocation), and the owner's per-instance
// budget with the refund of a grant replaced or ended early.
//
// The RM's DraMonitor (rm/core/dra_monitor.h) and ReservationManager
// (reprovision, releaseExtras, draView) and morpheus-sim's DRA step
// (sim/engine/cluster_sim.cc) all go through these functions, so the
// simulator's decisions are the RM's arithmetic, not a copy of it. What
// differs between them stays with the caller: where the plan lives (the
// RM's planner under its lock, the simulator's own), logging, metrics and
// the reservation's history.
//
// Pure values and functions: no I/O, no clock, no locks. Each state object
// belongs to one reservation and is changed by one thread at a time (the
// caller's lock or strand).
#pragma once

#include <cstdint>
#include <deque>
#include <optional>
#include <utility>
#include <vector>

#include "common/clock.h"
#include "common/ids.h"
#include "common/resource.h"
#include "reprovision/policy.h"

namespace morpheus::reprovision {

// A DRA grant: `count` containers on top of the plan over [.., until).
struct Grant {
  int64_t count = 0;
  TimePoint until;

  bool activeAt(TimePoint now) const { return count > 0 && until > now; }
  // Its unexpired part at `now` in container-ms, 0 once it lapsed: what a
  // grant replacing it, or its release, gives back to the budget.
  int64_t refundAt(TimePoint now) const;
};

// The owner's reprovisioning budget of one reservation: container-ms per
// instance (signed off at submission), what the grants of instance
// `instance` used of it (-1: none yet). A new instance starts unspent.
struct InstanceBudget {
  int64_t budget_container_ms = 0;
  int64_t used_container_ms = 0;
  int64_t instance = -1;

  // What is left for instance `at_instance`, counting `refund` (the active
  // grant's unexpired part) as given back. >= 0.
  int64_t remaining(int64_t at_instance, int64_t refund) const;
  // `refund` given back (a grant ended early); the use stays >= 0.
  void giveBack(int64_t refund);
};

// A grant as a swap, in two steps around the planner: quote, then settle
// with what the plan had room for.
struct SwapQuote {
  int64_t refund = 0;      // the replaced grant's unexpired part
  int64_t affordable = 0;  // containers for the duration the budget allows
  int64_t want = 0;        // min(asked, affordable): what to ask the planner for
};
// Starts the budget's use afresh when `instance` is a new one, then prices
// `count` containers for `duration` (> 0) replacing `grant`. want == 0:
// the budget denies it whole and nothing is to be placed (the earlier grant
// stays).
SwapQuote quoteSwap(InstanceBudget& budget, const Grant& grant, int64_t instance, int64_t count,
                    Millis duration, TimePoint now);
// After the planner placed `granted` (<= q.want) containers for
// [now, now + duration): charges them, refunds the replaced grant and makes
// them the grant (count 0 when none were placed).
void settleSwap(InstanceBudget& budget, Grant& grant, const SwapQuote& q, int64_t granted,
                Millis duration, TimePoint now);
// Ends `grant` now (its apps are done) and refunds its unexpired part.
void releaseGrant(InstanceBudget& budget, Grant& grant, TimePoint now);

// Kept per reservation between reviews, for its current instance: the
// allocation the policy chose at the last review (Jockey's hysteresis,
// ReprovisionInput::previous_allocation) and the progress against the plan:
// containers used and guaranteed (plan + extra) summed over the reviews,
// x step, in container-ms (ReprovisionInput::used_container_ms_so_far,
// guaranteed_container_ms_so_far), since the instance's first review or over
// the reviews of the last `ahead_window` (reviewInput); `recent` holds each
// review's (used, guaranteed) of that window, oldest first. Reset when the
// instance changes.
struct ReviewState {
  int64_t instance = -1;
  int64_t allocation = 0;
  int64_t used_ms = 0;
  int64_t guaranteed_ms = 0;
  std::deque<std::pair<int64_t, int64_t>> recent;
};

// What one review sees, in resources: the plan's side (RM:
// ReservationManager::draView; simulator: its planner) and the bound apps'.
struct ReviewView {
  Resource unit;                              // the container size counts are in
  Resource used;                              // the bound apps' containers in use, AMs included
  Resource am;                                // of `used`: the AMs'
  Resource pending;                           // their outstanding asks
  Resource planned_now;                       // the plan at now, extras excluded
  Resource extra_now;                         // DRA extras held at now
  std::vector<Resource> planned_recent;       // recentPlanned over R_recent
  int64_t instance = 0;                       // index of the instance containing now
  TimePoint deadline;                         // its end
  int64_t budget_remaining_container_ms = 0;  // InstanceBudget::remaining
  std::vector<StageState> stages;             // Jockey's view of the bound apps
};

// The policy's input for a review of `reservation` at `now`, reviews `step`
// apart; resets `state` at a new instance and adds this review to its
// progress sums. `ahead_window` (MorpheusDraOptions::ahead_window) 0: the
// sums run from the instance's first review; > 0: over the reviews of the
// last ahead_window only (ceil(ahead_window / step) reviews), so a job that
// ran ahead early and fell behind later is judged on the later part. Counts
// are in `view.unit` (Resource::countCovering).
ReprovisionInput reviewInput(const ReservationId& reservation, TimePoint now, Millis step,
                             Millis ahead_window, ReviewView view, ReviewState& state);
// The policy's decision on `in`, remembered in `state` as the allocation
// the next review passes back (0 when it decided nothing).
std::optional<ReprovisionDecision> decideReview(const ReprovisionPolicy& policy,
                                                const ReprovisionInput& in, ReviewState& state);

}  // namespace morpheus::reprovision
