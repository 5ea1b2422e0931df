// Reservation agents: the policy that turns a definition into a proposed
// placement on a plan snapshot (docs/design/conventions.md "Shape": small policy
// interface, chosen by name, stateless and re-entrant).
//
//  - "lowcost": Morpheus §6 LowCost. Step cost c(t) = max over resources of
//    load(t)/capacity. Stages are placed in reverse chronological order; in
//    ordered interpreters stage k gets an interval ending right before stage
//    k+1's allocation whose length is proportional to its share of the
//    remaining demand (widened to everything still free when that fails).
//    Gangs go greedily, one at a time, to the cheapest eligible position
//    (ties: AgentOptions::tie_break); batches reproduce that exactly; for R_ORDER_NO_GAP
//    a gang must touch the allocation so far ([tau_cur - duration, tau_hi]),
//    which keeps the allocation contiguous and lets a skyline step stretch.
//    This is repeated for several end points; the cheapest whole allocation
//    (peak cost, then area-weighted cost, plus the alignment penalty
//    |mid(allocation) - (a+d)/2| for problematic jobs) wins.
//  - "greedy": YARN GreedyReservationAgent-style baseline: stages in reverse
//    order, each gang as late as possible, one end point (the deadline).
//
// Both only place where load + allocation fits the capacity at every step of
// the problem; periodic definitions see the max over instances (PlanningProblem).
#pragma once

#include <memory>
#include <string>

#include "common/status.h"
#include "planner/plan.h"
#include "planner/reservation.h"

namespace morpheus::planner {

// How LowCost breaks ties between gang positions of equal cost (Morpheus §6,
// "Adjusting LowCost to facilitate reprovisioning": a reservation placed right
// against its deadline leaves DRA no room to extend a late instance).
// Packing barely depends on it: against the GLPK optimum, room-leaving
// tie-breaks (earliest, centred, least total variation) land close to
// "latest"; "earliest" only looks better on a generator that clips windows
// at the end of the day, and loses as much on the same instances mirrored in
// time (docs/experiments/benchmarks.md).
// The default is chosen by deadline violations with DRA in morpheus-sim
// (docs/experiments/simulator.md): earliest leaves the most room after the
// allocation for DRA to extend a late instance.
enum class TieBreak {
  kLatest,    // the latest tied position (the original rule)
  kEarliest,  // Default: the earliest tied position
  // The tied position ending closest to, but not after, deadline -
  // slack (slack = tie_break_slack x window, rounded up to whole steps); when
  // no tied position ends that early, the earliest one. Keeps allocations late
  // (close to the data) while leaving free steps before the deadline for DRA.
  kSlack,
};
// "latest", "earliest", "slack"; INVALID_ARGUMENT naming `tie_break` otherwise.
Result<TieBreak> parseTieBreak(const std::string& name);
std::string tieBreakName(TieBreak t);

struct AgentOptions {
  // LowCost: how many end points are tried between the earliest possible end
  // and the deadline (>= 1; the deadline is always tried). Default 8.
  int end_points = 8;
  // LowCost: weight of the alignment penalty for problematic definitions, in
  // cost units per window length of |mid(allocation) - (a+d)/2|. Default 1.0.
  double alignment_penalty = 1.0;
  // LowCost: tie-break between positions of equal cost. Default kEarliest.
  TieBreak tie_break = TieBreak::kEarliest;
  // LowCost, kSlack only: the slack left before the deadline, as a fraction of
  // the reservation's window [arrival, deadline), in [0, 1). Default 0.2.
  double tie_break_slack = 0.2;
  // LowCost: place gangs in batches that reproduce one-gang-at-a-time placement
  // (fast on large requests). false: one gang per scan, the reference the
  // property tests compare against (O(gangs x window)). Default true.
  bool batch_gangs = true;
};

// Why an agent could not place a definition.
struct AgentFailure {
  int stage = -1;      // stage that could not be placed (-1: none in particular)
  std::string reason;  // one line, for the infeasibility explanation
};

class ReservationAgent {
 public:
  virtual ~ReservationAgent() = default;
  virtual std::string name() const = 0;
  // Proposes a placement of *problem.def. kInfeasible when there is none; then
  // `failure` (optional) says which stage failed. Never modifies any plan.
  virtual Result<Placement> propose(const PlanningProblem& problem,
                                    AgentFailure* failure) const = 0;
};

// "lowcost" or "greedy"; INVALID_ARGUMENT naming `agent` otherwise.
Result<std::unique_ptr<ReservationAgent>> makeAgent(const std::string& name,
                                                    const AgentOptions& options = {});

}  // namespace morpheus::planner
